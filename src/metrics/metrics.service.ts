import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DataSource } from 'typeorm';

interface PgPool {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/** Prometheus metrics of this process (one registry per app instance, so tests can run several). */
@Injectable()
export class MetricsService implements OnModuleDestroy {
  readonly registry = new Registry();

  readonly httpDuration = new Histogram({
    name: 'cms_http_request_duration_seconds',
    help: 'HTTP request latency by route template, method and status code',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly reconcilerSteps = new Counter({
    name: 'cms_reconciler_steps_total',
    help: 'Cluster reconciler steps by outcome (completed, pending, failed, recovered)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly schedulerTransitions = new Counter({
    name: 'cms_scheduler_transitions_total',
    help: 'Scheduled cluster upgrade transitions by target status',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  readonly backgroundErrors = new Counter({
    name: 'cms_background_job_errors_total',
    help: 'Background job passes that failed, by job',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });

  readonly authenticationFailures = new Counter({
    name: 'cms_authentication_failures_total',
    help: 'Requests refused with 401, by reason (missing, malformed, unknown, expired, revoked, address, oidc)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly rateLimitRejections = new Counter({
    name: 'cms_rate_limit_rejections_total',
    help: 'Requests refused with 429, by limit (principal, address, authentication_failures)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  constructor(dataSource: DataSource) {
    // Every labelled counter is exported at 0 from the start, so rates and alerts work before the first event.
    for (const reason of ['missing', 'malformed', 'unknown', 'expired', 'revoked', 'address', 'oidc']) {
      this.authenticationFailures.inc({ reason }, 0);
    }
    for (const kind of ['principal', 'address', 'authentication_failures']) this.rateLimitRejections.inc({ kind }, 0);
    collectDefaultMetrics({ register: this.registry, prefix: 'cms_' });
    const pool = () => (dataSource.driver as unknown as { master?: PgPool }).master;
    new Gauge({
      name: 'cms_db_pool_connections',
      help: 'Database pool connections by state',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        const p = pool();
        this.set({ state: 'total' }, p?.totalCount ?? 0);
        this.set({ state: 'idle' }, p?.idleCount ?? 0);
        this.set({ state: 'waiting' }, p?.waitingCount ?? 0);
      },
    });
  }

  onModuleDestroy(): void {
    this.registry.clear();
  }
}
