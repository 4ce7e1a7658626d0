import { TransactionHost } from '@nestjs-cls/transactional';
import { isUuid } from '../common/uuid';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { auditDiff, snapshot } from '../audit/audit-diff';
import { AuditRecorder } from '../audit/audit-recorder';
import { Clock } from '../common/clock';
import { ComputeQuery, ComputeTotals } from '../common/compute.query';
import { ValidationFailedException } from '../common/errors';
import { applyOrder, orderByEntries, Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import { slugify, slugObject } from '../common/slug';
import { AppConfig } from '../config/app-config';
import type { UserEntity } from '../identity/user.entity';
import {
  CreateOrganisationRequest,
  OrganisationResponse,
  QuotaResponse,
  UpdateOrganisationRequest,
  AdminOrganisationResponse,
  AdminUpdateOrganisationRequest,
} from './dto/organisation.dto';
import { OrganisationMemberEntity } from '../identity/organisation-member.entity';
import { OrganisationEntity, OrganisationType } from '../identity/organisation.entity';
import { OrganisationEvents } from './organisation-events';
import { checkVatNumber } from './vat';

/** Properties written to audit details (entity names; never secrets). */
const AUDITED: (keyof OrganisationEntity)[] = [
  'name',
  'slug',
  'type',
  'companyName',
  'companyAddress',
  'contactEmail',
  'billingEmail',
  'vatCode',
  'vatCodeValidated',
  'acceptedAgreements',
  'clustersPerCustomer',
  'upgradeSoakHours',
];

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

@Injectable()
export class OrganisationsService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly audit: AuditRecorder,
    private readonly compute: ComputeQuery,
    private readonly events: OrganisationEvents,
  ) {}

  private get repo() {
    return this.txHost.tx.getRepository(OrganisationEntity);
  }

  toResponse(o: OrganisationEntity): OrganisationResponse {
    return {
      acceptedTerms: o.acceptedTerms,
      acceptedTermsAt: iso(o.acceptedTermsAt),
      billingEmail: o.billingEmail,
      companyAddress: o.companyAddress,
      companyName: o.companyName,
      contactEmail: o.contactEmail,
      createdAt: o.createdAt.toISOString(),
      id: o.identity,
      identity: o.identity,
      name: o.name,
      phoneNumber: o.phoneNumber,
      restrictedToAvailableCloudProviders: o.restrictedToAvailableCloudProviders,
      slug: slugObject(o.slug),
      type: o.type,
      upgradeSoakHours: o.upgradeSoakHours ?? 24,
      vatCode: o.vatCode,
      vatCodeValidated: o.vatCodeValidated,
      vatCodeValidatedAt: iso(o.vatCodeValidatedAt),
    };
  }

  private defaultQuota(type: OrganisationType): number {
    return this.config.clusterQuotaDefaults[type];
  }

  private validVat(raw: string): string {
    const check = checkVatNumber(raw);
    if (!check.valid) {
      throw ValidationFailedException.forField(
        'vatNumber',
        `vatNumber '${raw}' is not a valid VAT number (country prefix, format and check digits are checked)`,
      );
    }
    return check.value;
  }

  async create(user: UserEntity, req: CreateOrganisationRequest): Promise<OrganisationEntity> {
    if (!user.canCreateOrganisations) {
      throw new ForbiddenException('You may not create organisations; ask a platform administrator for canCreateOrganisations.');
    }
    if (!user.platformAdmin && !this.config.selfServiceOrganisationTypes.includes(req.organisationType)) {
      throw new ForbiddenException(
        `organisationType ${req.organisationType} sets the organisation's cluster quota (clustersPerCustomer), so only a platform ` +
          `administrator may create such an organisation; choose one of ${this.config.selfServiceOrganisationTypes.join(', ') || '(none)'} ` +
          `and ask one to change the type.`,
      );
    }
    const accepted = [...new Set(req.acceptedAgreements.map((a) => a.agreementSlug))];
    const missing = this.config.requiredAgreements.filter((slug) => !accepted.includes(slug));
    if (missing.length) {
      throw ValidationFailedException.forField(
        'acceptedAgreements',
        `acceptedAgreements must include every required agreement; missing: ${missing.join(', ')}`,
      );
    }
    const slug = slugify(req.organisationName);
    if (!slug) {
      throw ValidationFailedException.forField('organisationName', 'organisationName must contain at least one letter or digit');
    }
    const vatCode = req.vatNumber !== undefined ? this.validVat(req.vatNumber) : null;
    if (await this.repo.exists({ where: { slug } })) {
      throw new ConflictException(`An organisation with slug '${slug}' already exists; choose another organisationName.`);
    }
    const now = this.clock.now();
    const org = await this.repo.save(
      this.repo.create({
        slug,
        name: req.organisationName,
        type: req.organisationType,
        companyName: req.companyName ?? null,
        companyAddress: req.companyAddress ?? null,
        contactEmail: req.contactEmail.email,
        billingEmail: null,
        phoneNumber: null,
        vatCode,
        vatCodeValidated: vatCode !== null,
        vatCodeValidatedAt: vatCode !== null ? now : null,
        acceptedTerms: true,
        acceptedTermsAt: now,
        acceptedAgreements: accepted,
        restrictedToAvailableCloudProviders: false,
        clustersPerCustomer: this.defaultQuota(req.organisationType),
        createdAt: now,
        modifiedAt: now,
      }),
    );
    await this.txHost.tx.getRepository(OrganisationMemberEntity).insert({
      organisationId: org.id,
      userId: user.id,
      role: 'OWNER',
      kubernetesRole: 'CLUSTER_ADMIN',
      joinedAt: now,
    });
    await this.events.created.run(org, now);
    // Read back so defaults written by the database (identity) are present.
    const saved = await this.repo.findOneOrFail({ where: { id: org.id } });
    this.audit.record({
      type: 'ORGANISATION_CREATED',
      organisation: { id: saved.id, slug: saved.slug },
      referencedEntityIdentity: saved.identity,
      subject: saved.slug,
      details: auditDiff(null, snapshot(saved, AUDITED)),
    });
    return saved;
  }

  /** Loads the organisation inside the request transaction, locked against concurrent changes. */
  private async lock(id: number): Promise<OrganisationEntity> {
    const org = await this.repo.findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
    if (!org) throw new NotFoundException('The organisation no longer exists.');
    return org;
  }

  /** Changes the details; `organisationType` (which sets the quota) only by a platform administrator. */
  async update(organisationId: number, req: UpdateOrganisationRequest, caller: { platformAdmin: boolean }): Promise<OrganisationEntity> {
    const org = await this.lock(organisationId);
    if (req.organisationType !== undefined && req.organisationType !== org.type && !caller.platformAdmin) {
      throw new ForbiddenException(
        `organisationType sets the organisation's cluster quota (clustersPerCustomer), so only a platform administrator may change it ` +
          `(it stays ${org.type}); ask one to change the type.`,
      );
    }
    const before = snapshot(org, AUDITED);
    const now = this.clock.now();
    if (req.organisationName !== undefined) org.name = req.organisationName;
    if (req.contactEmail !== undefined) org.contactEmail = req.contactEmail.email;
    if (req.billingEmail !== undefined) org.billingEmail = req.billingEmail === null ? null : req.billingEmail.email;
    if (req.organisationType !== undefined && req.organisationType !== org.type) {
      // The quota follows the type while it still holds the old type's default (it was never tailored).
      if (Number(org.clustersPerCustomer) === this.defaultQuota(org.type)) {
        org.clustersPerCustomer = this.defaultQuota(req.organisationType);
      }
      org.type = req.organisationType;
    }
    if (req.upgradeSoakHours !== undefined) org.upgradeSoakHours = req.upgradeSoakHours;
    if (req.vatNumber !== undefined) {
      if (req.vatNumber === null || req.vatNumber.trim() === '') {
        org.vatCode = null;
        org.vatCodeValidated = false;
        org.vatCodeValidatedAt = null;
      } else {
        const code = this.validVat(req.vatNumber);
        if (code !== org.vatCode || !org.vatCodeValidated) {
          org.vatCode = code;
          org.vatCodeValidated = true;
          org.vatCodeValidatedAt = now;
        }
      }
    }
    const details = auditDiff(before, snapshot(org, AUDITED));
    const changed = Object.keys(details);
    let saved = org;
    if (changed.length) {
      org.modifiedAt = now;
      saved = await this.repo.save(org);
    }
    this.audit.record({
      type: 'ORGANISATION_UPDATED',
      organisation: { id: saved.id, slug: saved.slug },
      referencedEntityIdentity: saved.identity,
      subject: saved.slug,
      details,
    });
    return saved;
  }

  /** Refused (409) while cloud accounts, non-deleted clusters or active observability tenants exist. */
  async delete(organisationId: number): Promise<void> {
    const org = await this.lock(organisationId);
    const [counts] = await this.txHost.tx.query(
      `SELECT (SELECT count(*) FROM cloud_accounts WHERE organisation_id = $1)::int AS "cloudAccounts",
              (SELECT count(*) FROM clusters WHERE organisation_id = $1 AND deleted_at IS NULL)::int AS "clusters",
              (SELECT count(*) FROM observability_tenants WHERE organisation_id = $1 AND deleted_at IS NULL)::int AS "tenants"`,
      [org.id],
    );
    const blockers: string[] = [];
    if (counts.cloudAccounts) blockers.push(`${counts.cloudAccounts} cloud account(s)`);
    if (counts.clusters) blockers.push(`${counts.clusters} cluster(s)`);
    if (counts.tenants) blockers.push(`${counts.tenants} active monitoring tenant(s)`);
    if (blockers.length) {
      throw new ConflictException(
        `Organisation '${org.slug}' cannot be deleted while it has ${blockers.join(', ')}; delete them first.`,
      );
    }
    await this.repo.delete({ id: org.id });
    this.audit.record({
      type: 'ORGANISATION_DELETED',
      organisation: { id: org.id, slug: org.slug },
      referencedEntityIdentity: org.identity,
      subject: org.slug,
      details: auditDiff(snapshot(org, AUDITED), null),
    });
  }

  quota(org: OrganisationEntity): QuotaResponse {
    return { clustersPerCustomer: Number(org.clustersPerCustomer) };
  }

  computeInformation(org: OrganisationEntity): Promise<ComputeTotals> {
    return this.compute.totals({ organisationId: org.id });
  }

  /** Every organisation (platform administrators). */
  async listAll(query: PageQueryDto): Promise<Page<OrganisationResponse>> {
    const sortable: Record<string, string> = { name: 'o.name', slug: 'o.slug', type: 'o.type', createdAt: 'o.createdAt' };
    const req = toPageRequest(query, sortable, [{ property: 'name', direction: 'ASC' }]);
    const qb = this.repo.createQueryBuilder('o').offset(req.offset).limit(req.size);
    applyOrder(qb, orderByEntries(req, sortable, 'o.id'));
    const [rows, total] = await qb.getManyAndCount();
    return toPage(rows.map((o) => this.toResponse(o)), total, req, 'A');
  }

  /** A platform administrator sets an organisation's type (and with it an untailored quota); answers the admin view. */
  async adminSetType(identity: string, req: AdminUpdateOrganisationRequest): Promise<AdminOrganisationResponse> {
    const o = await this.byIdentity(identity);
    await this.update(o.id, { organisationType: req.organisationType }, { platformAdmin: true });
    return this.adminView(identity);
  }

  private async byIdentity(identity: string): Promise<OrganisationEntity> {
    const o = isUuid(identity) ? await this.repo.findOne({ where: { identity } }) : null;
    if (!o) throw new NotFoundException(`Organisation '${identity}' was not found.`);
    return o;
  }

  /** The original admin client's AdminOrganisation (slug and emails as plain strings). */
  async adminView(identity: string): Promise<AdminOrganisationResponse> {
    const o = await this.byIdentity(identity);
    return {
      id: o.identity,
      identity: o.identity,
      name: o.name,
      slug: o.slug,
      type: o.type,
      vatCode: o.vatCode,
      vatCodeValidated: o.vatCodeValidated,
      vatCodeValidatedAt: iso(o.vatCodeValidatedAt),
      contactEmail: o.contactEmail,
      billingEmail: o.billingEmail,
      phoneNumber: o.phoneNumber,
      createdAt: o.createdAt.toISOString(),
      acceptedTerms: o.acceptedTerms,
      acceptedTermsAt: iso(o.acceptedTermsAt),
      restrictedToAvailableCloudProviders: o.restrictedToAvailableCloudProviders,
    };
  }
}
