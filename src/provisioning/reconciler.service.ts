import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import type { AuditDetails } from '../audit/audit-event.entity';
import { AuditService } from '../audit/audit.service';
import { SYSTEM_ACTOR } from '../auth/principal';
import { ClusterEntity, RECONCILE_CANDIDATE_PREDICATE } from '../clusters/cluster.entity';
import { afterFailure, afterRecovery, afterStep, nextReconcileStep, ReconcileStep, retryDelaySeconds } from '../clusters/cluster-state-machine';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { CLUSTER_DRIVER, ClusterDriver } from './cluster-driver';
import { ClusterStepEffects } from './cluster-step-effects';

type StepOutcome = 'completed' | 'pending' | 'failed' | 'recovered' | 'idle';

/** Clusters handled per pass (each in its own short transaction). */
const BATCH_SIZE = 50;
/** How long a stopped cluster with a pending version change waits before it is looked at again. */
const IDLE_RECHECK_SECONDS = 60;
/** A settled (started or stopped) cluster is observed again when its last observation is this old. */
export const OBSERVE_EVERY_SECONDS = 60;

interface PassResult {
  id: number;
  acted: boolean;
  outcome: StepOutcome;
}

/**
 * The provisioning reconciler: the `clusters` table is the desired state; each pass claims clusters
 * whose observed state differs (`FOR UPDATE SKIP LOCKED`, so replicas never work on the same row),
 * asks the driver to act on the one next step of the state machine, and records the step (row,
 * observed state, audit and activity with actor `system`) in the same transaction. All state is in
 * the row, so a restarted replica resumes where the last one stopped.
 */
