import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import type { AuditDetails } from '../audit/audit-event.entity';
import type { AuditEntry } from '../audit/audit-recorder';
import { AuditRecorder } from '../audit/audit-recorder';
import { AuditService } from '../audit/audit.service';
import { currentPrincipal, SYSTEM_ACTOR } from '../identity/principal';
import { ValidationFailedException } from '../common/errors';
import { ExecutorQueueFullException, ExecutorTaskTooExpensiveException } from '../executor/executor';
import { addResponseWarnings } from '../common/field-validation.pipe';
import type { ClusterPolicyEntity, PolicyAction } from './cluster-policy.entity';
import { POLICY_SELECT } from './cluster-policies.service';
import { PolicyEvaluator, PolicyResult } from './policy-evaluator';
import type { ClusterRow } from '../clusters/cluster-read';
import type { ClusterChangeGate } from '../clusters/cluster-change-gate';
import { EnvironmentFacts, PolicyInputs } from './policy-inputs';
import { principalPolicyUser } from './policy-user';
import type { PolicyClusterObject, PolicyOperation, PolicyResource, PolicyUserVariable } from './policy-variables';

/** A cluster being deleted (asked for, under way or done): no policy applies to it any more. */
const beingDeleted = (row: { desiredStatus: string | null; status: string }): boolean =>
  row.desiredStatus === 'deleting' || row.status === 'deleting' || row.status === 'deleted';

/** The cluster before a change, taken before anything is written (see `before`). */
export interface PolicySnapshot {
  clusterId: number;
  /** What a verdict names the cluster by (neither changes in a change of the cluster). */
  slug: string;
  identity: string;
  organisationId: number;
  /** null when no policy is enabled for the organisation (nothing to evaluate, nothing read). */
  oldObject: PolicyClusterObject | null;
  /** The cluster is already being deleted: policies never block the system from finishing that. */
  deleting: boolean;
  /** The enabled policies of the organisation, read once in the change's transaction (its check reuses them). */
  policies: ClusterPolicyEntity[];
}

/** One change of a cluster to evaluate. */
export interface ClusterChange {
  clusterId: number;
  operation: PolicyOperation;
  resource: PolicyResource;
  /**
   * The snapshot taken before the change was written (`before`); null for CREATE; undefined when the change is
   * not written yet (the cluster as it is now is the old object, and `overrides` say what the change sets).
   */
  before?: PolicySnapshot | null;
  /** Fields of the cluster the change sets that are not in its row (e.g. a scheduled upgrade's version). */
  overrides?: Partial<PolicyClusterObject>;
  /** Who makes the change; by default the request's caller, or `system` in background work. */
  user?: PolicyUserVariable;
}

export interface PolicyFinding {
  policy: { identity: string; name: string; scope: 'PLATFORM' | 'ORGANISATION'; action: PolicyAction };
  message: string;
}

/** A policy whose expression could not be evaluated, with failurePolicy Ignore: the change passes it. */
export interface IgnoredPolicyFailure {
  policy: PolicyFinding['policy'];
  error: string;
}

/** What the policies say about a change. `denied` non-empty means: do not make it. */
export interface PolicyVerdict {
  skipped: boolean;
  denied: PolicyFinding[];
  warned: PolicyFinding[];
  audited: PolicyFinding[];
  /** Policies that could not be evaluated and whose failurePolicy is Ignore (recorded, not enforced). */
  ignored: IgnoredPolicyFailure[];
  cluster: { id: number; slug: string; identity: string } | null;
  environment: { id: number; slug: string } | null;
  organisation: { id: number; slug: string } | null;
  operation: PolicyOperation;
  resource: PolicyResource;
}

export const SYSTEM_POLICY_USER: PolicyUserVariable = { identity: null, username: SYSTEM_ACTOR.username, platformAdmin: false };

/** Whether a policy's scope covers an environment (no scope: every environment). */
export function policyCovers(p: Pick<ClusterPolicyEntity, 'environments' | 'environmentTypes'>, env: Pick<EnvironmentFacts, 'slug' | 'type'>): boolean {
  if (p.environments?.length) return p.environments.includes(env.slug);
  if (p.environmentTypes?.length) return env.type !== null && p.environmentTypes.includes(env.type);
  return true;
}

