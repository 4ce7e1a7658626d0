import { randomUUID } from 'crypto';
import { Client } from 'pg';
import { DataSource, In } from 'typeorm';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import type { AuditDetails } from '../audit/audit-event.entity';
import { AuditService } from '../audit/audit.service';
import { SYSTEM_ACTOR } from '../auth/principal';
import { ClusterEntity, OBSERVE_CANDIDATE_PREDICATE, RECONCILE_CANDIDATE_PREDICATE } from '../clusters/cluster.entity';
import { afterFailure, afterRecovery, afterStep, nextReconcileStep, ReconcileStep, retryDelaySeconds } from '../clusters/cluster-state-machine';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { CLUSTER_DRIVER, ClusterDriver, DriverObservation, DriverOutcome } from './cluster-driver';

type StepOutcome = 'completed' | 'pending' | 'failed' | 'recovered' | 'idle' | 'superseded';

/** Clusters claimed per pass at least (each claim, driver call and record on its own); more with more workers. */
const MIN_PASS_CLAIMS = 50;
/** How long a stopped cluster with a pending version change waits before it is looked at again. */
const IDLE_RECHECK_SECONDS = 60;
/** Settled clusters claimed, observed (one driver call) and recorded (one transaction) together. */
export const OBSERVE_BATCH_SIZE = 500;
/** Observation batches in flight at once per replica (bounded by RECONCILE_CONCURRENCY too). */
const OBSERVE_PARALLEL_BATCHES = 4;
/** Observation batches per pass; when there are more due the next pass follows at once. */
const OBSERVE_BATCHES_PER_PASS = 40;

interface PassResult {
  id: number;
  acted: boolean;
  outcome: StepOutcome;
}

/** A cluster this replica holds the lease on: only the claim with this token may record. */
interface Claim {
  id: number;
  token: string;
  now: Date;
}

/** A driver call given up on after half the lease; it may still be running. */
class DriverTimeoutError extends Error {}

/** What the driver answered, or nothing when the step needs no driver call. */
type DriverAnswer = { kind: 'none' } | { kind: 'observe'; seen: DriverObservation } | { kind: 'advance'; outcome: DriverOutcome };

type DriverStep = Exclude<ReconcileStep, { kind: 'idle' | 'recover' }>;

const sameStep = (a: ReconcileStep | null, b: ReconcileStep | null) => JSON.stringify(a) === JSON.stringify(b);

/** The JS twin of OBSERVE_CANDIDATE_PREDICATE. */
const isSettled = (c: ClusterEntity) =>
  c.deletedAt === null && (c.status === 'started' || c.status === 'stopped') && c.desiredStatus === null && c.version === c.observedVersion;

