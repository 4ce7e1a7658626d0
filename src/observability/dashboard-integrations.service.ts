import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { randomUUID } from 'crypto';
import { AuditRecorder } from '../audit/audit-recorder';
import { Clock } from '../common/clock';
import { ValidationFailedException } from '../common/errors';
import { OutboundPolicy } from '../common/outbound-policy';
import { applyOrder, orderByEntries, Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import { SecretBox } from '../common/secret-box';
import { slugify } from '../common/slug';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { DashboardIntegrationEntity } from './dashboard-integration.entity';
import { CreateDashboardIntegrationRequest, DashboardIntegrationResponse } from './dto/dashboard.dto';

const SORTABLE: Record<string, string> = {
  name: 'd.name',
  slug: 'd.slug',
  status: 'd.status',
  url: 'd.url',
  createdAt: 'd.created_at',
  modifiedAt: 'd.modified_at',
};

@Injectable()
export class DashboardIntegrationsService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
    private readonly secrets: SecretBox,
    private readonly outbound: OutboundPolicy,
  ) {}

  private get repo() {
    return this.txHost.tx.getRepository(DashboardIntegrationEntity);
  }

  toResponse(d: DashboardIntegrationEntity, org: OrganisationEntity): DashboardIntegrationResponse {
    return {
      createdAt: d.createdAt.toISOString(),
      modifiedAt: d.modifiedAt.toISOString(),
      deletedAt: d.deletedAt ? d.deletedAt.toISOString() : null,
      customer: org.slug,
      datasourcePrefix: d.datasourcePrefix,
      identity: d.identity,
      manageDatasources: d.manageDatasources,
      name: d.name,
      provisionUsers: d.provisionUsers,
      slug: d.slug,
      status: d.status,
      statusMessage: d.statusMessage,
      url: d.url,
    };
  }

  async list(org: OrganisationEntity, query: PageQueryDto): Promise<Page<DashboardIntegrationResponse>> {
    const req = toPageRequest(query, SORTABLE, []);
    const qb = this.repo
      .createQueryBuilder('d')
      .where('d.organisation_id = :org AND d.deleted_at IS NULL', { org: org.id })
      .offset(req.offset)
      .limit(req.size);
    applyOrder(qb, orderByEntries(req, SORTABLE, 'd.id'));
    const [rows, total] = await qb.getManyAndCount();
    return toPage(rows.map((r) => this.toResponse(r, org)), total, req, 'B');
  }

  async create(org: OrganisationEntity, body: CreateDashboardIntegrationRequest): Promise<DashboardIntegrationResponse> {
    const url = (await this.outbound.assertAllowedWhenSaved('url', body.url.trim())).toString().replace(/\/+$/, '');
    // Without a name, the dashboard's host names it (dashboards.acme.example).
    const name = body.name?.trim() ?? new URL(url).hostname;
    const slug = slugify(name);
    if (!slug) throw ValidationFailedException.forField('name', 'name must contain at least one letter or digit');
    const taken = await this.repo
      .createQueryBuilder('d')
      .where('d.organisation_id = :org AND d.slug = :slug AND d.deleted_at IS NULL', { org: org.id, slug })
      .getExists();
    if (taken)
      throw new ConflictException(`A dashboard integration with slug '${slug}' already exists in organisation '${org.slug}'; choose another name.`);
    const now = this.clock.now();
    const identity = randomUUID();
    const entity = this.repo.create({
      identity,
      organisationId: org.id,
      slug,
      name,
      url,
      apiTokenCiphertext: this.secrets.seal(body.apiToken, identity),
      datasourcePrefix: body.datasourcePrefix ?? null,
      manageDatasources: false,
      provisionUsers: false,
      status: 'PENDING',
      statusMessage: 'Waiting for the first health check.',
      checkedAt: null,
      createdAt: now,
      modifiedAt: now,
      deletedAt: null,
    });
    const saved = await this.repo.save(entity);
    this.audit.record({
      type: 'DASHBOARD_INTEGRATION_CREATED',
      organisation: { id: Number(org.id), slug: org.slug },
      referencedEntityIdentity: saved.identity,
      subject: saved.slug,
      details: {
        name: { old: null, new: saved.name },
        url: { old: null, new: saved.url },
        datasourcePrefix: { old: null, new: saved.datasourcePrefix },
        apiToken: { old: null, new: '[redacted]' },
      },
    });
    return this.toResponse(saved, org);
  }

  async delete(org: OrganisationEntity, slug: string): Promise<void> {
    const d = await this.repo
      .createQueryBuilder('d')
      .setLock('pessimistic_write')
      .where('d.organisation_id = :org AND d.slug = :slug AND d.deleted_at IS NULL', { org: org.id, slug })
      .getOne();
    if (!d) throw new NotFoundException(`Dashboard integration '${slug}' not found in organisation '${org.slug}'.`);
    const now = this.clock.now();
    await this.repo.update({ id: d.id }, { deletedAt: now, modifiedAt: now });
    this.audit.record({
      type: 'DASHBOARD_INTEGRATION_DELETED',
      organisation: { id: Number(org.id), slug: org.slug },
      referencedEntityIdentity: d.identity,
      subject: d.slug,
      details: { name: { old: d.name, new: null }, url: { old: d.url, new: null }, apiToken: { old: '[redacted]', new: null } },
    });
  }
}