export const policyLabel = (f: Pick<PolicyFinding, 'policy'>) => `${f.policy.scope === 'PLATFORM' ? 'platform policy' : 'policy'} ${f.policy.name}`;

/**
 * Evaluates the platform policies, then the organisation's, on every change of a cluster (docs/policies.md): the
 * clusters module's ClusterChangeGate (bound in src/app.module.ts).
 * `enforce` is the request path (Deny: 400 and the transaction rolls back; Warn: Warning headers; Audit:
 * CLUSTER_POLICY_VIOLATED); `check` only answers the verdict, for background work (the scheduler) that decides
 * itself what a Deny means, and `recordInBackground` writes its Warn/Audit findings with the system actor.
 */
@Injectable()
export class ClusterPolicyEnforcer implements ClusterChangeGate<ClusterPolicyEntity[], PolicySnapshot> {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly cls: ClsService,
    private readonly inputs: PolicyInputs,
    private readonly evaluator: PolicyEvaluator,
    private readonly recorder: AuditRecorder,
    private readonly audit: AuditService,
  ) {}

  /**
   * The cluster as it is, before a change is written; cheap when the organisation has no enabled policy. Given the
   * cluster's row (read under the change's row lock, all of CLUSTER_SELECT), it is not read again; given `enabled`
   * (`enabledPolicies` of the cluster's organisation, read earlier in the same transaction), neither are the policies.
   */
  async before(cluster: number | ClusterRow, enabled?: ClusterPolicyEntity[]): Promise<PolicySnapshot> {
    const row = typeof cluster === 'number' ? (await this.inputs.clusterRows([cluster]))[0] : cluster;
    const clusterId = Number(row.id);
    const organisationId = Number(row.organisationId);
    const deleting = beingDeleted(row);
    const policies = deleting ? [] : (enabled ?? (await this.enabledPolicies(organisationId)));
    const oldObject = policies.length ? (await this.inputs.objects([row]))[0] : null;
    return { clusterId, slug: row.slug, identity: row.identity, organisationId, deleting, policies, oldObject };
  }

  /** Evaluates a change and answers the verdict; writes nothing. Usable inside any transaction. */
  async check(change: ClusterChange): Promise<PolicyVerdict> {
    const verdict: PolicyVerdict = {
      skipped: false,
      denied: [],
      warned: [],
      audited: [],
      ignored: [],
      cluster: null,
      environment: null,
      organisation: null,
      operation: change.operation,
      resource: change.resource,
    };
    const snap = change.before;
    // Nothing to evaluate, known from the snapshot: the cluster is not read again (a PATCH without policies stays lean).
    if (snap && (snap.deleting || !snap.policies.length)) {
      return { ...verdict, skipped: true, cluster: { id: snap.clusterId, slug: snap.slug, identity: snap.identity } };
    }
    const [row] = await this.inputs.clusterRows([change.clusterId]);
    if (!row) return { ...verdict, skipped: true };
    const deleting = change.before ? change.before.deleting : beingDeleted(row);
    const policies = deleting ? [] : (change.before?.policies ?? (await this.enabledPolicies(Number(row.organisationId))));
    verdict.cluster = { id: Number(row.id), slug: row.slug, identity: row.identity };
    // Nothing to evaluate: the environment and organisation are not read (a PATCH without policies stays lean).
    if (!policies.length) return { ...verdict, skipped: true };
    const envs = await this.inputs.environments([Number(row.environmentId)]);
    const env = envs.get(Number(row.environmentId))!;
    // A policy applies to the operations it names (every one when it names none).
    const applicable = policies.filter((p) => policyCovers(p, env) && (!p.operations?.length || p.operations.includes(change.operation)));
    const org = await this.inputs.organisation(Number(row.organisationId));
    Object.assign(verdict, {
      skipped: deleting || applicable.length === 0,
      cluster: { id: Number(row.id), slug: row.slug, identity: row.identity },
      environment: { id: env.id, slug: env.slug },
      organisation: { id: org.id, slug: org.slugValue },
    });
    if (verdict.skipped) return verdict;
    const current = (await this.inputs.objects([row]))[0];
    const object = change.overrides ? { ...current, ...change.overrides } : current;
    const oldObject = change.before === null ? null : change.before === undefined ? current : (change.before.oldObject ?? current);
    const { slugValue: _s, id: _i, ...organisation } = org;
    void _s;
    void _i;
    const input = {
      object,
      oldObject,
      environment: env.variable,
      organisation,
      request: { operation: change.operation, resource: change.resource, user: change.user ?? this.caller() },
    };
    let results: PolicyResult[];
    try {
      [results] = await this.evaluator.evaluate(Number(row.organisationId), applicable, [input]);
    } catch (e) {
      // The executor stopped the evaluation (its deadline, its worker's heap): no policy of the change has an
      // answer, so each follows its failurePolicy. A full queue (429) or shutdown (503) is the caller's answer.
      if (!(e instanceof ExecutorTaskTooExpensiveException)) throw e;
      const error = `the evaluation was stopped: ${e.message}`;
      results = applicable.map((p) => ({ passed: false, message: `${p.message} (${error})`, error }));
    }
    applicable.forEach((p, i) => {
      const r = results[i];
      if (r.passed) return;
      const policy = { identity: p.identity, name: p.name, scope: p.organisationId === null ? ('PLATFORM' as const) : ('ORGANISATION' as const), action: p.action };
      // failurePolicy Ignore: an expression that could not be evaluated does not hold the change.
      if (r.error !== null && p.failurePolicy === 'Ignore') {
        verdict.ignored.push({ policy, error: r.error });
        return;
      }
      const finding: PolicyFinding = { policy, message: r.message ?? p.message };
      (p.action === 'Deny' ? verdict.denied : p.action === 'Warn' ? verdict.warned : verdict.audited).push(finding);
    });
    return verdict;
  }

  /**
   * `check` for background work (the scheduler): null when the executor did not take the evaluation (the
   * organisation's queue is full, e.g. while its members run many dry-runs), so the caller leaves the cluster for
   * a later pass instead of deciding without the policies.
   */
  async checkInBackground(change: ClusterChange): Promise<PolicyVerdict | null> {
    try {
      return await this.check(change);
    } catch (e) {
      if (e instanceof ExecutorQueueFullException) return null;
      throw e;
    }
  }

  /**
   * The request path: evaluates the change; on Deny throws a 400 naming each failing policy (the request's
   * transaction rolls back, so nothing is written); Warn adds `Warning: 299` headers; Audit records
   * CLUSTER_POLICY_VIOLATED (audit row, activity and webhook event) with the change.
   */
  async enforce(change: ClusterChange): Promise<PolicyVerdict> {
    const verdict = await this.check(change);
    if (verdict.denied.length) {
      const n = verdict.denied.length;
      throw new ValidationFailedException(
        verdict.denied.map((f) => ({ field: f.policy.scope === 'PLATFORM' ? `platformPolicies.${f.policy.name}` : `policies.${f.policy.name}`, message: `${policyLabel(f)}: ${f.message}` })),
        `The change was denied by ${n} cluster ${n === 1 ? 'policy' : 'policies'}: ${verdict.denied.map((f) => `${policyLabel(f)}: ${f.message}`).join('; ')}`,
      );
    }
    addResponseWarnings(verdict.warned.map((f) => `${policyLabel(f)}: ${f.message}`));
    for (const f of verdict.audited) this.recorder.record(violationEntry(verdict, f, this.caller().username));
    for (const f of verdict.ignored) this.recorder.record(evaluationFailedEntry(verdict, f, this.caller().username));
    return verdict;
  }

  /**
   * Background work: writes CLUSTER_POLICY_VIOLATED for the Warn and Audit findings, and
   * CLUSTER_POLICY_EVALUATION_FAILED for the ignored failures, with the system actor.
   */
  async recordInBackground(verdict: PolicyVerdict): Promise<void> {
    for (const f of [...verdict.warned, ...verdict.audited]) await this.audit.write(violationEntry(verdict, f, SYSTEM_ACTOR.username), SYSTEM_ACTOR);
    for (const f of verdict.ignored) await this.audit.write(evaluationFailedEntry(verdict, f, SYSTEM_ACTOR.username), SYSTEM_ACTOR);
  }

  /**
   * Background work: writes CLUSTER_POLICY_DENIED (actor system) for one Deny finding on a change the system did
   * not make because of it; `what` says what was not done (e.g. "the upgrade to 1.31.6 was not planned").
   */
  async recordDenialInBackground(verdict: PolicyVerdict, f: PolicyFinding, what: string, details: AuditDetails = {}): Promise<void> {
    const entry = violationEntry(verdict, f, SYSTEM_ACTOR.username);
    const subject = entry.subject!;
    await this.audit.write(
      {
        ...entry,
        type: 'CLUSTER_POLICY_DENIED',
        details: { ...entry.details, ...details },
        message: `${policyLabel(f)} denied the system's change (${verdict.operation} ${verdict.resource}) of cluster ${subject}: ${f.message}; ${what}`,
      },
      SYSTEM_ACTOR,
    );
  }

  /**
   * Of these organisations, the ones at least one enabled policy can apply to (one statement), so background
   * work over many clusters evaluates only where a policy exists.
   */
  async organisationsWithPolicies(organisationIds: number[]): Promise<Set<number>> {
    const ids = [...new Set(organisationIds.map(Number))];
    if (!ids.length) return new Set();
    const rows: { organisation_id: string | null }[] = await this.txHost.tx.query(
      `SELECT DISTINCT organisation_id FROM cluster_policies WHERE enabled AND (organisation_id IS NULL OR organisation_id = ANY($1::bigint[]))`,
      [ids],
    );
    if (rows.some((r) => r.organisation_id === null)) return new Set(ids);
    return new Set(rows.map((r) => Number(r.organisation_id)));
  }

  /**
   * Enabled policies that can apply to the organisation: platform ones first, then by name. A change reads them
   * before it takes its row lock (see UpdateClusterUseCase) and hands them to `before`.
   */
  enabledPolicies(organisationId: number): Promise<ClusterPolicyEntity[]> {
    return this.txHost.tx.query(
      `SELECT ${POLICY_SELECT} FROM cluster_policies p WHERE p.enabled AND (p.organisation_id IS NULL OR p.organisation_id = $1)
        ORDER BY (p.organisation_id IS NOT NULL), p.name`,
      [organisationId],
    );
  }

  /** `request.user` of the current request, or the system in background work. */
  private caller(): PolicyUserVariable {
    const principal = currentPrincipal(this.cls);
    return principal?.user ? principalPolicyUser(principal) : SYSTEM_POLICY_USER;
  }
}

