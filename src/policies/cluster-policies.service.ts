import { TransactionHost } from '@nestjs-cls/transactional';
import { newIdentity } from '../common/pinned-identities';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { auditDiff } from '../audit/audit-diff';
import { AuditRecorder } from '../audit/audit-recorder';
import { Clock } from '../common/clock';
import { FieldErrorDto, ValidationFailedException } from '../common/errors';
import { orderBySql, Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import { isUuid } from '../common/uuid';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { ClusterPolicyEntity } from './cluster-policy.entity';
import {
  ClusterPolicyResponse,
  CreateClusterPolicyRequest,
  MAX_PLATFORM_POLICIES,
  MAX_POLICIES_PER_ORGANISATION,
  UpdateClusterPolicyRequest,
} from './dto/cluster-policy.dto';
import { PolicyEvaluator } from './policy-evaluator';
import type { ExecutorAdmission } from '../executor/executor';

/** The sort allow-list of the policy lists (the controllers' paging declaration names its keys). */
export const POLICY_SORTABLE: Record<string, string> = { name: 'p.name', action: 'p.action', createdAt: 'p.created_at', modifiedAt: 'p.modified_at', enabled: 'p.enabled' };
const AUDITED = ['name', 'description', 'expression', 'message', 'messageExpression', 'action', 'failurePolicy', 'environments', 'environmentTypes', 'operations', 'enabled'] as const;

/** Columns of cluster_policies with the entity's property names. */
export const POLICY_SELECT = `p.id, p.identity, p.organisation_id AS "organisationId", p.name, p.description, p.expression, p.message,
  p.message_expression AS "messageExpression", p.action, p.failure_policy AS "failurePolicy", p.environments, p.environment_types AS "environmentTypes", p.operations, p.enabled,
  p.created_by AS "createdBy", p.created_at AS "createdAt", p.modified_at AS "modifiedAt"`;

/** What a policy body is, once defaults are applied. */
export type PolicyBody = Pick<ClusterPolicyEntity, (typeof AUDITED)[number]>;

/**
 * Organisation policies (org non-null) and platform policies (org null): CRUD, write-time checks, audit.
 * The organisation's lists show the platform policies too (read-only there).
 */
@Injectable()
export class ClusterPoliciesService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
    private readonly evaluator: PolicyEvaluator,
  ) {}

  async list(org: OrganisationEntity | null, query: PageQueryDto): Promise<Page<ClusterPolicyResponse>> {
    const req = toPageRequest(query, POLICY_SORTABLE);
    // Platform policies first (they are evaluated first), then the page's order.
    const where = org ? '(p.organisation_id = $1 OR p.organisation_id IS NULL)' : 'p.organisation_id IS NULL';
    const params = org ? [org.id] : [];
    const order = orderBySql(req, POLICY_SORTABLE, 'p.id');
    const rows: ClusterPolicyEntity[] = await this.txHost.tx.query(
      `SELECT ${POLICY_SELECT} FROM cluster_policies p WHERE ${where}
        ORDER BY (p.organisation_id IS NOT NULL), ${order} LIMIT ${req.size} OFFSET ${req.offset}`,
      params,
    );
    const [{ n }] = await this.txHost.tx.query(`SELECT count(*)::int AS n FROM cluster_policies p WHERE ${where}`, params);
    // Lists the interface does not define answer page form A.
    return toPage(rows.map(toResponse), n, req, 'A');
  }

  async get(org: OrganisationEntity | null, identity: string): Promise<ClusterPolicyResponse> {
    return toResponse(await this.find(org, identity));
  }

  /**
   * The write-time check of a body: CEL syntax and types (with positions), value sizes and cost (on the executor,
   * queued under the organisation: 429 when it has too many such tasks waiting), scope. 400 on any error.
   */
  async checkBody(org: OrganisationEntity | null, body: PolicyBody, expressions = true, admission?: ExecutorAdmission): Promise<void> {
    const errors: FieldErrorDto[] = expressions ? await this.evaluator.check(org?.id ?? null, body, admission) : [];
    if (body.environments?.length && body.environmentTypes?.length) {
      errors.push({ field: 'environments', message: 'environments and environmentTypes cannot both be set; use one of them' });
    }
    if (body.environments?.length) {
      if (!org) {
        errors.push({ field: 'environments', message: 'platform policies apply to every organisation: scope them with environmentTypes, not environments' });
      } else {
        const found: { slug: string }[] = await this.txHost.tx.query(
          `SELECT slug FROM environments WHERE organisation_id = $1 AND slug = ANY($2::text[]) AND deleted_at IS NULL`,
          [org.id, body.environments],
        );
        const missing = body.environments.filter((s) => !found.some((f) => f.slug === s));
        if (missing.length) errors.push({ field: 'environments', message: `environments: no environment ${missing.map((m) => `'${m}'`).join(', ')} in organisation '${org.slug}'` });
      }
    }
    if (errors.length) throw new ValidationFailedException(errors);
  }

  async create(org: OrganisationEntity | null, req: CreateClusterPolicyRequest, createdBy: string): Promise<ClusterPolicyResponse> {
    const body = policyBody(req);
    await this.checkBody(org, body);
    // Serialises creates of one owner so the limit holds under concurrency.
    if (org) await this.txHost.tx.query(`SELECT id FROM organisations WHERE id = $1 FOR UPDATE`, [org.id]);
    else await this.txHost.tx.query(`SELECT pg_advisory_xact_lock(hashtext('cluster_policies:platform'))`);
    const [{ n }] = await this.txHost.tx.query(
      `SELECT count(*)::int AS n FROM cluster_policies WHERE organisation_id ${org ? '= $1' : 'IS NULL'}`,
      org ? [org.id] : [],
    );
    const max = org ? MAX_POLICIES_PER_ORGANISATION : MAX_PLATFORM_POLICIES;
    if (n >= max) {
      throw new ConflictException(
        org ? `Organisation '${org.slug}' already has ${max} cluster policies; delete one first.` : `There are already ${max} platform policies; delete one first.`,
      );
    }
    await this.assertNameFree(org, body.name);
    const now = this.clock.now();
    const [row]: ClusterPolicyEntity[] = await this.txHost.tx.query(
      `INSERT INTO cluster_policies AS p (organisation_id, name, description, expression, message, message_expression, action, environments,
         environment_types, enabled, created_by, created_at, modified_at, identity, failure_policy, operations)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13, $14, $15) RETURNING ${POLICY_SELECT}`,
      [org?.id ?? null, body.name, body.description, body.expression, body.message, body.messageExpression, body.action, body.environments, body.environmentTypes, body.enabled, createdBy, now, newIdentity('cluster_policies'), body.failurePolicy, body.operations],
    );
    this.record('CLUSTER_POLICY_CREATED', org, row, auditDiff(null, audited(row)));
    return toResponse(row);
  }

  async update(org: OrganisationEntity | null, identity: string, req: UpdateClusterPolicyRequest): Promise<ClusterPolicyResponse> {
    const before = await this.find(org, identity, true);
    this.assertOwned(org, before);
    const next: PolicyBody = {
      name: req.name ?? before.name,
      description: req.description ?? before.description,
      expression: req.expression ?? before.expression,
      message: req.message ?? before.message,
      messageExpression: req.messageExpression === undefined ? before.messageExpression : req.messageExpression,
      action: req.action ?? before.action,
      failurePolicy: req.failurePolicy ?? before.failurePolicy,
      environments: req.environments === undefined ? before.environments : req.environments?.length ? req.environments : null,
      environmentTypes: req.environmentTypes === undefined ? before.environmentTypes : req.environmentTypes?.length ? req.environmentTypes : null,
      operations: req.operations === undefined ? before.operations : req.operations?.length ? req.operations : null,
      enabled: req.enabled ?? before.enabled,
    };
    // Setting one scope replaces the other.
    if (req.environments?.length && req.environmentTypes === undefined) next.environmentTypes = null;
    if (req.environmentTypes?.length && req.environments === undefined) next.environments = null;
    const details = auditDiff(audited(before), next);
    if (Object.keys(details).length === 0) {
      this.record('CLUSTER_POLICY_UPDATED', org, before, {}); // a no-op update leaves no audit row
      return toResponse(before);
    }
    // Expressions are checked again only when they change: a policy saved under older limits can still be
    // disabled, renamed or rescoped (its evaluation is bounded at run time either way).
    await this.checkBody(org, next, next.expression !== before.expression || next.messageExpression !== before.messageExpression);
    if (next.name !== before.name) await this.assertNameFree(org, next.name);
    const [[row]]: [ClusterPolicyEntity[], number] = await this.txHost.tx.query(
      `UPDATE cluster_policies AS p SET name = $2, description = $3, expression = $4, message = $5, message_expression = $6, action = $7,
              environments = $8, environment_types = $9, enabled = $10, modified_at = $11, failure_policy = $12, operations = $13
        WHERE id = $1 RETURNING ${POLICY_SELECT}`,
      [before.id, next.name, next.description, next.expression, next.message, next.messageExpression, next.action, next.environments, next.environmentTypes, next.enabled, this.clock.now(), next.failurePolicy, next.operations],
    );
    this.record('CLUSTER_POLICY_UPDATED', org, row, details);
    return toResponse(row);
  }

  async remove(org: OrganisationEntity | null, identity: string): Promise<void> {
    const row = await this.find(org, identity, true);
    this.assertOwned(org, row);
    await this.txHost.tx.query(`DELETE FROM cluster_policies WHERE id = $1`, [row.id]);
    this.record('CLUSTER_POLICY_DELETED', org, row, auditDiff(audited(row), null));
  }

  /** A policy the caller may see: the organisation's own or a platform policy (org null: platform only). */
  async find(org: OrganisationEntity | null, identity: string, lock = false): Promise<ClusterPolicyEntity> {
    const where = org ? '(p.organisation_id = $2 OR p.organisation_id IS NULL)' : 'p.organisation_id IS NULL';
    const [row]: ClusterPolicyEntity[] = isUuid(identity)
      ? await this.txHost.tx.query(`SELECT ${POLICY_SELECT} FROM cluster_policies p WHERE p.identity = $1 AND ${where}${lock ? ' FOR UPDATE' : ''}`, org ? [identity, org.id] : [identity])
      : [];
    if (!row) {
      throw new NotFoundException(org ? `Cluster policy '${identity}' was not found in organisation '${org.slug}'.` : `Platform policy '${identity}' was not found.`);
    }
    return row;
  }

  private assertOwned(org: OrganisationEntity | null, row: ClusterPolicyEntity): void {
    if (org && row.organisationId === null) {
      throw new ForbiddenException(`'${row.name}' is a platform policy; only platform administrators change it (under /admin/v1/cluster-policies).`);
    }
  }

  private async assertNameFree(org: OrganisationEntity | null, name: string): Promise<void> {
    const [taken] = await this.txHost.tx.query(
      `SELECT 1 FROM cluster_policies WHERE name = $1 AND organisation_id ${org ? '= $2' : 'IS NULL'}`,
      org ? [name, org.id] : [name],
    );
    if (taken) {
      throw new ConflictException(
        org ? `A cluster policy named '${name}' already exists in organisation '${org.slug}'; choose another name.` : `A platform policy named '${name}' already exists; choose another name.`,
      );
    }
  }

  private record(type: string, org: OrganisationEntity | null, row: ClusterPolicyEntity, details: ReturnType<typeof auditDiff>): void {
    this.audit.record({
      type,
      organisation: org ? { id: org.id, slug: org.slug } : null,
      referencedEntityIdentity: row.identity,
      subject: org ? row.name : `platform policy ${row.name}`,
      details,
    });
  }
}

