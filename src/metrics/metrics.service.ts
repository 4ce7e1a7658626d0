import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { InjectBackgroundDataSource } from '../database/background-pool';
import { FleetMetricsLock } from './fleet-metrics-lock';
import { Executor } from '../executor/executor';
import { SERVICE_VERSION } from '../common/service-version';


interface PgPool {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/** Prometheus metrics of this process (one registry per app instance, so tests can run several). */
@Injectable()
export class MetricsService implements OnModuleDestroy {
  /**
   * For the fleet gauges' `collect`, read from the database when Prometheus scrapes, on the background pool (a scrape
   * never waits for a connection behind requests): a scrape during a database outage still answers (the gauges keep
   * their last values).
   */
  async safeQuery<T>(sql: string): Promise<T[]> {
    try {
      return (await this.background.query(sql)) as T[];
    } catch {
      return [];
    }
  }

  /** This process's own metrics. */
  readonly registry = new Registry();

  /**
   * Fleet-wide gauges: one figure for the whole database (e.g. src/clusters/cluster-metrics.ts registers here).
   * Exported only by the process holding the fleet metrics lock (`scrape`), so they are not counted once per replica.
   */
  readonly fleetRegistry = new Registry();

  private readonly fleetLock: FleetMetricsLock;

  /** The scrape: this process's metrics, and the fleet-wide gauges when this process holds the fleet metrics lock. */
  async scrape(): Promise<string> {
    const own = await this.registry.metrics();
    if (!(await this.fleetLock.held())) return own;
    return `${own}${own.endsWith('\n') ? '' : '\n'}${await this.fleetRegistry.metrics()}`;
  }