/** The audit entry of a policy's finding on a change: who, which cluster, which policy, what happened. */
function policyEntry(verdict: PolicyVerdict, policy: PolicyFinding['policy'], type: string, details: AuditDetails, message: (subject: string) => string): AuditEntry {
  const subject = `${verdict.environment!.slug}/${verdict.cluster!.slug}`;
  return {
    type,
    organisation: verdict.organisation,
    environment: verdict.environment,
    cluster: verdict.cluster ? { id: verdict.cluster.id, slug: verdict.cluster.slug } : null,
    referencedEntityIdentity: policy.identity,
    subject,
    details: {
      policy: { old: null, new: policy.name },
      scope: { old: null, new: policy.scope },
      ...details,
      operation: { old: null, new: verdict.operation },
      resource: { old: null, new: verdict.resource },
    },
    message: message(subject),
  };
}

function violationEntry(verdict: PolicyVerdict, f: PolicyFinding, actor: string): AuditEntry {
  return policyEntry(
    verdict,
    f.policy,
    'CLUSTER_POLICY_VIOLATED',
    { action: { old: null, new: f.policy.action }, message: { old: null, new: f.message } },
    (subject) => `${actor}'s change (${verdict.operation} ${verdict.resource}) of cluster ${subject} violates ${policyLabel(f)}: ${f.message}`,
  );
}

/** An ignored evaluation failure (failurePolicy Ignore): the change went through without this policy's verdict. */
function evaluationFailedEntry(verdict: PolicyVerdict, f: IgnoredPolicyFailure, actor: string): AuditEntry {
  return policyEntry(
    verdict,
    f.policy,
    'CLUSTER_POLICY_EVALUATION_FAILED',
    { failurePolicy: { old: null, new: 'Ignore' }, error: { old: null, new: f.error } },
    (subject) =>
      `${actor}'s change (${verdict.operation} ${verdict.resource}) of cluster ${subject} went through without ${policyLabel(f)}, ` +
      `which could not be evaluated (failurePolicy Ignore): ${f.error}`,
  );
}
