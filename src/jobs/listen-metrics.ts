import { Gauge } from 'prom-client';
import type { MetricsService } from '../metrics/metrics.service';

export interface ListenMetrics {
  /** 1 while the listener's LISTEN connection is listening, else 0. */
  up: Gauge<'listener'>;
  /** Seconds from the loss of the LISTEN connection until it listened again, of the last outage. */
  lastOutage: Gauge<'listener'>;
}

const byService = new WeakMap<MetricsService, ListenMetrics>();

/** The LISTEN connections' gauges on the app's registry, made once per app (labelled by the listener's purpose). */
export function listenMetrics(metrics: MetricsService): ListenMetrics {
  let found = byService.get(metrics);
  if (!found) {
    found = {
      up: new Gauge({
        name: 'cms_listen_up',
        help: 'Whether the LISTEN connection of a listener (background jobs, principal cache, driver registry) is listening (1) or not (0)',
        labelNames: ['listener'],
        registers: [metrics.registry],
      }),
      lastOutage: new Gauge({
        name: 'cms_listen_last_outage_seconds',
        help: 'How long the last outage of a listener\'s LISTEN connection lasted, from its loss until it listened again',
        labelNames: ['listener'],
        registers: [metrics.registry],
      }),
    };
    byService.set(metrics, found);
  }
  return found;
}
