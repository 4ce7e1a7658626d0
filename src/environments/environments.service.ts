import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { IsNull } from 'typeorm';
import { AuditRecorder } from '../audit/audit-recorder';
import { auditDiff, snapshot } from '../audit/audit-diff';
import type { AuditDetails } from '../audit/audit-event.entity';
import { Clock } from '../common/clock';
import { ComputeQuery, ComputeTotals } from '../common/compute.query';
import { ValidationFailedException } from '../common/errors';
import { applyOrder, orderByEntries, orderBySql, Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import { slugify, slugObject } from '../common/slug';
import type { OrganisationEntity } from '../identity/organisation.entity';
import type { OrganisationContext } from '../identity/organisation-context';
import { KubernetesRole, OrganisationMemberEntity } from '../identity/organisation-member.entity';
import {
  CreateEnvironmentRequest,
  EnvironmentMemberResponse,
  EnvironmentResponse,
  UpdateEnvironmentRequest,
} from './dto/environment.dto';
import { EnvironmentMemberEntity } from './environment-member.entity';
import { EnvironmentEntity } from './environment.entity';
import { clusterHolds } from '../common/cluster-holds';

/** Path segments under .../environments/ that are routes, not environment slugs. */
const RESERVED_SLUGS = new Set(['count', 'types']);
const AUDITED: (keyof EnvironmentEntity)[] = ['name', 'slug', 'description', 'purpose', 'type'];

const ENV_SORTABLE: Record<string, string> = {
  id: 'e.id',
  name: 'e.name',
  slug: 'e.slug',
  type: 'e.type',
  createdAt: 'e.createdAt',
  modifiedAt: 'e.modifiedAt',
};
const MEMBER_SORTABLE: Record<string, string> = {
  email: 'u.email',
  createdAt: 'COALESCE(em.created_at, om.joined_at)',
  kubernetesRole: 'COALESCE(em.kubernetes_role, om.kubernetes_role)',
  memberIdentity: 'om.identity',
};

@Injectable()
export class EnvironmentsService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly compute: ComputeQuery,
    private readonly audit: AuditRecorder,
  ) {}

  private get repo() {
    return this.txHost.tx.getRepository(EnvironmentEntity);
  }

  toResponse(env: EnvironmentEntity, org: OrganisationEntity, totals: ComputeTotals | null = null): EnvironmentResponse {
    return {
      createdAt: env.createdAt.toISOString(),
      deletedAt: env.deletedAt ? env.deletedAt.toISOString() : null,
      description: env.description,
      id: Number(env.id),
      identity: env.identity,
      modifiedAt: env.modifiedAt.toISOString(),
      name: env.name,
      organisationSlug: slugObject(org.slug),
      purpose: env.purpose,
      slug: slugObject(env.slug),
      totalClusters: totals ? totals.totalClusters : null,
      totalCpu: totals ? totals.totalCpu : null,
      totalMemory: totals ? totals.totalMemory : null,
      type: env.type,
    };
  }

  /** The non-deleted environment with this slug, or 404. `lock` takes a row lock for the transaction. */
  async find(org: OrganisationEntity, slug: string, lock = false): Promise<EnvironmentEntity> {
    const qb = this.repo
      .createQueryBuilder('e')
      .where('e.organisationId = :org AND e.slug = :slug AND e.deletedAt IS NULL', { org: org.id, slug });
    if (lock) qb.setLock('pessimistic_write');
    const env = await qb.getOne();
    if (!env) throw new NotFoundException(`Environment '${slug}' not found in organisation '${org.slug}'.`);
    return env;
  }

  async list(org: OrganisationEntity, query: PageQueryDto, showCompute: boolean): Promise<Page<EnvironmentResponse>> {
    const req = toPageRequest(query, ENV_SORTABLE);
    const qb = this.repo
      .createQueryBuilder('e')
      .where('e.organisationId = :org AND e.deletedAt IS NULL', { org: org.id })
      .skip(req.offset)
      .take(req.size);
    applyOrder(qb, orderByEntries(req, ENV_SORTABLE, 'e.id'));
    const [rows, total] = await qb.getManyAndCount();
    const totals = showCompute ? await this.compute.totalsByEnvironment(rows.map((r) => Number(r.id))) : null;
    return toPage(
      rows.map((r) => this.toResponse(r, org, totals ? (totals.get(Number(r.id)) ?? null) : null)),
      total,
      req,
      'A',
    );
  }

  async count(org: OrganisationEntity): Promise<{ count: number }> {
    const count = await this.repo.count({ where: { organisationId: org.id, deletedAt: IsNull() } });
    return { count };
  }

  async get(org: OrganisationEntity, slug: string, showCompute: boolean): Promise<EnvironmentResponse> {
    const env = await this.find(org, slug);
    const totals = showCompute ? await this.compute.totals({ organisationId: org.id, environmentId: Number(env.id) }) : null;
    return this.toResponse(env, org, totals);
  }

  async create(org: OrganisationEntity, req: CreateEnvironmentRequest): Promise<EnvironmentResponse> {
    const slug = slugify(req.name);
    if (!slug) throw ValidationFailedException.forField('name', 'name must contain at least one letter or digit');
    if (RESERVED_SLUGS.has(slug))
      throw ValidationFailedException.forField('name', `name must not be '${slug}': that word is reserved in environment paths`);
    const taken = await this.repo.exists({ where: { organisationId: org.id, slug, deletedAt: IsNull() } });
    if (taken)
      throw new ConflictException(
        `An environment with the slug '${slug}' already exists in organisation '${org.slug}'; choose another name.`,
      );
    const now = this.clock.now();
    const env = await this.repo.save(
      this.repo.create({
        organisationId: org.id,
        slug,
        name: req.name,
        description: req.description ?? null,
        purpose: req.purpose ?? null,
        type: req.type ?? null,
        createdAt: now,
        modifiedAt: now,
        deletedAt: null,
      }),
    );
    this.recordAudit('ENVIRONMENT_CREATED', org, env, env.identity, env.slug, auditDiff(null, snapshot(env, AUDITED)));
    return this.toResponse(env, org);
  }

  async update(org: OrganisationEntity, slug: string, req: UpdateEnvironmentRequest): Promise<EnvironmentResponse> {
    const env = await this.find(org, slug, true);
    const before = snapshot(env, AUDITED);
    if (req.name !== undefined) env.name = req.name;
    if (req.description !== undefined) env.description = req.description;
    if (req.purpose !== undefined) env.purpose = req.purpose;
    if (req.type !== undefined) env.type = req.type;
    const details = auditDiff(before, snapshot(env, AUDITED));
    if (Object.keys(details).length) {
      env.modifiedAt = this.clock.now();
      await this.repo.save(env);
    }
    this.recordAudit('ENVIRONMENT_UPDATED', org, env, env.identity, env.slug, details);
    return this.toResponse(env, org);
  }

  /** Soft delete (deletedAt), refused while the environment holds clusters whose deletion was not requested (ADR 0171). */
  async delete(org: OrganisationEntity, slug: string): Promise<void> {
    const env = await this.find(org, slug, true);
    const [{ n }] = await this.txHost.tx.query(
      `SELECT count(*)::int AS n FROM clusters WHERE environment_id = $1 AND ${clusterHolds()}`,
      [env.id],
    );
    if (n > 0)
      throw new ConflictException(
        `Environment '${env.slug}' still holds ${n} cluster${n === 1 ? '' : 's'}; delete ${n === 1 ? 'it' : 'them'} before deleting the environment.`,
      );
    const before = snapshot(env, AUDITED);
    const now = this.clock.now();
    env.deletedAt = now;
    env.modifiedAt = now;
    await this.repo.save(env);
    this.recordAudit('ENVIRONMENT_DELETED', org, env, env.identity, env.slug, auditDiff(before, null));
  }

  // ------------------------------------------------------------------------------ members

  private async memberRows(
    orgId: number,
    envId: number,
    opts: { orderBy?: string; limit?: number; offset?: number } = {},
  ): Promise<EnvironmentMemberResponse[]> {
    const rows: { memberIdentity: string; email: string; kubernetesRole: KubernetesRole; createdAt: Date }[] =
      await this.txHost.tx.query(
        `SELECT om.identity AS "memberIdentity", u.email,
                COALESCE(em.kubernetes_role, om.kubernetes_role) AS "kubernetesRole",
                COALESCE(em.created_at, om.joined_at) AS "createdAt"
           FROM organisation_members om
           JOIN users u ON u.id = om.user_id
           LEFT JOIN environment_members em ON em.member_id = om.id AND em.environment_id = $2
          WHERE om.organisation_id = $1
          ORDER BY ${opts.orderBy ?? 'om.id ASC'}
          ${opts.limit !== undefined ? `LIMIT ${Number(opts.limit)} OFFSET ${Number(opts.offset ?? 0)}` : ''}`,
        [orgId, envId],
      );
    return rows.map((r) => ({
      createdAt: new Date(r.createdAt).toISOString(),
      email: r.email,
      kubernetesRole: r.kubernetesRole,
      memberIdentity: r.memberIdentity,
    }));
  }

  /** Every organisation member with the kubernetesRole that applies in this environment. */
  async members(org: OrganisationEntity, slug: string, query: PageQueryDto): Promise<Page<EnvironmentMemberResponse>> {
    const env = await this.find(org, slug);
    const req = toPageRequest(query, MEMBER_SORTABLE);
    const orderBy = orderBySql(req, MEMBER_SORTABLE, 'om.id');
    const content = await this.memberRows(org.id, Number(env.id), { orderBy, limit: req.size, offset: req.offset });
    const [{ n }] = await this.txHost.tx.query('SELECT count(*)::int AS n FROM organisation_members WHERE organisation_id = $1', [
      org.id,
    ]);
    return toPage(content, n, req, 'A');
  }

  private async findMember(org: OrganisationEntity, memberIdentity: string): Promise<OrganisationMemberEntity> {
    const member = await this.txHost.tx
      .getRepository(OrganisationMemberEntity)
      .findOne({ where: { organisationId: org.id, identity: memberIdentity } });
    if (!member) throw new NotFoundException(`Member ${memberIdentity} not found in organisation '${org.slug}'.`);
    return member;
  }

  /** An OWNER's access, environment overrides included, is changed by OWNERs only (like their role). */
  private assertMayChangeOverride(ctx: OrganisationContext, member: { role: string }): void {
    if (member.role === 'OWNER' && ctx.role !== 'OWNER') {
      throw new ForbiddenException("Only an OWNER may change an OWNER's access, including environment overrides.");
    }
  }

  /** Adds or changes the member's environment override; answers the environment's member list. */
  async setMember(
    ctx: OrganisationContext,
    slug: string,
    memberIdentity: string,
    kubernetesRole: KubernetesRole,
  ): Promise<EnvironmentMemberResponse[]> {
    const org = ctx.organisation;
    const env = await this.find(org, slug, true);
    const member = await this.findMember(org, memberIdentity);
    this.assertMayChangeOverride(ctx, member);
    const repo = this.txHost.tx.getRepository(EnvironmentMemberEntity);
    const existing = await repo.findOne({ where: { environmentId: env.id, memberId: member.id } });
    const oldRole = existing?.kubernetesRole ?? member.kubernetesRole;
    const now = this.clock.now();
    if (existing) {
      if (existing.kubernetesRole !== kubernetesRole) {
        existing.kubernetesRole = kubernetesRole;
        existing.modifiedAt = now;
        await repo.save(existing);
      }
    } else {
      await repo.insert({ environmentId: env.id, memberId: member.id, kubernetesRole, createdAt: now, modifiedAt: now });
    }
    // Only what changed is recorded: re-posting the same role changes nothing and leaves no audit row, activity
    // event or webhook event (an update with no details is not written).
    const details: AuditDetails = {};
    if (oldRole !== kubernetesRole) details.kubernetesRole = { old: oldRole, new: kubernetesRole };
    if (!existing) details.override = { old: null, new: kubernetesRole };
    const email = await this.memberEmail(member);
    this.recordAudit('ENVIRONMENT_MEMBER_UPDATED', org, env, member.identity, `${email} in ${env.slug}`, details);
    return this.memberRows(org.id, Number(env.id));
  }

  /** Removes the override; the member's organisation kubernetesRole applies again. */
  async removeMember(ctx: OrganisationContext, slug: string, memberIdentity: string): Promise<void> {
    const org = ctx.organisation;
    const env = await this.find(org, slug, true);
    const member = await this.findMember(org, memberIdentity);
    this.assertMayChangeOverride(ctx, member);
    const repo = this.txHost.tx.getRepository(EnvironmentMemberEntity);
    const existing = await repo.findOne({ where: { environmentId: env.id, memberId: member.id } });
    if (!existing)
      throw new NotFoundException(
        `Member ${memberIdentity} has no role of its own in environment '${env.slug}'; the organisation role already applies.`,
      );
    await repo.delete({ id: existing.id });
    const email = await this.memberEmail(member);
    this.recordAudit('ENVIRONMENT_MEMBER_REMOVED', org, env, member.identity, `${email} from ${env.slug}`, {
      kubernetesRole: { old: existing.kubernetesRole, new: member.kubernetesRole },
      override: { old: existing.kubernetesRole, new: null },
    });
  }

  /** One audit entry (and so one activity event) for a change to an environment or its members. */
  private recordAudit(
    type: string,
    org: OrganisationEntity,
    env: EnvironmentEntity,
    referencedEntityIdentity: string,
    subject: string,
    details: AuditDetails,
  ): void {
    this.audit.record({
      type,
      organisation: { id: org.id, slug: org.slug },
      environment: { id: Number(env.id), slug: env.slug },
      referencedEntityIdentity,
      subject,
      details,
    });
  }

  private async memberEmail(member: OrganisationMemberEntity): Promise<string> {
    const [row] = await this.txHost.tx.query('SELECT email FROM users WHERE id = $1', [member.userId]);
    return row?.email ?? member.identity;
  }
}
