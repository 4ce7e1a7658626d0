import { Injectable, Logger } from '@nestjs/common';
import { performance } from 'perf_hooks';
import { setImmediate } from 'timers/promises';
import { nextReconcileStep } from '../clusters/cluster-state-machine';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import type { BackgroundJob, PassContext } from '../jobs/background-job';
import { BackgroundJobs } from '../jobs/background-jobs.service';
import type { JobLoop } from '../jobs/job-loop';
import { MetricsService } from '../metrics/metrics.service';
import { Claim, ClaimedCluster, ClusterLeases } from './cluster-leases';
import { ClusterObserver } from './cluster-observer';
import { ClusterStepRecorder, StepCall, StepRecord } from './cluster-step-recorder';
import { DriverCalls, DriverTimeoutError } from './driver-calls';

export { OBSERVE_BATCH_SIZE } from './cluster-observer';

/** Clusters claimed per pass at least (each claim, driver call and record on its own); more with more workers. */
const MIN_PASS_CLAIMS = 50;

/**
 * Claims per worker and pass: a pass ends with its workers draining (the last driver calls and records) and the
 * observation of settled clusters, so a burst is worked in long passes (16 workers: 512 claims, about 3 s at
 * 100 ms per driver call) rather than many short ones.
 */
const CLAIMS_PER_WORKER = 32;

/**
 * Steps recorded in one transaction at most. Records queue while the record transactions (one connection of the
 * background pool fewer than it has, the last one left to claims and the rest of the pass) are under way and go
 * together in the next: one BEGIN, one locking read and one COMMIT for several steps (each step still writes its
 * own row update, audit and activity rows).
 */
const RECORD_BATCH = 8;

/** Records in flight per worker: a worker goes on to its next driver call until this many wait to commit. */
const RECORDS_PER_WORKER = 2;

/** A claim taken ahead, and when (performance.now()) it was taken. */
interface Ahead {
  claim: ClaimedCluster;
  at: number;
}

/** A step waiting for its record transaction. */
interface QueuedRecord {
  call: StepCall;
  done(result: StepRecord | null): void;
}

interface ReconcilePass {
  /** Clusters that moved (one audit row each). */
  moved: number;
  /** Observations are still due: the next pass follows at once. */
  more: boolean;
}

/**
 * The provisioning reconciler: the `clusters` table is the desired state. A pass runs RECONCILE_CONCURRENCY
 * workers; each repeatedly
 *  1. takes a claimed due cluster (`ClusterLeases`: leases, each with a token of its own, and the rows in one
 *     short `FOR UPDATE SKIP LOCKED` statement for several workers),
 *  2. asks the driver for the one next step of the state machine, outside any transaction (`DriverCalls`,
 *     bounded by half the lease),
 *  3. has it recorded in a short transaction while the lease is still the claim's (`ClusterStepRecorder`; the
 *     steps of several workers share one transaction).
 * Claims of next clusters and records of the last ones run while the driver calls do (`pass`), so a worker's
 * driver calls follow each other back to back. One step per cluster runs at a time across all replicas,
 * driver latency overlaps up to the pool size, and a
 * crashed replica's clusters are taken over when their leases pass. Then settled clusters are observed in
 * batches (`ClusterObserver`). All state is in the row, so a restarted replica resumes where the last one stopped.
 *
 * The loop (jobs module) polls every RECONCILE_INTERVAL_SECONDS, at least every quarter of OBSERVE_EVERY_SECONDS
 * (observations are due by time only), and is woken by `cms_cluster_changed`: a committed cluster change NOTIFies
 * it (migration ClusterChangeNotify), so the interval can be long at rest. It keeps going while clusters move.
 */
