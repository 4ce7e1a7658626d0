import { Injectable } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { OBSERVE_CANDIDATE_PREDICATE } from '../clusters/cluster.entity';
import { Clock } from '../common/clock';
import { MetricsService } from '../metrics/metrics.service';

/** How far the reconciler's observations lag, on the process's metrics registry (read when Prometheus scrapes). */
@Injectable()
export class ReconcilerMetrics {
  constructor(metrics: MetricsService, clock: Clock) {
    // The oldest observation among settled clusters: one row from the head of clusters_observe_idx. It stays
    // under OBSERVE_EVERY_SECONDS plus a pass while the replicas keep up with the fleet.
    const oldestObservation = new Gauge({
      name: 'cms_reconciler_oldest_observation_age_seconds',
      help: 'Age of the oldest driver observation among settled (started or stopped) clusters; 0 without any',
      registers: [metrics.fleetRegistry],
      collect: async () => {
        const rows: { at: Date | null }[] = await metrics.safeQuery(
          `SELECT (SELECT COALESCE(observed_at, created_at) FROM clusters WHERE ${OBSERVE_CANDIDATE_PREDICATE}
                    ORDER BY observed_at NULLS FIRST, id LIMIT 1) AS at`,
        );
        if (!rows.length) return; // database unreachable: keep the last value
        const at = rows[0].at;
        oldestObservation.set(at ? Math.max(0, (clock.now().getTime() - new Date(at).getTime()) / 1000) : 0);
      },
    });
  }
}
