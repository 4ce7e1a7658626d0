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
import type { DriverObservation } from './cluster-driver';
import { Claim, ClusterLeases } from './cluster-leases';
import { ClusterStepEffects } from './cluster-step-effects';
import type { DriverAnswer } from './driver-calls';

export type StepOutcome = 'completed' | 'pending' | 'failed' | 'recovered' | 'idle' | 'superseded';

export interface StepRecord {
  acted: boolean;
  outcome: StepOutcome;
}

/** A step the driver performs (not an idle wait, not a recovery). */
export type DriverStep = Exclude<ReconcileStep, { kind: 'idle' | 'recover' }>;

/** How long a stopped cluster with a pending version change waits before it is looked at again. */
const IDLE_RECHECK_SECONDS = 60;

/** The conditions of a cluster or pool whose newest generation is applied. */
const APPLIED_CONDITIONS = (generation: number): ConditionChange[] => [
  { type: 'Ready', status: 'True', reason: 'Applied', message: `Generation ${generation} is applied` },
  { type: 'Reconciling', status: 'False', reason: 'Applied', message: `Generation ${generation} is applied` },
  { type: 'Degraded', status: 'False', reason: 'NoError', message: '' },
];

/** The row's generation is applied. */
const appliedPatch = (c: ClusterEntity, now: Date): Partial<ClusterEntity> => ({
  observedGeneration: Math.max(Number(c.observedGeneration ?? 0), Number(c.generation)),
  conditions: setConditions(c.conditions, APPLIED_CONDITIONS(Number(c.generation)), now, Number(c.generation)),
});

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
      if (answer.kind !== 'observe') throw new Error('No observation for a recovery step');
      return { acted: await this.recover(c, slugs, answer.seen, now, logs), outcome: 'recovered' };
    }
    if (answer.kind !== 'advance') throw new Error(`No driver answer for step ${step.step}`);
    const outcome = answer.outcome;
    if (outcome.outcome === 'pending') {
      await repo.update({ id: c.id }, { nextAttemptAt: outcome.retryAt, ...LEASE_CLEARED });
      return { acted: false, outcome: 'pending' };
    }
    if (outcome.outcome === 'failed') {
      await this.failStep(c, slugs, step, outcome.error, now, logs, LEASE_CLEARED);
      return { acted: true, outcome: 'failed' };
    }
    await this.apply(c, slugs, step, now, logs);
    await this.stepEffects.afterStep(c, step.step, outcome, now);
    return { acted: true, outcome: 'completed' };
  }

  private async apply(c: ClusterEntity, slugs: Slugs, step: DriverStep, now: Date, logs: (() => void)[]): Promise<void> {
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
    } else {
      if (change.deleted) {
        patch.deletedAt = now;
        await tx.query(
          `UPDATE observability_tenants SET deleted_at = $2, available = false, modified_at = $2 WHERE cluster_id = $1 AND deleted_at IS NULL`,
          [c.id, now],
        );
      }
      if (step.step === 'INITIAL_NODE_POOLS_PROVISIONED') {
        await tx.query(`UPDATE cluster_node_pools SET provision_status = 'DONE', modified_at = $2 WHERE cluster_id = $1`, [c.id, now]);
      }
      details = {};
      if (before.status !== change.status) details.status = { old: before.status, new: change.status };
      if (before.provisionStatus !== change.provisionStatus) details.provisionStatus = { old: before.provisionStatus, new: change.provisionStatus };
      message =
        change.status === 'provisioning'
          ? `system advanced provisioning of cluster ${subject.text} to ${change.provisionStatus}`
          : `system moved cluster ${subject.text} to ${change.status}`;
    }
    if (change.status === 'started' || change.status === 'stopped') {
      // The cluster is settled at the generation it has now: that generation is applied, with the pools it includes.
      Object.assign(patch, appliedPatch(c, now));
      await this.markPoolsApplied(c.id, c.generation, now);
    }
    await tx.getRepository(ClusterEntity).update({ id: c.id }, patch);
    await this.audit.write(
      { type: step.auditType, ...subject.refs, details: { ...details, step: { old: null, new: step.step } }, subject: subject.text, message },
      SYSTEM_ACTOR,
    );
    logs.push(() => this.logStatusChange(c, subject.refs.organisation.slug, subject.refs.environment.slug, before.status, change.status, step.step));
  }

  /** The pools whose change is part of `generation` are applied (Ready). */
  private async markPoolsApplied(clusterId: number, generation: number, now: Date): Promise<void> {
    await this.txHost.tx.query(
      `UPDATE cluster_node_pools SET observed_generation = $2, conditions = cms_set_conditions(conditions, $3::jsonb, $4, $2)
        WHERE cluster_id = $1 AND generation <= $2 AND (observed_generation IS NULL OR observed_generation < $2)`,
      [clusterId, generation, JSON.stringify(APPLIED_CONDITIONS(generation)), now],
    );
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

  private async recover(c: ClusterEntity, slugs: Slugs, seen: DriverObservation, now: Date, logs: (() => void)[]): Promise<boolean> {
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
    const { status: resumed } = afterRecovery(c, seen.status);
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
