import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { DataSource, In } from 'typeorm';
import { InjectBackgroundDataSource } from '../database/background-pool';
import { ClusterEntity } from '../clusters/cluster.entity';
import { AppConfig } from '../config/app-config';
import type { PassContext } from '../jobs/background-job';
import { MetricsService } from '../metrics/metrics.service';
import type { ClusterObservation } from '../cluster-drivers/driver-contract';
import { healthy as isHealthy, observedStatus } from './step-outcome';
import { ClusterLeases, ObservationClaim } from './cluster-leases';
import { ClusterStepRecorder } from './cluster-step-recorder';
import { DriverCalls } from './driver-calls';
import { setImmediate } from 'timers/promises';

/** Settled clusters claimed, observed (one driver call) and recorded (one transaction) together. */
export const OBSERVE_BATCH_SIZE = 500;
/** Observation batches in flight at once per replica (bounded by RECONCILE_CONCURRENCY too). */
const OBSERVE_PARALLEL_BATCHES = 4;
/** Observation batches per pass; when there are more due the next pass follows at once. */
const OBSERVE_BATCHES_PER_PASS = 40;

/** The JS twin of OBSERVE_CANDIDATE_PREDICATE. */
const isSettled = (c: ClusterEntity) =>
  c.deletedAt === null &&
  (c.status === 'started' || c.status === 'stopped') &&
  c.desiredStatus === null &&
  c.version === c.observedVersion &&
  (c.observedGeneration == null || Number(c.observedGeneration) >= Number(c.generation));

export interface ObservationResult {
  /** Clusters that went to `unknown`. */
  lost: number;
  /** The pass's batch budget ran out with more due. */
  more: boolean;
}

/**
 * Health observation of settled clusters: those not observed for OBSERVE_EVERY_SECONDS are claimed in batches
 * (oldest observation first, OBSERVE_BATCH_SIZE a claim, up to OBSERVE_PARALLEL_BATCHES at once), observed in one
 * driver call per batch, and recorded in one transaction per batch. Lost contact moves a cluster to `unknown`
 * (recovered by the next successful observation), otherwise `actualState` is refreshed.
 */
@Injectable()
export class ClusterObserver {
  constructor(
    // A loop's own SQL runs on the background pool (background-pool.ts).
    @InjectBackgroundDataSource() private readonly dataSource: DataSource,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly cls: ClsService,
    private readonly config: AppConfig,
    private readonly metrics: MetricsService,
    private readonly leases: ClusterLeases,
    private readonly driver: DriverCalls,
    private readonly recorder: ClusterStepRecorder,
  ) {}

  /** Observes the settled clusters that are due, none of `exclude` (stepped in this pass). */
  async observeDue(exclude: number[], ctx: PassContext): Promise<ObservationResult> {
    const skip = [...exclude];
    let budget = OBSERVE_BATCHES_PER_PASS;
    let lost = 0;
    let more = false;
    let fatal: unknown = null;
    const loop = async () => {
      while (fatal === null && !ctx.signal.aborted) {
        if (budget <= 0) {
          more = true;
          return;
        }
        budget--;
        try {
          const batch = await this.leases.claimObservations(skip, OBSERVE_BATCH_SIZE);
          if (!batch) return;
          const n = await this.observeBatch(batch, skip, ctx); // (not `lost += await`: the loops run side by side)
          lost += n;
          if (batch.ids.length < OBSERVE_BATCH_SIZE) return;
          // Between batches, the event loop serves what is queued (requests) first.
          await setImmediate();
        } catch (err) {
          fatal = err;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(OBSERVE_PARALLEL_BATCHES, this.config.RECONCILE_CONCURRENCY) }, loop));
    if (fatal !== null) throw fatal;
    return { lost, more };
  }

  /** One driver call for the batch (no transaction open), then one record transaction. Answers how many were lost. */
  private async observeBatch(batch: ObservationClaim, skip: number[], ctx: PassContext): Promise<number> {
    const { ids, now } = batch;
    /** Clusters whose driver could not be asked: not judged, their lease given back. */
    const skipped = new Set<number>();
    let seen: Map<number, ClusterObservation>;
    try {
      const clusters = await this.dataSource.getRepository(ClusterEntity).findBy({ id: In(ids) });
      this.metrics.reconcilerObserveBatches.inc();
      const answer = await this.driver.observeMany(clusters);
      seen = answer.seen;
      if (answer.unreachable.size) {
        // A driver's list call failed: nothing is known about its clusters; they are asked for again next pass.
        for (const err of answer.failed) ctx.error(err, { clusters: answer.unreachable.size }, 'Observing a batch of clusters failed');
        skip.push(...answer.unreachable);
        if (answer.unreachable.size === ids.length) {
          await this.leases.releaseBatch(batch);
          return 0;
        }
      }
      for (const id of answer.unreachable) skipped.add(id);
    } catch (err) {
      // The specs could not be read, or the call failed as a whole: nothing is known; asked again next pass.
      ctx.error(err, { clusters: ids.length }, 'Observing a batch of clusters failed');
      skip.push(...ids);
      await this.leases.releaseBatch(batch);
      return 0;
    }
    return this.cls.run(() =>
      this.txHost.withTransaction(async () => {
        const tx = this.txHost.tx;
        const held = await this.leases.lockHeld(tx, batch);
        const clusters = held.length ? await tx.getRepository(ClusterEntity).findBy({ id: In(held) }) : [];
        const healthy: { id: number; status: string; version: string | null }[] = [];
        let n = 0;
        for (const c of clusters) {
          // Changed since the claim (e.g. a stop request): the observation no longer speaks for it.
          if (!isSettled(c)) {
            skip.push(c.id);
            continue;
          }
          if (skipped.has(Number(c.id))) continue;
          const seenOne = seen.get(Number(c.id));
          const o = seenOne
            ? isHealthy(seenOne)
              ? { ok: true, status: observedStatus(seenOne), version: seenOne.version }
              : { ok: false, error: seenOne.error?.message ?? 'The cluster driver does not find the cluster' }
            : { ok: false, error: 'The cluster driver did not report the cluster' };
          if (o.ok) {
            healthy.push({ id: c.id, status: o.status ?? c.status, version: o.version ?? c.observedVersion });
          } else {
            await this.recorder.fail(
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
        if (healthy.length < held.length) await this.leases.releaseBatch(batch, tx);
        this.metrics.reconcilerObservations.inc({ result: 'healthy' }, healthy.length);
        this.metrics.reconcilerObservations.inc({ result: 'lost' }, n);
        return n;
      }),
    );
  }
}