@Injectable()
export class ReconcilerService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Reconciler');
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<unknown> | null = null;
  private stopped = false;

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly cls: ClsService,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
    @Inject(CLUSTER_DRIVER) private readonly driver: ClusterDriver,
    private readonly metrics: MetricsService,
    private readonly dataSource: DataSource,
    private readonly stepEffects: ClusterStepEffects,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.BACKGROUND_JOBS_ENABLED) return;
    const everyMs = Math.max(this.config.RECONCILE_INTERVAL_SECONDS, 0.1) * 1000;
    this.timer = setInterval(() => this.kick(), everyMs);
    this.timer.unref();
    void this.listen();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => undefined);
    if (this.inFlight) await this.inFlight;
  }

  private listener: Client | null = null;
  private rerun = false;

  /** Starts a pass now, or one more right after the pass under way (a change arrived meanwhile). */
  private kick(): void {
    if (this.stopped) return;
    if (this.inFlight) {
      this.rerun = true;
      return;
    }
    this.rerun = false;
    let moved = 0;
    this.inFlight = this.runOnce()
      .then((n) => (moved = n))
      .catch((err) => this.logger.error({ err }, 'Reconcile pass failed'))
      .finally(() => {
        this.inFlight = null;
        // Keep going while clusters move (their next steps may be due at once); otherwise wait to be woken.
        if (this.rerun || moved > 0) setImmediate(() => this.kick());
      });
  }

  /**
   * Woken, not only polled: a committed cluster change NOTIFies `cms_cluster_changed` (migration
   * ClusterChangeNotify) and this replica runs a pass at once. A lost connection is re-established; polling
   * every RECONCILE_INTERVAL_SECONDS stays the safety net, so the interval can be long at rest.
   */
  private async listen(): Promise<void> {
    if (this.stopped) return;
    const url = (this.dataSource.options as { url?: string }).url;
    const client = new Client({ connectionString: url, application_name: 'cluster-management-service-listener' });
    client.on('notification', () => this.kick());
    client.on('error', (err) => {
      // At shutdown the database may stop before this connection is ended: nothing to report then.
      if (!this.stopped) this.logger.warn({ err }, 'Cluster change listener lost its connection; polling continues');
    });
    client.on('end', () => {
      if (this.listener === client && !this.stopped) {
        this.listener = null;
        setTimeout(() => void this.listen(), 5000).unref();
      }
    });
    try {
      await client.connect();
      await client.query('LISTEN cms_cluster_changed');
      if (this.stopped) {
        await client.end();
        return;
      }
      this.listener = client;
    } catch (err) {
      this.logger.warn({ err }, 'Cluster change listener could not connect; retrying in 5 s (polling continues)');
      await client.end().catch(() => undefined);
      setTimeout(() => void this.listen(), 5000).unref();
    }
  }

  /** One pass over the due clusters: at most one step per cluster. Answers how many clusters moved. */
  async runOnce(): Promise<number> {
    const seen: number[] = [];
    let acted = 0;
    for (let i = 0; i < BATCH_SIZE; i++) {
      let result: PassResult | null;
      try {
        result = await this.cls.run(() => this.txHost.withTransaction(() => this.claimAndProcess(seen)));
      } catch (err) {
        const id = (err as { clusterId?: number }).clusterId;
        this.logger.error({ err, clusterId: id }, 'Reconciling a cluster failed');
        this.metrics.backgroundErrors.inc({ job: 'reconciler' });
        if (id === undefined) throw err;
        await this.recordCrash(id, err as Error);
        seen.push(id);
        continue;
      }
      if (!result) break;
      seen.push(result.id);
      // Counted after the step's transaction committed.
      this.metrics.reconcilerSteps.inc({ outcome: result.outcome });
      if (result.acted) acted++;
    }
    acted += await this.cls.run(() => this.txHost.withTransaction(() => this.observeSettled(seen)));
    return acted;
  }

  /**
   * Health observation of settled clusters (outside the candidate index): those not observed for
   * OBSERVE_EVERY_SECONDS are observed; lost contact moves them to `unknown` (recovered by the next
   * successful observation), otherwise `actualState` is refreshed. Answers how many were lost.
   */
  private async observeSettled(exclude: number[]): Promise<number> {
    const now = this.clock.now();
    const tx = this.txHost.tx;
    const rows: { id: string }[] = await tx.query(
      `SELECT id FROM clusters
        WHERE deleted_at IS NULL AND status IN ('started', 'stopped') AND desired_status IS NULL
          AND version IS NOT DISTINCT FROM observed_version
          AND (observed_at IS NULL OR observed_at <= $1)
          AND NOT (id = ANY($2::bigint[]))
        ORDER BY observed_at NULLS FIRST, id
        LIMIT ${BATCH_SIZE}
        FOR UPDATE SKIP LOCKED`,
      [new Date(now.getTime() - OBSERVE_EVERY_SECONDS * 1000), exclude],
    );
    let lost = 0;
    const repo = tx.getRepository(ClusterEntity);
    for (const { id } of rows) {
      const c = await repo.findOneByOrFail({ id: Number(id) });
      const seen = await this.driver.observe(c, now);
      if (seen.ok) {
        await repo.update({ id: c.id }, { observedAt: now, observedStatus: seen.status ?? c.status, observedVersion: seen.version ?? c.observedVersion });
      } else {
        await this.fail(c, { kind: 'transition', step: 'observe', to: { status: c.status, provisionStatus: c.provisionStatus }, fulfilsDesired: false, auditType: 'CLUSTER_FAILED' }, seen.error ?? 'The driver lost contact with the cluster', now);
        lost++;
      }
    }
    return lost;
  }

  private async claimAndProcess(exclude: number[]): Promise<PassResult | null> {
    const now = this.clock.now();
    const tx = this.txHost.tx;
    const rows: { id: string }[] = await tx.query(
      `SELECT id FROM clusters
        WHERE ${RECONCILE_CANDIDATE_PREDICATE}
          AND (next_attempt_at IS NULL OR next_attempt_at <= $1)
          AND NOT (id = ANY($2::bigint[]))
        ORDER BY next_attempt_at NULLS FIRST, id
        LIMIT 1
        FOR UPDATE SKIP LOCKED`,
      [now, exclude],
    );
    if (!rows.length) return null;
    const id = Number(rows[0].id);
    try {
      const cluster = await tx.getRepository(ClusterEntity).findOneByOrFail({ id });
      return { id, ...(await this.process(cluster, now)) };
    } catch (err) {
      (err as { clusterId?: number }).clusterId = id;
      throw err;
    }
  }

  private async process(c: ClusterEntity, now: Date): Promise<{ acted: boolean; outcome: StepOutcome }> {
    const repo = this.txHost.tx.getRepository(ClusterEntity);
    const step = nextReconcileStep(c);
    if (!step) {
      // At rest: a fulfilled or meaningless intent is cleared so the row leaves the candidate set.
      await repo.update({ id: c.id }, { desiredStatus: null, nextAttemptAt: null, observedVersion: c.observedVersion ?? c.version });
      return { acted: false, outcome: 'idle' };
    }
    if (step.kind === 'idle') {
      await repo.update({ id: c.id }, { nextAttemptAt: new Date(now.getTime() + IDLE_RECHECK_SECONDS * 1000) });
      return { acted: false, outcome: 'idle' };
    }
    if (step.kind === 'recover') return { acted: await this.recover(c, now), outcome: 'recovered' };

    const outcome = await this.driver.advance(c, step.step, now);
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

  private async apply(c: ClusterEntity, step: Exclude<ReconcileStep, { kind: 'idle' | 'recover' }>, now: Date): Promise<void> {
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

  private async fail(c: ClusterEntity, step: Exclude<ReconcileStep, { kind: 'idle' | 'recover' }>, error: string, now: Date): Promise<void> {
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

  private async recover(c: ClusterEntity, now: Date): Promise<boolean> {
    const repo = this.txHost.tx.getRepository(ClusterEntity);
    const seen = await this.driver.observe(c, now);
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

  /** An unexpected error (not a driver answer): back off without changing the status. */
  private async recordCrash(id: number, err: Error): Promise<void> {
    await this.cls.run(() =>
      this.txHost.withTransaction(async () => {
        const now = this.clock.now();
        await this.txHost.tx.query(
          `UPDATE clusters SET attempts = attempts + 1, last_error = $2,
                  next_attempt_at = $3::timestamptz + make_interval(secs => LEAST(300, 5 * power(2, attempts)))
            WHERE id = $1`,
          [id, `Internal error while reconciling: ${err.message}`.slice(0, 500), now],
        );
      }),
    );
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