/** A create (or evaluate) request with its defaults applied; an empty scope list means no scope. */
export function policyBody(req: CreateClusterPolicyRequest): PolicyBody {
  return {
    name: req.name,
    description: req.description ?? '',
    expression: req.expression,
    message: req.message,
    messageExpression: req.messageExpression ?? null,
    action: req.action,
    failurePolicy: req.failurePolicy ?? 'Fail',
    environments: req.environments?.length ? req.environments : null,
    environmentTypes: req.environmentTypes?.length ? req.environmentTypes : null,
    operations: req.operations?.length ? req.operations : null,
    enabled: req.enabled ?? true,
  };
}

function audited(p: PolicyBody): Record<string, unknown> {
  return Object.fromEntries(AUDITED.map((k) => [k, p[k]]));
}

export function toResponse(p: ClusterPolicyEntity): ClusterPolicyResponse {
  return {
    identity: p.identity,
    scope: p.organisationId === null ? 'PLATFORM' : 'ORGANISATION',
    name: p.name,
    description: p.description,
    expression: p.expression,
    message: p.message,
    messageExpression: p.messageExpression,
    action: p.action,
    failurePolicy: p.failurePolicy,
    environments: p.environments,
    environmentTypes: p.environmentTypes,
    operations: p.operations,
    enabled: p.enabled,
    createdBy: p.createdBy,
    createdAt: new Date(p.createdAt).toISOString(),
    modifiedAt: new Date(p.modifiedAt).toISOString(),
  };
}