  readonly httpDuration = new Histogram({
    name: 'cms_http_request_duration_seconds',
    help: 'HTTP request latency by route template, method and status code',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly reconcilerSteps = new Counter({
    name: 'cms_reconciler_steps_total',
    help:
      'Cluster reconciler steps by outcome (completed, pending, failed: a retryable driver error, the cluster went to unknown; ' +
      'degraded: a terminal driver error; retrying: the driver could not be asked, backing off; recovered, idle; superseded: the cluster changed or ' +
      'the lease was lost while the driver was called, so the step was not recorded and is asked for again)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly reconcilerObservations = new Counter({
    name: 'cms_reconciler_observations_total',
    help: 'Observations of settled clusters by result (healthy, lost: the cluster went to unknown)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly reconcilerObserveBatches = new Counter({
    name: 'cms_reconciler_observe_batches_total',
    help: 'Batch observation calls to the cluster driver',
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
    help: 'Background job errors by loop: passes that failed, and single items a pass went on after (a cluster, a delivery, a table)',
    labelNames: ['loop'] as const,
    registers: [this.registry],
  });

  readonly jobPasses = new Counter({
    name: 'cms_job_passes_total',
    help: 'Background job passes by loop and outcome (ok, failed)',
    labelNames: ['loop', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly jobPassDuration = new Histogram({
    name: 'cms_job_pass_duration_seconds',
    help: 'Duration of background job passes, by loop',
    labelNames: ['loop'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });

  readonly authenticationFailures = new Counter({
    name: 'cms_authentication_failures_total',
    help: 'Requests refused with 401, by reason (missing, malformed, unknown, expired, revoked, exhausted, address, oidc)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly principalCacheHits = new Counter({
    name: 'cms_principal_cache_hits_total',
    help: 'Personal access token authentications answered from the principal cache (no database statement)',
    registers: [this.registry],
  });

  readonly principalCacheMisses = new Counter({
    name: 'cms_principal_cache_misses_total',
    help: 'Personal access token authentications that read the database (token not cached, expired entry, or organisation not cached yet)',
    registers: [this.registry],
  });

  readonly principalCacheInvalidations = new Counter({
    name: 'cms_principal_cache_invalidations_total',
    help:
      'Principal cache invalidations by cause (token, user, organisation, slug: a NOTIFY from any replica; all: a TRUNCATE; ' +
      'local: a write by this replica, on commit; listener: the LISTEN connection was (re)made or lost, so the cache was emptied)',
    labelNames: ['cause'] as const,
    registers: [this.registry],
  });

  /** Entries of the principal cache; the cache sets how to count them. */
  principalCacheSize: () => number = () => 0;

  readonly principalCacheEntries = new Gauge({
    name: 'cms_principal_cache_entries',
    help: 'Personal access tokens held by the principal cache of this replica',
    registers: [this.registry],
    collect: () => {
      this.principalCacheEntries.set(this.principalCacheSize());
    },
  });

  readonly rateLimitRejections = new Counter({
    name: 'cms_rate_limit_rejections_total',
    help: 'Requests refused with 429, by limit (principal, address, authentication_failures, node_registration)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly webhookDeliveries = new Counter({
    name: 'cms_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome (delivered, retrying: failed and scheduled again, failed: given up)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly retentionDeletedRows = new Counter({
    name: 'cms_retention_deleted_rows_total',
    help: 'Rows deleted by the retention job, by table (webhook_deliveries: those of the deleted webhook events)',
    labelNames: ['table'] as const,
    registers: [this.registry],
  });

  constructor(
    dataSource: DataSource,
    @InjectBackgroundDataSource() private readonly background: DataSource,
    config: AppConfig,
    executor: Executor,
  ) {
    this.fleetLock = new FleetMetricsLock(config, (dataSource.options as { url?: string }).url);
    // Every labelled counter is exported at 0 from the start, so rates and alerts work before the first event.
    for (const reason of ['missing', 'malformed', 'unknown', 'expired', 'revoked', 'address', 'oidc']) {
      this.authenticationFailures.inc({ reason }, 0);
    }
    for (const kind of ['principal', 'address', 'authentication_failures', 'node_registration']) this.rateLimitRejections.inc({ kind }, 0);
    for (const cause of ['token', 'user', 'organisation', 'slug', 'all', 'local', 'listener']) this.principalCacheInvalidations.inc({ cause }, 0);
    for (const outcome of ['completed', 'pending', 'failed', 'degraded', 'retrying', 'recovered', 'superseded']) this.reconcilerSteps.inc({ outcome }, 0);
    for (const result of ['healthy', 'lost']) this.reconcilerObservations.inc({ result }, 0);
    for (const loop of ['reconciler', 'scheduler', 'dashboard-health', 'webhooks', 'retention']) this.backgroundErrors.inc({ loop }, 0);
    for (const outcome of ['delivered', 'retrying', 'failed']) this.webhookDeliveries.inc({ outcome }, 0);

    new Gauge({
      name: 'cms_build_info',
      help: 'Version of the running service (always 1)',
      labelNames: ['version', 'node'] as const,
      registers: [this.registry],
    }).set({ version: SERVICE_VERSION, node: process.version }, 1);

    const outboxLag = new Gauge({
      name: 'cms_webhook_outbox_lag_seconds',
      help: 'Age of the oldest webhook delivery that is due and not yet delivered (0 when none is waiting)',
      registers: [this.fleetRegistry],
      collect: async () => {
        const [row] = await this.safeQuery<{ lag: number | null }>(
          `SELECT EXTRACT(EPOCH FROM now() - min(d.next_attempt_at))::float8 AS lag
             FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
            WHERE d.status = 'PENDING' AND s.enabled AND d.next_attempt_at <= now()`,
        );
        outboxLag.set(Math.max(0, row?.lag ?? 0));
      },
    });
    // The executor counts how its tasks end; a scrape reads the counts.
    const executorTasks = new Counter({
      name: 'cms_executor_tasks_total',
      help:
        'Tasks of the executor for expensive work on user input (src/worker/executor-tasks.ts) by task and outcome: ok, failed, ' +
        'timeout and out_of_memory (stopped, its worker replaced; the caller answered 422 or, for a cluster policy, its failurePolicy), ' +
        'refused (429); task "admission": policy dry-runs and scans refused before their first task',
      labelNames: ['task', 'outcome'] as const,
      registers: [this.registry],
      collect: () => {
        executorTasks.reset();
        for (const [key, n] of executor.outcomes) {
          const [task, outcome] = key.split(' ');
          executorTasks.inc({ task, outcome }, n);
        }
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'cms_' });
    // prom-client also exports the totals of these per-type gauges named like counters (`_total`), which promtool
    // reports; the per-type gauges (cms_nodejs_active_handles{type}, ...) stay, summed with sum() where needed.
    for (const name of ['handles', 'requests', 'resources']) this.registry.removeSingleMetric(`cms_nodejs_active_${name}_total`);
    const pools = { request: dataSource, background: this.background };
    new Gauge({
      name: 'cms_db_pool_connections',
      help: 'Database pool connections by pool (request, background) and state (total, idle, waiting: callers waiting for one)',
      labelNames: ['pool', 'state'] as const,
      registers: [this.registry],
      collect() {
        for (const [name, ds] of Object.entries(pools)) {
          // The pg pool exists once the data source is initialised (the background pool opens connections on use).
          const p = (ds.driver as unknown as { master?: PgPool }).master;
          this.set({ pool: name, state: 'total' }, p?.totalCount ?? 0);
          this.set({ pool: name, state: 'idle' }, p?.idleCount ?? 0);
          this.set({ pool: name, state: 'waiting' }, p?.waitingCount ?? 0);
        }
      },
    });
  }

  async onModuleDestroy(): Promise<void> {
    this.registry.clear();
    this.fleetRegistry.clear();
    await this.fleetLock.release();
  }
}
