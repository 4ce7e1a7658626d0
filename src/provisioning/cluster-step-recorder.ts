import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import type { AuditDetails } from '../audit/audit-event.entity';
import { AuditService } from '../audit/audit.service';
import { SYSTEM_ACTOR } from '../identity/principal';
import { ClusterEntity } from '../clusters/cluster.entity';
import { ConditionChange, setConditions } from '../clusters/cluster-conditions';
import { afterFailure, afterRecovery, afterStep, nextReconcileStep, ReconcileStep, retryDelaySeconds } from '../clusters/cluster-state-machine';
import type { ClusterObservation, DriverError } from '../cluster-drivers/driver-contract';
import type { ClusterStatus } from '../clusters/cluster.entity';
import { isByon } from '../clusters/byon/byon-rules';
import { CallingStep, healthy, observedStatus, stepReached } from './step-outcome';
import { Claim, ClusterLeases } from './cluster-leases';
import { ClusterStepEffects } from './cluster-step-effects';
import type { DriverAnswer } from './driver-calls';

export type StepOutcome = 'completed' | 'pending' | 'failed' | 'degraded' | 'retrying' | 'recovered' | 'idle' | 'superseded';

/** What an observation of a cluster in `unknown` says. */
interface Seen {
  ok: boolean;
  status?: ClusterStatus | null;
  error?: string;
}

/** A terminal driver error is tried again after this long, or at once when the spec changes (its generation bump). */
export const TERMINAL_RETRY_SECONDS = 3600;

/** A driver still working on a step that gave no hint (`retryAfterSeconds`) is asked again after this long. */
export const DRIVER_POLL_SECONDS = 5;

export interface StepRecord {
  acted: boolean;
  outcome: StepOutcome;
}

/** A step the driver performs (not an idle wait, not a recovery). */
export type DriverStep = CallingStep;

/** How long a stopped cluster with a pending version change waits before it is looked at again. */
const IDLE_RECHECK_SECONDS = 60;

/** The conditions of a cluster or pool whose newest generation is applied. */
const APPLIED_CONDITIONS = (generation: number): ConditionChange[] => [
  { type: 'Ready', status: 'True', reason: 'Applied', message: `Generation ${generation} is applied` },
  { type: 'Reconciling', status: 'False', reason: 'Applied', message: `Generation ${generation} is applied` },
  { type: 'Degraded', status: 'False', reason: 'NoError', message: '' },
];

const APPLIED_POOL_CONDITIONS: ConditionChange[] = [
  { type: 'Ready', status: 'True', reason: 'Applied', message: 'The cluster driver reports the pool applied and ready' },
  { type: 'Reconciling', status: 'False', reason: 'Applied', message: 'The cluster driver reports the pool applied and ready' },
  { type: 'Degraded', status: 'False', reason: 'NoError', message: '' },
];

/**
 * The cluster's conditions after a driver answer without error: Ready once its newest generation is applied and it
 * is started or stopped; Reconciling while a generation or a step is still under way.
 */
function progressConditions(c: ClusterEntity, status: ClusterStatus, observedGeneration: number | null, step: string, now: Date) {
  const generation = Number(c.generation);
  const appliedNow = observedGeneration !== null && observedGeneration >= generation;
  const changes: ConditionChange[] =
    appliedNow && (status === 'started' || status === 'stopped')
      ? APPLIED_CONDITIONS(generation)
      : [
          {
            type: 'Ready',
            status: 'False',
            reason: appliedNow ? 'NotRunning' : 'Reconciling',
            message: appliedNow ? `Generation ${generation} is applied; the cluster is ${status}` : `Generation ${generation} is not applied yet`,
          },
          { type: 'Reconciling', status: 'True', reason: 'Progressing', message: `The cluster driver is working on ${step} (generation ${generation})` },
          { type: 'Degraded', status: 'False', reason: 'NoError', message: '' },
        ];
  return setConditions(c.conditions, changes, now, generation);
}

const sameStep = (a: ReconcileStep | null, b: ReconcileStep | null) => JSON.stringify(a) === JSON.stringify(b);

/** What the driver answered for a claimed cluster: one step to record. */
export interface StepCall {
  claim: Claim;
  planned: ReconcileStep | null;
  answer: DriverAnswer;
}

/** The slugs an audit row names besides the cluster's own. */
interface Slugs {
  organisation: string | null;
  environment: string | null;
}

