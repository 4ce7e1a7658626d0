import { Injectable, Logger } from '@nestjs/common';
import { performance } from 'perf_hooks';
import { setImmediate } from 'timers/promises';
import { DataSource } from 'typeorm';
import { InjectBackgroundDataSource } from '../database/background-pool';
import { ClusterEntity } from '../clusters/cluster.entity';
import { nextReconcileStep, ReconcileStep } from '../clusters/cluster-state-machine';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import type { BackgroundJob, PassContext } from '../jobs/background-job';
import { BackgroundJobs } from '../jobs/background-jobs.service';
import type { JobLoop } from '../jobs/job-loop';
import { MetricsService } from '../metrics/metrics.service';
import { Claim, ClusterLeases } from './cluster-leases';
import { ClusterObserver } from './cluster-observer';
import { ClusterStepRecorder, StepRecord } from './cluster-step-recorder';
import { DriverAnswer, DriverCalls, DriverTimeoutError } from './driver-calls';

export { OBSERVE_BATCH_SIZE } from './cluster-observer';

/** Clusters claimed per pass at least (each claim, driver call and record on its own); more with more workers. */
const MIN_PASS_CLAIMS = 50;

/**
 * Claims per worker and pass: a pass ends with its workers draining (the last driver calls and records) and the
 * observation of settled clusters, so a burst is worked in long passes (16 workers: 512 claims, about 3 s at
 * 100 ms per driver call) rather than many short ones.
 */
const CLAIMS_PER_WORKER = 32;

/** A claim taken ahead, and when (performance.now()) it was taken. */
interface Ahead {
  claim: Claim;
  at: number;
}

/** What the driver answered for a claim: to be recorded. */
interface StepCall {
  claim: Claim;
  planned: ReconcileStep | null;
  answer: DriverAnswer;
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
 *  1. claims one due cluster (`ClusterLeases`: a lease in one short `FOR UPDATE SKIP LOCKED` statement),
 *  2. asks the driver for the one next step of the state machine, outside any transaction (`DriverCalls`,
 *     bounded by half the lease),
 *  3. records it in one short transaction while the lease is still the claim's (`ClusterStepRecorder`).
 * A worker's claim of its next cluster and its record of the last one run while its driver call does (`pass`), so
 * its driver calls follow each other back to back. One step per cluster runs at a time across all replicas,
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
    // A loop's own SQL runs on the background pool (background-pool.ts).
    @InjectBackgroundDataSource() private readonly dataSource: DataSource,
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
   * Each worker keeps its driver calls back to back: when it starts on a claim, the next cluster is claimed
   * ahead (at most one claim ahead per worker, in a queue any idle worker takes from first), and when the driver
   * has answered, the step is recorded while the worker already calls the driver for its next claim (at most one
   * record in flight per worker). So the claim and record transactions overlap the driver latency instead of
   * adding to it. Between steps a worker yields the event loop (`setImmediate`), so a request's callbacks are not
   * queued behind a run of step continuations.
   */
  async pass(ctx: PassContext): Promise<ReconcilePass> {
    const seen = new Set<number>();
    const workers = this.config.RECONCILE_CONCURRENCY;
    let moved = 0;
    let budget = Math.max(MIN_PASS_CLAIMS, CLAIMS_PER_WORKER * workers);
    let fatal: unknown = null;
    /** A claim found nothing due: no more claims this pass (one empty claim per pass at rest). */
    let drained = false;
    /** Claimed ahead, waiting for a worker. */
    const ready: Ahead[] = [];
    /** Claims ahead under way. */
    const claiming = new Set<Promise<void>>();
    const stopped = () => fatal !== null || ctx.signal.aborted;

    /** Leases the next due cluster this pass has not seen; null when none is (or the pass is stopping). */
    const claimNext = async (): Promise<Claim | null> => {
      while (budget > 0 && !drained && !stopped()) {
        budget--;
        let claim: Claim | null;
        try {
          claim = await this.leases.claim([...seen]);
        } catch (err) {
          fatal ??= err;
          return null;
        }
        if (!claim) {
          drained = true;
          return null;
        }
        if (seen.has(claim.id)) {
          // This claim's exclusion list was taken before another worker claimed and recorded the cluster
          // (e.g. while it waited for a pooled connection): one step per cluster and pass, so give it back.
          await this.giveBack(claim);
          continue;
        }
        seen.add(claim.id);
        if (stopped()) {
          await this.giveBack(claim);
          return null;
        }
        return claim;
      }
      return null;
    };

    /** Claims one cluster ahead into `ready`, unless every worker has one ahead already. */
    const claimAhead = () => {
      if (ready.length + claiming.size >= workers || budget <= 0 || drained || stopped()) return;
      const claimed: Promise<void> = claimNext()
        .then((claim) => {
          if (claim) ready.push({ claim, at: performance.now() });
        })
        .finally(() => claiming.delete(claimed));
      claiming.add(claimed);
    };

    /** The worker's next claim: one claimed ahead, else a claim ahead under way, else a claim of its own. */
    const take = async (): Promise<Ahead | null> => {
      for (;;) {
        if (stopped()) return null;
        const next = ready.shift();
        if (next) return next;
        if (claiming.size > 0) {
          await Promise.race(claiming);
          continue;
        }
        const claim = await claimNext();
        if (claim) return { claim, at: performance.now() };
        if (ready.length === 0 && claiming.size === 0) return null;
      }
    };

    const worker = async () => {
      let recording: Promise<void> = Promise.resolve();
      for (;;) {
        // Between steps, the event loop serves what is queued (requests) before this worker goes on.
        await setImmediate();
        const next = await take();
        if (!next) break;
        claimAhead();
        const call = await this.call(next, ctx);
        // At most one record in flight per worker: the previous one commits while this driver call ran.
        await recording;
        if (!call) continue;
        recording = this.record(call, ctx).then((result) => {
          if (!result) return;
          // Counted after the step's transaction committed.
          this.metrics.reconcilerSteps.inc({ outcome: result.outcome });
          if (result.acted) moved++;
        });
      }
      await recording;
    };
    await Promise.all(Array.from({ length: workers }, worker));
    // Claims ahead that no worker took (the pass stopped or failed): their leases are given back.
    await Promise.all(claiming);
    await Promise.all(ready.splice(0).map((a) => this.giveBack(a.claim)));
    if (fatal !== null) throw fatal;
    const observed = await this.observer.observeDue([...seen], ctx);
    return { moved: moved + observed.lost, more: observed.more };
  }

  /**
   * The driver's answer for a claim (no transaction open). A claim that waited in the queue for more than a
   * quarter of the lease first renews its lease, so the record still holds it after a driver call of up to half
   * the lease. Null when an unexpected error backed the cluster off, or the lease was lost meanwhile.
   */
  private async call(next: Ahead, ctx: PassContext): Promise<StepCall | null> {
    let claim = next.claim;
    const { id } = claim;
    try {
      if (performance.now() - next.at > this.config.RECONCILE_LEASE_SECONDS * 250) {
        const renewed = await this.leases.renew(claim);
        if (!renewed) return null;
        claim = renewed;
      } else {
        // The step happens now, not when the cluster was claimed ahead.
        claim = { ...claim, now: this.clock.now() };
      }
      const c = await this.dataSource.getRepository(ClusterEntity).findOneByOrFail({ id });
      const planned = nextReconcileStep(c);
      const answer = await this.driver.forStep(c, planned, claim.now);
      return { claim, planned, answer };
    } catch (err) {
      await this.failed(claim, err, ctx);
      return null;
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
