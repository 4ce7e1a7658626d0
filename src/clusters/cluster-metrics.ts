import { Injectable } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { MetricsService } from '../metrics/metrics.service';
import { CLUSTER_STATUSES } from './cluster.entity';

/** The fleet's clusters on the process's metrics registry, read from the database when Prometheus scrapes. */
@Injectable()
export class ClusterMetrics {
  constructor(metrics: MetricsService) {
    // One grouped count over indexed columns.
    const clusters = new Gauge({
      name: 'cms_clusters',
      help: 'Non-deleted clusters by status and cloud provider',
      labelNames: ['status', 'provider'] as const,
      registers: [metrics.fleetRegistry],
      collect: async () => {
        const rows: { status: string; provider: string; n: number }[] = await metrics.safeQuery(
          `SELECT status, cloud_provider AS provider, count(*)::int AS n FROM clusters WHERE deleted_at IS NULL GROUP BY 1, 2`,
        );
        clusters.reset();
        for (const s of CLUSTER_STATUSES) clusters.set({ status: s, provider: 'any' }, 0);
        for (const r of rows) clusters.set({ status: r.status, provider: r.provider }, r.n);
      },
    });
  }
}