/** The lease ends with the step's own row update (no statement of its own). */
const LEASE_CLEARED: Partial<ClusterEntity> = { reconcileLeaseUntil: null, reconcileLeaseToken: null };

/**
 * Records what the driver answered for claimed clusters, in one short transaction for one or several steps: the
 * rows are re-read `FOR UPDATE` in one statement; only where the lease is still the claim's and the next step is
 * still the one the driver performed are the row, the observed state, the audit and the activity (actor
 * `system`) written, with what the step left behind (`ClusterStepEffects`) and one log line per status change
 * (after the commit); the lease is cleared either way (with the row's update where there is one).
 */
@Injectable()
export class ClusterStepRecorder {
  private readonly logger = new Logger('Reconciler');

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly cls: ClsService,
    private readonly audit: AuditService,
    private readonly leases: ClusterLeases,
    private readonly stepEffects: ClusterStepEffects,
  ) {}

  /** One step in its own transaction (see `recordMany`). */
  async record(claim: Claim, planned: ReconcileStep | null, answer: DriverAnswer): Promise<StepRecord> {
    return (await this.recordMany([{ claim, planned, answer }]))[0];
  }

  /**
   * The record transaction of several steps (of different clusters, one claim each), answering one record per
   * step in the same order. A change meanwhile (e.g. a delete request) supersedes the driver's answer: the next
   * pass asks for the step that is now due. It commits or rolls back as a whole: a caller that wants the other
   * steps recorded when one fails records them one by one.
   */
  async recordMany(steps: StepCall[]): Promise<StepRecord[]> {
    const logs: (() => void)[] = [];
    const results = await this.cls.run(() =>
      this.txHost.withTransaction(async () => {
        const tx = this.txHost.tx;
        const held = await this.leases.lockClaimed(
          tx,
          steps.map((s) => s.claim),
        );
        const out: StepRecord[] = [];
        for (const { claim, planned, answer } of steps) {
          const h = held.get(claim.id);
          // The lease passed and another replica took the cluster.
          if (!h) {
            out.push({ acted: false, outcome: 'superseded' });
            continue;
          }
          const c = h.cluster;
          const step = nextReconcileStep(c);
          if (c.deletedAt === null && sameStep(step, planned)) {
            out.push(await this.process(c, { organisation: h.organisationSlug, environment: h.environmentSlug }, step, answer, claim.now, logs));
          } else {
            await this.leases.clear(tx, c.id);
            out.push({ acted: false, outcome: 'superseded' });
          }
        }
        return out;
      }),
    );
    for (const log of logs) log();
    return results;
  }

  private async process(c: ClusterEntity, slugs: Slugs, step: ReconcileStep | null, answer: DriverAnswer, now: Date, logs: (() => void)[]): Promise<StepRecord> {
    const repo = this.txHost.tx.getRepository(ClusterEntity);
    if (!step) {
      // At rest: a fulfilled or meaningless intent is cleared so the row leaves the candidate set.
      await repo.update({ id: c.id }, { desiredStatus: null, nextAttemptAt: null, observedVersion: c.observedVersion ?? c.version, ...LEASE_CLEARED });
      return { acted: false, outcome: 'idle' };
    }
    if (step.kind === 'idle') {
      await repo.update({ id: c.id }, { nextAttemptAt: new Date(now.getTime() + IDLE_RECHECK_SECONDS * 1000), ...LEASE_CLEARED });
      return { acted: false, outcome: 'idle' };
    }
    if (step.kind === 'recover') {
      if (answer.kind === 'none') throw new Error('No observation for a recovery step');
      const seen: Seen =
        answer.kind === 'error'
          ? { ok: false, error: answer.error.message }
          : healthy(answer.observation)
            ? { ok: true, status: observedStatus(answer.observation) }
            : { ok: false, error: answer.observation.error?.message ?? 'The cluster driver does not find the cluster' };
      return { acted: await this.recover(c, slugs, seen, now, logs), outcome: 'recovered' };
    }
    if (answer.kind === 'none') throw new Error(`No driver answer for step ${step.step}`);
    if (answer.kind === 'error') {
      if (answer.error.class === 'terminal') return this.degrade(c, slugs, step, answer.error, now, logs);
      // The driver could not be asked (unreachable, timing out, backing off): the cluster keeps its status and waits.
      const attempts = c.attempts + 1;
      await repo.update(
        { id: c.id },
        {
          attempts,
          lastError: answer.error.message,
          nextAttemptAt: new Date(now.getTime() + retryDelaySeconds(attempts) * 1000),
          conditions: setConditions(
            c.conditions,
            [{ type: 'Reconciling', status: 'True', reason: 'DriverRetrying', message: `${answer.error.code}: ${answer.error.message}` }],
            now,
            Number(c.generation),
          ),
          ...LEASE_CLEARED,
        },
      );
      return { acted: false, outcome: 'retrying' };
    }
    const { observation: o, spec } = answer;
    if (o.error?.class === 'terminal') return this.degrade(c, slugs, step, o.error, now, logs);
    if (o.error) {
      await this.failStep(c, slugs, step, o.error.message, now, logs, LEASE_CLEARED);
      return { acted: true, outcome: 'failed' };
    }
    const observedGeneration = await this.recordApplied(c, o, spec.generation, now);
    if (!stepReached(step, o, spec)) {
      const wait = o.retryAfterSeconds != null && o.retryAfterSeconds > 0 ? o.retryAfterSeconds : DRIVER_POLL_SECONDS;
      await repo.update(
        { id: c.id },
        {
          nextAttemptAt: new Date(now.getTime() + wait * 1000),
          observedGeneration,
          conditions: progressConditions(c, c.status, observedGeneration, step.step, now),
          ...LEASE_CLEARED,
        },
      );
      return { acted: false, outcome: 'pending' };
    }
    await this.apply(c, slugs, step, now, logs, observedGeneration);
    await this.stepEffects.afterStep(c, step.step, o, now);
    return { acted: true, outcome: 'completed' };
  }

  /**
   * The generation the observation reports applied (never beyond what the call sent), kept when newer than the row's;
   * the pools whose last change it includes and that the driver reports ready are DONE (bring-your-own-node pools
   * keep their status: a registered node makes them DONE). Answers the cluster's observed generation now.
   */
  private async recordApplied(c: ClusterEntity, o: ClusterObservation, sent: number, now: Date): Promise<number | null> {
    const current = c.observedGeneration == null ? null : Number(c.observedGeneration);
    if (o.observedGeneration == null) return current;
    const reported = Math.min(Number(o.observedGeneration), sent);
    const ready = o.nodePools.filter((p) => p.ready).map((p) => p.identity);
    await this.txHost.tx.query(
      `UPDATE cluster_node_pools
          SET observed_generation = $2,
              provision_status = CASE WHEN $5 THEN provision_status ELSE 'DONE' END,
              conditions = cms_set_conditions(conditions, $3::jsonb, $4, generation)
        WHERE cluster_id = $1 AND generation <= $2 AND (observed_generation IS NULL OR observed_generation < $2)
          AND ($5 OR identity = ANY($6::uuid[]))`,
      [c.id, reported, JSON.stringify(APPLIED_POOL_CONDITIONS), now, isByon(c.cloudProvider), ready],
    );
    return current === null ? reported : Math.max(current, reported);
  }

  /**
   * A terminal driver error: the cluster keeps its status and shows Degraded with the driver's message; it is tried
   * again when the spec changes (the bump clears next_attempt_at) or after TERMINAL_RETRY_SECONDS. The audit row is
   * written when the cluster becomes Degraded (or the error changes), not on every retry.
   */
  private async degrade(c: ClusterEntity, slugs: Slugs, step: DriverStep, error: DriverError, now: Date, logs: (() => void)[]): Promise<StepRecord> {
    const generation = Number(c.generation);
    const already = (c.conditions ?? []).some((x) => x.type === 'Degraded' && x.status === 'True' && x.message === error.message);
    await this.txHost.tx.getRepository(ClusterEntity).update(
      { id: c.id },
      {
        attempts: c.attempts + 1,
        lastError: error.message,
        nextAttemptAt: new Date(now.getTime() + TERMINAL_RETRY_SECONDS * 1000),
        conditions: setConditions(
          c.conditions,
          [
            { type: 'Ready', status: 'False', reason: 'Degraded', message: `Generation ${generation} cannot be applied: ${error.message}` },
            {
              type: 'Reconciling',
              status: 'False',
              reason: 'Stalled',
              message: `Waiting for a change of the cluster, or ${TERMINAL_RETRY_SECONDS / 60} minutes, before trying again`,
            },
            { type: 'Degraded', status: 'True', reason: error.code, message: error.message },
          ],
          now,
          generation,
        ),
        ...LEASE_CLEARED,
      },
    );
    if (already) return { acted: false, outcome: 'degraded' };
    const subject = this.subjectOf(c, slugs);
    await this.audit.write(
      {
        type: 'CLUSTER_DEGRADED',
        ...subject.refs,
        details: { step: { old: null, new: step.step }, error: { old: null, new: `${error.code}: ${error.message}` }, generation: { old: null, new: generation } },
        subject: subject.text,
        message: `system could not apply generation ${generation} of cluster ${subject.text} in step ${step.step}: ${error.message}`,
      },
      SYSTEM_ACTOR,
    );
    logs.push(() => this.logger.warn({ cluster: c.identity, clusterSlug: c.slug, step: step.step, code: error.code, error: error.message }, `Cluster ${subject.text}: degraded`));
    return { acted: true, outcome: 'degraded' };
  }

  private async apply(c: ClusterEntity, slugs: Slugs, step: DriverStep, now: Date, logs: (() => void)[], observedGeneration: number | null): Promise<void> {
    const tx = this.txHost.tx;
    const before = { status: c.status, provisionStatus: c.provisionStatus, version: c.observedVersion };
    const patch: Partial<ClusterEntity> = {
      stepStartedAt: now,
      nextAttemptAt: null,
      attempts: 0,
      lastError: null,
      observedAt: now,
      modifiedAt: now,
      ...LEASE_CLEARED,
    };
    let details: AuditDetails;
    let message: string;
    const subject = this.subjectOf(c, slugs);
    const change = afterStep(c, step);
    patch.status = change.status;
    patch.provisionStatus = change.provisionStatus;
    patch.desiredStatus = change.desiredStatus;
    patch.observedVersion = change.observedVersion;
    patch.statusBeforeFault = change.statusBeforeFault;
    patch.observedStatus = change.status;
    if (step.kind === 'upgrade') {
      details = { version: { old: before.version, new: step.toVersion } };
      message = `system upgraded cluster ${subject.text} from ${before.version ?? 'unknown'} to ${step.toVersion}`;
    } else if (step.kind === 'update') {
      details = { generation: { old: c.observedGeneration ?? null, new: observedGeneration } };
      message = `system applied generation ${observedGeneration} of cluster ${subject.text}`;
    } else {
      if (change.deleted) {
        patch.deletedAt = now;
        await tx.query(
          `UPDATE observability_tenants SET deleted_at = $2, available = false, modified_at = $2 WHERE cluster_id = $1 AND deleted_at IS NULL`,
          [c.id, now],
        );
      }
      details = {};
      if (before.status !== change.status) details.status = { old: before.status, new: change.status };
      if (before.provisionStatus !== change.provisionStatus) details.provisionStatus = { old: before.provisionStatus, new: change.provisionStatus };
      message =
        change.status === 'provisioning'
          ? `system advanced provisioning of cluster ${subject.text} to ${change.provisionStatus}`
          : `system moved cluster ${subject.text} to ${change.status}`;
    }
    patch.observedGeneration = observedGeneration;
    patch.conditions = progressConditions(c, change.status, observedGeneration, step.step, now);
    await tx.getRepository(ClusterEntity).update({ id: c.id }, patch);
    await this.audit.write(
      { type: step.auditType, ...subject.refs, details: { ...details, step: { old: null, new: step.step } }, subject: subject.text, message },
      SYSTEM_ACTOR,
    );
    logs.push(() => this.logStatusChange(c, subject.refs.organisation.slug, subject.refs.environment.slug, before.status, change.status, step.step));
  }

  /** The driver lost the cluster in `step`: it goes to `unknown` with backoff (also for lost observations, in their transaction). */
  async fail(c: ClusterEntity, step: DriverStep, error: string, now: Date): Promise<void> {
    const logs: (() => void)[] = [];
    await this.failStep(c, await this.slugs(c), step, error, now, logs);
    for (const log of logs) log();
  }

  private async failStep(c: ClusterEntity, slugs: Slugs, step: DriverStep, error: string, now: Date, logs: (() => void)[], extra: Partial<ClusterEntity> = {}): Promise<void> {
    const attempts = c.attempts + 1;
    await this.txHost.tx.getRepository(ClusterEntity).update(
      { id: c.id },
      {
        ...afterFailure(c),
        lastError: error,
        attempts,
        nextAttemptAt: new Date(now.getTime() + retryDelaySeconds(attempts) * 1000),
        observedAt: now,
        observedStatus: 'unknown',
        modifiedAt: now,
        conditions: setConditions(
          c.conditions,
          [{ type: 'Ready', status: 'Unknown', reason: 'DriverError', message: error }],
          now,
          Number(c.generation),
        ),
        ...extra,
      },
    );
    const subject = this.subjectOf(c, slugs);
    await this.audit.write(
      {
        type: 'CLUSTER_FAILED',
        ...subject.refs,
        details: { status: { old: c.status, new: 'unknown' }, step: { old: null, new: step.step }, error: { old: null, new: error } },
        subject: subject.text,
        message: `system lost cluster ${subject.text} in step ${step.step}: ${error}`,
      },
      SYSTEM_ACTOR,
    );
    logs.push(() => this.logStatusChange(c, subject.refs.organisation.slug, subject.refs.environment.slug, c.status, 'unknown', step.step, error));
  }

  private async recover(c: ClusterEntity, slugs: Slugs, seen: Seen, now: Date, logs: (() => void)[]): Promise<boolean> {
    const repo = this.txHost.tx.getRepository(ClusterEntity);
    if (!seen.ok) {
      const attempts = c.attempts + 1;
      await repo.update(
        { id: c.id },
        {
          attempts,
          lastError: seen.error ?? 'The driver could not observe the cluster',
          nextAttemptAt: new Date(now.getTime() + retryDelaySeconds(attempts) * 1000),
          observedAt: now,
          observedStatus: 'unknown',
          ...LEASE_CLEARED,
        },
      );
      return false;
    }
    const { status: resumed } = afterRecovery(c, seen.status ?? undefined);
    await repo.update(
      { id: c.id },
      {
        status: resumed,
        statusBeforeFault: null,
        lastError: null,
        attempts: 0,
        nextAttemptAt: null,
        stepStartedAt: now,
        observedAt: now,
        observedStatus: resumed,
        modifiedAt: now,
        conditions: progressConditions(c, resumed, c.observedGeneration == null ? null : Number(c.observedGeneration), 'observe', now),
        ...LEASE_CLEARED,
      },
    );
    const subject = this.subjectOf(c, slugs);
    await this.audit.write(
      {
        type: 'CLUSTER_RECOVERED',
        ...subject.refs,
        details: { status: { old: 'unknown', new: resumed } },
        subject: subject.text,
        message: `system recovered cluster ${subject.text} (back to ${resumed})`,
      },
      SYSTEM_ACTOR,
    );
    logs.push(() => this.logStatusChange(c, subject.refs.organisation.slug, subject.refs.environment.slug, 'unknown', resumed, 'RECOVERED'));
    return true;
  }

  /** One info line per cluster status change (warn when the cluster is lost), with the ids an operator searches by. */
  private logStatusChange(c: ClusterEntity, organisation: string, environment: string, from: string, to: string, step: string, error?: string): void {
    if (from === to && !error) return;
    const fields = { cluster: c.identity, organisation, environment, clusterSlug: c.slug, from, to, step, ...(error ? { error } : {}) };
    const text = `Cluster ${organisation}/${environment}/${c.slug}: ${from} -> ${to}`;
    if (error) this.logger.warn(fields, text);
    else this.logger.log(fields, text);
  }

  /** The slugs of a cluster's organisation and environment (the record transaction has them from its locking read). */
  private async slugs(c: ClusterEntity): Promise<Slugs> {
    const [row] = await this.txHost.tx.query(
      `SELECT o.slug AS org_slug, e.slug AS env_slug FROM organisations o JOIN environments e ON e.id = $2 WHERE o.id = $1`,
      [c.organisationId, c.environmentId],
    );
    return { organisation: row?.org_slug ?? null, environment: row?.env_slug ?? null };
  }

  private subjectOf(c: ClusterEntity, slugs: Slugs) {
    return {
      text: `${slugs.environment ?? '?'}/${c.slug}`,
      refs: {
        organisation: { id: c.organisationId, slug: slugs.organisation ?? '' },
        environment: { id: c.environmentId, slug: slugs.environment ?? '' },
        cluster: { id: c.id, slug: c.slug },
      },
    };
  }
}