@Injectable()
export class ReconcilerService implements BackgroundJob<ReconcilePass> {
  private readonly logger = new Logger('Reconciler');
  private readonly loop: JobLoop<ReconcilePass>;

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly metrics: MetricsService,
    private readonly leases: ClusterLeases,
    private readonly driver: DriverCalls,
    private readonly recorder: ClusterStepRecorder,
    private readonly observer: ClusterObserver,
    jobs: BackgroundJobs,
  ) {
    this.loop = jobs.register(this, {
      name: 'reconciler',
      logContext: 'Reconciler',
      everyMs: Math.max(Math.min(config.RECONCILE_INTERVAL_SECONDS, config.OBSERVE_EVERY_SECONDS / 4), 0.1) * 1000,
      listen: 'cms_cluster_changed',
      again: (r) => r.moved > 0 || r.more,
    });
  }

  /** One pass now (see `pass`); answers how many clusters moved. */
  async runOnce(): Promise<number> {
    return (await this.loop.runPass()).moved;
  }

  /**
   * One pass over the due clusters: at most one step per cluster, RECONCILE_CONCURRENCY at a time, then the
   * observation of settled clusters that are due.
   *
   * Each worker keeps its driver calls back to back:
   *  - clusters are claimed ahead into a queue any idle worker takes from: when it holds half the workers or
   *    fewer, one claim statement leases enough for every worker (with their rows, so a driver call needs no
   *    read of its own);
   *  - when the driver has answered, the step is recorded while the worker already calls the driver for its next
   *    claims (at most RECORDS_PER_WORKER records in flight per worker); records wait in a queue for one of
   *    `recordTransactions` record transactions, each of which takes up to RECORD_BATCH of them, so a step's
   *    record shares its BEGIN, locking read and COMMIT with the other steps that ended meanwhile.
   * So the claim and record transactions overlap the driver latency instead of adding to it, and cost fewer
   * round trips per step. Between steps a worker yields the event loop (`setImmediate`), so a request's
   * callbacks are not queued behind a run of step continuations.
   */
  async pass(ctx: PassContext): Promise<ReconcilePass> {
    const seen = new Set<number>();
    const workers = this.config.RECONCILE_CONCURRENCY;
    let moved = 0;
    let budget = Math.max(MIN_PASS_CLAIMS, CLAIMS_PER_WORKER * workers);
    let fatal: unknown = null;
    /** A claim found fewer due than it asked for: no more claims this pass (one empty claim per pass at rest). */
    let drained = false;
    /** Claimed ahead, waiting for a worker. */
    const ready: Ahead[] = [];
    /** The claim statement under way (one at a time). */
    let claiming: Promise<void> | null = null;
    /** Steps waiting for a record transaction, and record transactions under way. */
    const toRecord: QueuedRecord[] = [];
    let recording = 0;
    const recordTransactions = Math.max(1, this.config.BACKGROUND_DATABASE_POOL_SIZE - 1);
    const stopped = () => fatal !== null || ctx.signal.aborted;

    /** Leases up to `n` due clusters this pass has not seen into `ready`. */
    const claimInto = async (n: number): Promise<void> => {
      while (budget > 0 && !drained && !stopped()) {
        const want = Math.min(n, budget);
        let claimed: ClaimedCluster[];
        try {
          claimed = await this.leases.claim([...seen], want);
        } catch (err) {
          fatal ??= err;
          return;
        }
        budget -= Math.max(1, claimed.length);
        if (claimed.length < want) drained = true;
        const at = performance.now();
        let fresh = 0;
        for (const claim of claimed) {
          // A claim whose exclusion list was taken before another worker claimed and recorded the cluster (one
          // step per cluster and pass), or a pass that is stopping: the lease is given back.
          if (seen.has(claim.id) || stopped()) {
            await this.giveBack(claim);
            continue;
          }
          seen.add(claim.id);
          ready.push({ claim, at });
          fresh++;
        }
        if (fresh > 0) return;
      }
    };

    /** Claims ahead when the queue holds half the workers or fewer: enough for every worker, in one statement. */
    const claimAhead = () => {
      if (claiming || ready.length > workers / 2 || budget <= 0 || drained || stopped()) return;
      claiming = claimInto(workers - ready.length).finally(() => (claiming = null));
    };

    /** The worker's next claim: from the queue, else after the claim under way; null when there is none. */
    const take = async (): Promise<Ahead | null> => {
      for (;;) {
        if (stopped()) return null;
        const next = ready.shift();
        claimAhead();
        if (next) return next;
        if (!claiming) return null;
        await claiming;
      }
    };

    /** Starts record transactions for queued steps while fewer than `recordTransactions` are under way. */
    const flushRecords = () => {
      while (recording < recordTransactions && toRecord.length > 0) {
        const batch = toRecord.splice(0, RECORD_BATCH);
        recording++;
        this.recordBatch(
          batch.map((q) => q.call),
          ctx,
        )
          .then(
            (results) => batch.forEach((q, i) => q.done(results[i])),
            () => batch.forEach((q) => q.done(null)),
          )
          .finally(() => {
            recording--;
            flushRecords();
          });
      }
    };
    const record = (call: StepCall) =>
      new Promise<StepRecord | null>((done) => {
        toRecord.push({ call, done });
        flushRecords();
      });

    const worker = async () => {
      const recorded: Promise<void>[] = [];
      for (;;) {
        // Between steps, the event loop serves what is queued (requests) before this worker goes on.
        await setImmediate();
        const next = await take();
        if (!next) break;
        const call = await this.call(next, ctx);
        if (!call) continue;
        // At most RECORDS_PER_WORKER records in flight per worker: the oldest commits while the driver calls run.
        if (recorded.length >= RECORDS_PER_WORKER) await recorded.shift();
        recorded.push(
          record(call).then((result) => {
            if (!result) return;
            // Counted after the step's transaction committed.
            this.metrics.reconcilerSteps.inc({ outcome: result.outcome });
            if (result.acted) moved++;
          }),
        );
      }
      await Promise.all(recorded);
    };
    await Promise.all(Array.from({ length: workers }, worker));
    // Claims ahead that no worker took (the pass stopped or failed): their leases are given back.
    await claiming;
    await Promise.all(ready.splice(0).map((a) => this.giveBack(a.claim)));
    if (fatal !== null) throw fatal;
    const observed = await this.observer.observeDue([...seen], ctx);
    return { moved: moved + observed.lost, more: observed.more };
  }

  /**
   * The driver's answer for a claim (no transaction open), planned on the row the claim read. A claim that waited
   * in the queue for more than a quarter of the lease first renews its lease (reading the row again), so the
   * record still holds it after a driver call of up to half the lease. Null when an unexpected error backed the
   * cluster off, or the lease was lost meanwhile. A change to the row after it was read (e.g. a delete request)
   * is found by the record, which then writes nothing for this step.
   */
  private async call(next: Ahead, ctx: PassContext): Promise<StepCall | null> {
    let claim = next.claim;
    try {
      if (performance.now() - next.at > this.config.RECONCILE_LEASE_SECONDS * 250) {
        const renewed = await this.leases.renew(claim);
        if (!renewed) return null;
        claim = renewed;
      } else {
        // The step happens now, not when the cluster was claimed ahead.
        claim = { ...claim, now: this.clock.now() };
      }
      const c = claim.cluster;
      const planned = nextReconcileStep(c);
      const answer = await this.driver.forStep(c, planned, claim.now);
      return { claim, planned, answer };
    } catch (err) {
      await this.failed(claim, err, ctx);
      return null;
    }
  }

  /**
   * Records several steps in one transaction. When it fails (one step's unexpected error rolls back all of them),
   * each is recorded in a transaction of its own, so only the step that fails again backs its cluster off.
   */
  private async recordBatch(calls: StepCall[], ctx: PassContext): Promise<(StepRecord | null)[]> {
    if (calls.length === 1) return [await this.record(calls[0], ctx)];
    try {
      return await this.recorder.recordMany(calls);
    } catch (err) {
      this.logger.warn({ err, clusters: calls.map((c) => c.claim.id) }, 'Recording several steps together failed; recording them one by one');
      return Promise.all(calls.map((call) => this.record(call, ctx)));
    }
  }

  /** Records a driver answer. Null when an unexpected error backed the cluster off. */
  private async record({ claim, planned, answer }: StepCall, ctx: PassContext): Promise<StepRecord | null> {
    try {
      return await this.recorder.record(claim, planned, answer);
    } catch (err) {
      await this.failed(claim, err, ctx);
      return null;
    }
  }

  private async failed(claim: Claim, err: unknown, ctx: PassContext): Promise<void> {
    const { id } = claim;
    ctx.error(err, { clusterId: id }, 'Reconciling a cluster failed');
    // After a timeout the abandoned call may still be working: the lease is kept until it runs out.
    const error = `Internal error while reconciling: ${(err as Error).message}`;
    await this.leases.backOff(claim, error, err instanceof DriverTimeoutError).catch((e) => this.logger.error({ err: e, clusterId: id }, 'Recording a reconcile error failed'));
  }

  private async giveBack(claim: Claim): Promise<void> {
    await this.leases.release(claim).catch((err) => this.logger.error({ err, clusterId: claim.id }, 'Giving back a lease failed'));
  }
}
