import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import type { AuditDetails } from '../audit/audit-event.entity';
import { AuditService } from '../audit/audit.service';
import { SYSTEM_ACTOR } from '../auth/principal';
import { ClusterEntity } from '../clusters/cluster.entity';
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

const sameStep = (a: ReconcileStep | null, b: ReconcileStep | null) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Records what the driver answered for a claimed cluster, in one short transaction: the row is re-read
 * `FOR UPDATE`; only when the lease is still the claim's and the next step is still the one the driver performed
 * are the row, the observed state, the audit and the activity (actor `system`) written, with what the step left
 * behind (`ClusterStepEffects`) and one log line per status change; the lease is cleared either way.
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

  /**
   * The record transaction. A change meanwhile (e.g. a delete request) supersedes the driver's answer: the next
   * pass asks for the step that is now due.
   */
  record(claim: Claim, planned: ReconcileStep | null, answer: DriverAnswer): Promise<StepRecord> {
    return this.cls.run(() =>
      this.txHost.withTransaction(async () => {
        const { id, now } = claim;
        const tx = this.txHost.tx;
        // The lease passed and another replica took the cluster.
        if (!(await this.leases.lockIfHeld(tx, claim))) return { acted: false, outcome: 'superseded' };
        const c = await tx.getRepository(ClusterEntity).findOneByOrFail({ id });
        const step = nextReconcileStep(c);
        let result: StepRecord = { acted: false, outcome: 'superseded' };
        if (c.deletedAt === null && sameStep(step, planned)) result = await this.process(c, step, answer, now);
        await this.leases.clear(tx, id);
        return result;
      }),
    );
  }

  private async process(c: ClusterEntity, step: ReconcileStep | null, answer: DriverAnswer, now: Date): Promise<StepRecord> {
    const repo = this.txHost.tx.getRepository(ClusterEntity);
    if (!step) {
      // At rest: a fulfilled or meaningless intent is cleared so the row leaves the candidate set.
      await repo.update({ id: c.id }, { desiredStatus: null, nextAttemptAt: null, observedVersion: c.observedVersion ?? c.version });
      return { acted: false, outcome: 'idle' };
    }
    if (step.kind === 'idle') {
      await repo.update({ id: c.id }, { nextAttemptAt: new Date(now.getTime() + IDLE_RECHECK_SECONDS * 1000) });
      return { acted: false, outcome: 'idle' };
    }
    if (step.kind === 'recover') {
      if (answer.kind !== 'observe') throw new Error('No observation for a recovery step');
      return { acted: await this.recover(c, answer.seen, now), outcome: 'recovered' };
    }
    if (answer.kind !== 'advance') throw new Error(`No driver answer for step ${step.step}`);
    const outcome = answer.outcome;
    if (outcome.outcome === 'pending') {
      await repo.update({ id: c.id }, { nextAttemptAt: outcome.retryAt });
      return { acted: false, outcome: 'pending' };
    }
    if (outcome.outcome === 'failed') {
      await this.fail(c, step, outcome.error, now);
      return { acted: true, outcome: 'failed' };
    }
    await this.apply(c, step, now);
    await this.stepEffects.afterStep(c, step.step, outcome, now);
    return { acted: true, outcome: 'completed' };
  }

  private async apply(c: ClusterEntity, step: DriverStep, now: Date): Promise<void> {
    const tx = this.txHost.tx;
    const before = { status: c.status, provisionStatus: c.provisionStatus, version: c.observedVersion };
    const patch: Partial<ClusterEntity> = {
      stepStartedAt: now,
      nextAttemptAt: null,
      attempts: 0,
      lastError: null,
      observedAt: now,
      modifiedAt: now,
    };
    let details: AuditDetails;
    let message: string;
    const subject = await this.subject(c);
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
    await tx.getRepository(ClusterEntity).update({ id: c.id }, patch);
    await this.audit.write(
      { type: step.auditType, ...subject.refs, details: { ...details, step: { old: null, new: step.step } }, subject: subject.text, message },
      SYSTEM_ACTOR,
    );
    this.logStatusChange(c, subject.refs.organisation.slug, subject.refs.environment.slug, before.status, change.status, step.step);
  }

  /** The driver lost the cluster in `step`: it goes to `unknown` with backoff (also for lost observations, in their transaction). */
  async fail(c: ClusterEntity, step: DriverStep, error: string, now: Date): Promise<void> {
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
      },
    );
    const subject = await this.subject(c);
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
    this.logStatusChange(c, subject.refs.organisation.slug, subject.refs.environment.slug, c.status, 'unknown', step.step, error);
  }

  private async recover(c: ClusterEntity, seen: DriverObservation, now: Date): Promise<boolean> {
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
      },
    );
    const subject = await this.subject(c);
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
    this.logStatusChange(c, subject.refs.organisation.slug, subject.refs.environment.slug, 'unknown', resumed, 'RECOVERED');
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

  private async subject(c: ClusterEntity) {
    const [row] = await this.txHost.tx.query(
      `SELECT o.slug AS org_slug, e.slug AS env_slug FROM organisations o JOIN environments e ON e.id = $2 WHERE o.id = $1`,
      [c.organisationId, c.environmentId],
    );
    return {
      text: `${row?.env_slug ?? '?'}/${c.slug}`,
      refs: {
        organisation: { id: c.organisationId, slug: row?.org_slug ?? '' },
        environment: { id: c.environmentId, slug: row?.env_slug ?? '' },
        cluster: { id: c.id, slug: c.slug },
      },
    };
  }
}
