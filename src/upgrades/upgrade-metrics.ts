import { Injectable } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { MetricsService } from '../metrics/metrics.service';
import { SCHEDULED_UPGRADE_STATUSES } from './scheduled-cluster-upgrade.entity';

/** Scheduled upgrades on the process's metrics registry, read from the database when Prometheus scrapes. */
@Injectable()
export class UpgradeMetrics {
  constructor(metrics: MetricsService) {
    const upgrades = new Gauge({
      name: 'cms_scheduled_upgrades',
      help: 'Scheduled cluster upgrades by status',
      labelNames: ['status'] as const,
      registers: [metrics.fleetRegistry],
      collect: async () => {
        const rows: { status: string; n: number }[] = await metrics.safeQuery(
          `SELECT status, count(*)::int AS n FROM scheduled_cluster_upgrades GROUP BY 1`,
        );
        for (const s of SCHEDULED_UPGRADE_STATUSES) upgrades.set({ status: s }, 0);
        for (const r of rows) upgrades.set({ status: r.status }, r.n);
      },
    });
  }
}
