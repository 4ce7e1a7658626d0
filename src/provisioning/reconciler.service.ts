import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { InjectBackgroundDataSource } from '../database/background-pool';
import { ClusterEntity } from '../clusters/cluster.entity';
import { nextReconcileStep } from '../clusters/cluster-state-machine';
import { AppConfig } from '../config/app-config';
import type { BackgroundJob, PassContext } from '../jobs/background-job';
import { BackgroundJobs } from '../jobs/background-jobs.service';
import type { JobLoop } from '../jobs/job-loop';
import { MetricsService } from '../metrics/metrics.service';
import { Claim, ClusterLeases } from './cluster-leases';
import { ClusterObserver } from './cluster-observer';
import { ClusterStepRecorder, StepRecord } from './cluster-step-recorder';
import { DriverCalls, DriverTimeoutError } from './driver-calls';

export { OBSERVE_BATCH_SIZE } from './cluster-observer';

/** Clusters claimed per pass at least (each claim, driver call and record on its own); more with more workers. */
const MIN_PASS_CLAIMS = 50;

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
 * So one step per cluster runs at a time across all replicas, driver latency overlaps up to the pool size, and a
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
   */
  async pass(ctx: PassContext): Promise<ReconcilePass> {
    const seen = new Set<number>();
    let moved = 0;
    let budget = Math.max(MIN_PASS_CLAIMS, 4 * this.config.RECONCILE_CONCURRENCY);
    let fatal: unknown = null;
    /** A claim found nothing due: the other workers stop claiming too (one empty claim per pass at rest). */
    let drained = false;
    const worker = async () => {
      while (budget > 0 && fatal === null && !drained && !ctx.signal.aborted) {
        budget--;
        let claim: Claim | null;
        try {
          claim = await this.leases.claim([...seen]);
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
          const given = claim;
          await this.leases.release(given).catch((err) => this.logger.error({ err, clusterId: given.id }, 'Giving back a lease failed'));
          continue;
        }
        seen.add(claim.id);
        const result = await this.reconcile(claim, ctx);
        if (!result) continue;
        // Counted after the step's transaction committed.
        this.metrics.reconcilerSteps.inc({ outcome: result.outcome });
        if (result.acted) moved++;
      }
    };
    await Promise.all(Array.from({ length: this.config.RECONCILE_CONCURRENCY }, worker));
    if (fatal !== null) throw fatal;
    const observed = await this.observer.observeDue([...seen], ctx);
    return { moved: moved + observed.lost, more: observed.more };
  }

  /** A claim: call the driver (no transaction open), then record. Null when an unexpected error backed the cluster off. */
  private async reconcile(claim: Claim, ctx: PassContext): Promise<StepRecord | null> {
    const { id, now } = claim;
    try {
      const c = await this.dataSource.getRepository(ClusterEntity).findOneByOrFail({ id });
      const planned = nextReconcileStep(c);
      const answer = await this.driver.forStep(c, planned, now);
      return await this.recorder.record(claim, planned, answer);
    } catch (err) {
      ctx.error(err, { clusterId: id }, 'Reconciling a cluster failed');
      // After a timeout the abandoned call may still be working: the lease is kept until it runs out.
      const error = `Internal error while reconciling: ${(err as Error).message}`;
      await this.leases.backOff(claim, error, err instanceof DriverTimeoutError).catch((e) => this.logger.error({ err: e, clusterId: id }, 'Recording a reconcile error failed'));
      return null;
    }
  }
}