/**
 * The provisioning reconciler: the `clusters` table is the desired state. A pass runs RECONCILE_CONCURRENCY
 * workers; each repeatedly
 *  1. claims one due cluster in a short statement (`FOR UPDATE SKIP LOCKED`, rows whose lease is live are
 *     skipped) by setting a lease (`reconcile_lease_until`, `reconcile_lease_token`),
 *  2. asks the driver for the one next step of the state machine, outside any transaction (bounded by half
 *     the lease),
 *  3. records it in one short transaction: the row is re-read `FOR UPDATE`; only when the lease is still this
 *     claim's and the next step is still the one the driver performed are the row, the observed state, the
 *     audit and the activity (actor `system`) written; the lease is cleared either way.
 * So one step per cluster runs at a time across all replicas, driver latency overlaps up to the pool size,
 * and a crashed replica's clusters are taken over when their leases pass. Settled clusters are observed in
 * batches (one driver call per batch), oldest observation first. All state is in the row, so a restarted
 * replica resumes where the last one stopped.
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
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.BACKGROUND_JOBS_ENABLED) return;
    // Polling is the safety net for steps (NOTIFY wakes the loop), but observations are due by time only: a pass
    // runs at least every quarter of OBSERVE_EVERY_SECONDS, so a long poll interval cannot make them late.
    const everyMs = Math.max(Math.min(this.config.RECONCILE_INTERVAL_SECONDS, this.config.OBSERVE_EVERY_SECONDS / 4), 0.1) * 1000;
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

  /**
   * One pass over the due clusters: at most one step per cluster, RECONCILE_CONCURRENCY at a time, then the
   * observation of settled clusters that are due. Answers how many clusters moved (one audit row each).
   */
  async runOnce(): Promise<number> {
    const seen = new Set<number>();
    let acted = 0;
    let budget = Math.max(MIN_PASS_CLAIMS, 4 * this.config.RECONCILE_CONCURRENCY);
    let fatal: unknown = null;
    /** A claim found nothing due: the other workers stop claiming too (one empty claim per pass at rest). */
    let drained = false;
    const worker = async () => {
      while (budget > 0 && fatal === null && !drained && !this.stopped) {
        budget--;
        let claim: Claim | null;
        try {
          claim = await this.claim([...seen]);
        } catch (err) {
          fatal = err;
          return;
        }
        if (!claim) {
          drained = true;
          return;
        }
        if (seen.has(claim.id)) {
          // This claim's exclusion list was taken before another worker claimed and recorded the cluster
          // (e.g. while it waited for a pooled connection): one step per cluster and pass, so give it back.
          await this.release(claim).catch((err) => this.logger.error({ err, clusterId: claim.id }, 'Giving back a lease failed'));
          continue;
        }
        seen.add(claim.id);
        const result = await this.reconcile(claim);
        if (!result) continue;
        // Counted after the step's transaction committed.
        this.metrics.reconcilerSteps.inc({ outcome: result.outcome });
        if (result.acted) acted++;
      }
    };
    await Promise.all(Array.from({ length: this.config.RECONCILE_CONCURRENCY }, worker));
    if (fatal !== null) throw fatal;
    acted += await this.observeDue([...seen]);
    return acted;
  }

  /** Leases the next due cluster to this claim (one short statement); null when none is due. */
  private async claim(exclude: number[]): Promise<Claim | null> {
    const now = this.clock.now();
    const token = randomUUID();
    const rows: { id: string }[] = await this.dataSource.query(
      `WITH claimed AS (
         UPDATE clusters SET reconcile_lease_until = $3, reconcile_lease_token = $4
          WHERE id = (SELECT id FROM clusters
                       WHERE ${RECONCILE_CANDIDATE_PREDICATE}
                         AND (next_attempt_at IS NULL OR next_attempt_at <= $1)
                         AND (reconcile_lease_until IS NULL OR reconcile_lease_until <= $1)
                         AND NOT (id = ANY($2::bigint[]))
                       ORDER BY next_attempt_at NULLS FIRST, id
                       LIMIT 1
                       FOR UPDATE SKIP LOCKED)
          RETURNING id)
       SELECT id FROM claimed`,
      [now, exclude, this.leaseUntil(now), token],
    );
    return rows.length ? { id: Number(rows[0].id), token, now } : null;
  }

  private async release(claim: Claim): Promise<void> {
    await this.dataSource.query(
      `UPDATE clusters SET reconcile_lease_until = NULL, reconcile_lease_token = NULL WHERE id = $1 AND reconcile_lease_token = $2`,
      [claim.id, claim.token],
    );
  }

  private leaseUntil(now: Date): Date {
    return new Date(now.getTime() + this.config.RECONCILE_LEASE_SECONDS * 1000);
  }

  /** A driver call, given up after half the lease (so the record still holds the lease). */
  private async callDriver<T>(what: string, call: () => Promise<T>): Promise<T> {
    const ms = this.config.RECONCILE_LEASE_SECONDS * 500;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DriverTimeoutError(`The cluster driver did not answer ${what} within ${ms / 1000} s`)), ms);
    });
    const answer = call();
    // A call given up on may still fail later: that must not become an unhandled rejection.
    answer.catch(() => undefined);
    try {
      return await Promise.race([answer, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Claim done: call the driver (no transaction open), then record. Null when an unexpected error backed the cluster off. */
  private async reconcile(claim: Claim): Promise<PassResult | null> {
    const { id, now } = claim;
    try {
      const c = await this.dataSource.getRepository(ClusterEntity).findOneByOrFail({ id });
      const planned = nextReconcileStep(c);
      let answer: DriverAnswer = { kind: 'none' };
      if (planned?.kind === 'recover') answer = { kind: 'observe', seen: await this.callDriver('observe', () => this.driver.observe(c, now)) };
      else if (planned && planned.kind !== 'idle') {
        answer = { kind: 'advance', outcome: await this.callDriver(planned.step, () => this.driver.advance(c, planned.step, now)) };
      }
      const result = await this.cls.run(() => this.txHost.withTransaction(() => this.record(claim, planned, answer)));
      return { id, ...result };
    } catch (err) {
      this.logger.error({ err, clusterId: id }, 'Reconciling a cluster failed');
      this.metrics.backgroundErrors.inc({ job: 'reconciler' });
      await this.recordCrash(claim, err as Error).catch((e) => this.logger.error({ err: e, clusterId: id }, 'Recording a reconcile error failed'));
      return null;
    }
  }

  /**
   * The record transaction: the row is locked and re-read; the driver's answer is written only when this claim
   * still holds the lease and the cluster's next step is still the one asked of the driver (a change meanwhile,
   * e.g. a delete request, supersedes it: the next pass asks for the new step). The lease is cleared.
   */
  private async record(claim: Claim, planned: ReconcileStep | null, answer: DriverAnswer): Promise<{ acted: boolean; outcome: StepOutcome }> {
    const { id, token, now } = claim;
    const tx = this.txHost.tx;
    const held: unknown[] = await tx.query(`SELECT id FROM clusters WHERE id = $1 AND reconcile_lease_token = $2 FOR UPDATE`, [id, token]);
    if (!held.length) return { acted: false, outcome: 'superseded' }; // the lease passed and another replica took the cluster
    const c = await tx.getRepository(ClusterEntity).findOneByOrFail({ id });
    const step = nextReconcileStep(c);
    let result: { acted: boolean; outcome: StepOutcome } = { acted: false, outcome: 'superseded' };
    if (c.deletedAt === null && sameStep(step, planned)) result = await this.process(c, step, answer, now);
    await tx.query(`UPDATE clusters SET reconcile_lease_until = NULL, reconcile_lease_token = NULL WHERE id = $1`, [id]);
    return result;
  }

  private async process(c: ClusterEntity, step: ReconcileStep | null, answer: DriverAnswer, now: Date): Promise<{ acted: boolean; outcome: StepOutcome }> {
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
    return { acted: true, outcome: 'completed' };
  }

  /**
   * Health observation of settled clusters: those not observed for OBSERVE_EVERY_SECONDS are claimed in
   * batches (oldest observation first, OBSERVE_BATCH_SIZE a claim, up to OBSERVE_PARALLEL_BATCHES at once),
   * observed in one driver call per batch, and recorded in one transaction per batch. Lost contact moves a
   * cluster to `unknown` (recovered by the next successful observation), otherwise `actualState` is
   * refreshed. Answers how many were lost.
   */
  private async observeDue(exclude: number[]): Promise<number> {
    const skip = [...exclude];
    let budget = OBSERVE_BATCHES_PER_PASS;
    let lost = 0;
    let fatal: unknown = null;
    const loop = async () => {
      while (fatal === null && !this.stopped) {
        if (budget <= 0) {
          this.rerun = true; // more are due: the next pass follows at once
          return;
        }
        budget--;
        try {
          const batch = await this.claimObservations(skip);
          if (!batch) return;
          const n = await this.observeBatch(batch, skip); // (not `lost += await`: the loops run side by side)
          lost += n;
          if (batch.ids.length < OBSERVE_BATCH_SIZE) return;
        } catch (err) {
          fatal = err;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(OBSERVE_PARALLEL_BATCHES, this.config.RECONCILE_CONCURRENCY) }, loop));
    if (fatal !== null) throw fatal;
    return lost;
  }

  /** Leases up to OBSERVE_BATCH_SIZE settled clusters due for observation (one short statement). */
  private async claimObservations(exclude: number[]): Promise<{ ids: number[]; token: string; now: Date } | null> {
    const now = this.clock.now();
    const token = randomUUID();
    const rows: { id: string }[] = await this.dataSource.transaction(async (m) => {
      // The planner underestimates the settled set (it guesses `version IS NOT DISTINCT FROM observed_version`
      // rarely holds) and would collect every due row by bitmap and sort them; walking clusters_observe_idx in
      // order stops after the batch (about 1 ms instead of 50-80 ms at 100,000 clusters).
      await m.query(`SET LOCAL enable_bitmapscan = off`);
      return m.query(
        `WITH claimed AS (
           UPDATE clusters SET reconcile_lease_until = $4, reconcile_lease_token = $5
            WHERE id IN (SELECT id FROM clusters
                          WHERE ${OBSERVE_CANDIDATE_PREDICATE}
                            AND (observed_at IS NULL OR observed_at <= $1)
                            AND (reconcile_lease_until IS NULL OR reconcile_lease_until <= $2)
                            AND NOT (id = ANY($3::bigint[]))
                          ORDER BY observed_at NULLS FIRST, id
                          LIMIT ${OBSERVE_BATCH_SIZE}
                          FOR UPDATE SKIP LOCKED)
            RETURNING id)
         SELECT id FROM claimed`,
        [new Date(now.getTime() - this.config.OBSERVE_EVERY_SECONDS * 1000), now, exclude, this.leaseUntil(now), token],
      );
    });
    return rows.length ? { ids: rows.map((r) => Number(r.id)), token, now } : null;
  }

  /** One driver call for the batch (no transaction open), then one record transaction. Answers how many were lost. */
  private async observeBatch(batch: { ids: number[]; token: string; now: Date }, skip: number[]): Promise<number> {
    const { ids, token, now } = batch;
    let seen: Map<number, DriverObservation>;
    try {
      const clusters = await this.dataSource.getRepository(ClusterEntity).findBy({ id: In(ids) });
      this.metrics.reconcilerObserveBatches.inc();
      seen = await this.callDriver('a batch observation', () => this.driver.observeMany(clusters, now));
    } catch (err) {
      // The provider's list call failed: nothing is known about these clusters; they are asked for again next pass.
      this.logger.error({ err, clusters: ids.length }, 'Observing a batch of clusters failed');
      this.metrics.backgroundErrors.inc({ job: 'reconciler' });
      skip.push(...ids);
      await this.dataSource.query(
        `UPDATE clusters SET reconcile_lease_until = NULL, reconcile_lease_token = NULL WHERE id = ANY($1::bigint[]) AND reconcile_lease_token = $2`,
        [ids, token],
      );
      return 0;
    }
    const lost = await this.cls.run(() =>
      this.txHost.withTransaction(async () => {
        const tx = this.txHost.tx;
        const held: { id: string }[] = await tx.query(
          `SELECT id FROM clusters WHERE id = ANY($1::bigint[]) AND reconcile_lease_token = $2 ORDER BY id FOR UPDATE`,
          [ids, token],
        );
        const clusters = held.length ? await tx.getRepository(ClusterEntity).findBy({ id: In(held.map((h) => Number(h.id))) }) : [];
        const healthy: { id: number; status: string; version: string | null }[] = [];
        let n = 0;
        for (const c of clusters) {
          // Changed since the claim (e.g. a stop request): the observation no longer speaks for it.
          if (!isSettled(c)) {
            skip.push(c.id);
            continue;
          }
          const o = seen.get(Number(c.id)) ?? { ok: false, error: 'The cluster driver did not report the cluster' };
          if (o.ok) {
            healthy.push({ id: c.id, status: o.status ?? c.status, version: o.version ?? c.observedVersion });
          } else {
            await this.fail(
              c,
              { kind: 'transition', step: 'observe', to: { status: c.status, provisionStatus: c.provisionStatus }, fulfilsDesired: false, auditType: 'CLUSTER_FAILED' },
              o.error ?? 'The driver lost contact with the cluster',
              now,
            );
            n++;
          }
        }
        if (healthy.length) {
          await tx.query(
            `UPDATE clusters c SET observed_at = $1, observed_status = v.status, observed_version = v.version, row_version = c.row_version + 1,
                    reconcile_lease_until = NULL, reconcile_lease_token = NULL
               FROM unnest($2::bigint[], $3::text[], $4::text[]) AS v(id, status, version)
              WHERE c.id = v.id`,
            [now, healthy.map((h) => h.id), healthy.map((h) => h.status), healthy.map((h) => h.version)],
          );
        }
        // The rest (lost, changed) give their lease back too.
        if (healthy.length < held.length) {
          await tx.query(
            `UPDATE clusters SET reconcile_lease_until = NULL, reconcile_lease_token = NULL WHERE id = ANY($1::bigint[]) AND reconcile_lease_token = $2`,
            [ids, token],
          );
        }
        this.metrics.reconcilerObservations.inc({ result: 'healthy' }, healthy.length);
        this.metrics.reconcilerObservations.inc({ result: 'lost' }, n);
        return n;
      }),
    );
    return lost;
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

  private async fail(c: ClusterEntity, step: DriverStep, error: string, now: Date): Promise<void> {
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

  /**
   * An unexpected error (not a driver answer): back off without changing the status. The lease is given back,
   * except after a timeout: the abandoned call may still be working, so nobody calls the driver for this
   * cluster again before the lease has run out.
   */
  private async recordCrash(claim: Claim, err: Error): Promise<void> {
    const now = this.clock.now();
    const keepLease = err instanceof DriverTimeoutError;
    await this.dataSource.query(
      `UPDATE clusters SET attempts = attempts + 1, last_error = $3,
              next_attempt_at = $4::timestamptz + make_interval(secs => LEAST(300, 5 * power(2, attempts))),
              reconcile_lease_until = CASE WHEN $5 THEN reconcile_lease_until END,
              reconcile_lease_token = CASE WHEN $5 THEN reconcile_lease_token END
        WHERE id = $1 AND reconcile_lease_token = $2`,
      [claim.id, claim.token, `Internal error while reconciling: ${err.message}`.slice(0, 500), now, keepLease],
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
