import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { InjectBackgroundDataSource } from '../database/background-pool';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { BackgroundJob, PassContext } from '../jobs/background-job';
import { BackgroundJobs } from '../jobs/background-jobs.service';
import type { JobLoop } from '../jobs/job-loop';
import { MetricsService } from '../metrics/metrics.service';
import { IDEMPOTENCY_KEY_RETENTION_HOURS, RETENTION_SQL, RETENTION_TABLES, RetentionTable } from './retention-tables';

/** How often the background loop runs. */
export const RETENTION_INTERVAL_MS = 3600_000;
/** The first pass after start-up (plus up to as much again at random, so replicas started together spread). */
export const RETENTION_FIRST_RUN_MS = 60_000;
/** Pause between two batches of one table, so a large backlog never keeps the database busy for long. */
export const RETENTION_BATCH_PAUSE_MS = 100;

const DAY_MS = 86_400_000;

export type RetentionResult = Record<RetentionTable, number>;

/**
 * Deletes expired rows of the tables that would otherwise grow forever: audit events, activity events,
 * resolved alerts and delivered or failed webhook events (with their deliveries). Each table is emptied of
 * its expired rows in batches of RETENTION_BATCH_SIZE rows, each batch its own short statement/transaction,
 * with a pause between batches, until a batch deletes fewer rows than the batch size. Replicas may run it at
 * the same moment: a batch skips rows another replica has locked, so every row is deleted once.
 */
@Injectable()
export class RetentionService implements BackgroundJob<RetentionResult> {
  private readonly logger = new Logger('Retention');
  private readonly loop: JobLoop<RetentionResult>;

  constructor(
    private readonly config: AppConfig,
    // A loop's own SQL runs on the background pool (background-pool.ts).
    @InjectBackgroundDataSource() private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly metrics: MetricsService,
    jobs: BackgroundJobs,
  ) {
    // Every table is exported at 0 from the start, so rates and alerts work before the first deletion.
    for (const table of RETENTION_TABLES) metrics.retentionDeletedRows.inc({ table }, 0);
    // Not only hourly: an instance restarted more often than that would otherwise never run the job.
    this.loop = jobs.register(this, {
      name: 'retention',
      logContext: 'Retention',
      everyMs: RETENTION_INTERVAL_MS,
      firstRun: { afterMs: RETENTION_FIRST_RUN_MS, jitter: 1 },
    });
  }

  /** One pass over every table now; returns the rows deleted per table (0 for a table kept forever). */
  runOnce(): Promise<RetentionResult> {
    return this.loop.runPass();
  }

  /** A pass leaves off after the batch in flight once shutdown began. */
  async pass(ctx: PassContext): Promise<RetentionResult> {
    const deleted = Object.fromEntries(RETENTION_TABLES.map((t) => [t, 0])) as RetentionResult;
    const now = this.clock.now().getTime();
    const cutoff = (days: number) => (days > 0 ? new Date(now - days * DAY_MS) : null);
    const tables: [string, Date | null, (cutoff: Date) => Promise<number>][] = [
      ['audit_events', cutoff(this.config.AUDIT_RETENTION_DAYS), (c) => this.simpleBatch('audit_events', c, deleted)],
      ['activity_events', cutoff(this.config.ACTIVITY_RETENTION_DAYS), (c) => this.simpleBatch('activity_events', c, deleted)],
      ['tenant_alerts', cutoff(this.config.RESOLVED_ALERT_RETENTION_DAYS), (c) => this.simpleBatch('tenant_alerts', c, deleted)],
      ['webhook_events', cutoff(this.config.WEBHOOK_EVENT_RETENTION_DAYS), (c) => this.webhookBatch(c, deleted)],
      ['idempotency_keys', new Date(now - IDEMPOTENCY_KEY_RETENTION_HOURS * 3600_000), (c) => this.simpleBatch('idempotency_keys', c, deleted)],
    ];
    let failure: unknown = null;
    for (const [name, at, batch] of tables) {
      if (!at) continue;
      try {
        await this.drain(at, batch, ctx.signal);
      } catch (e) {
        // One table failing does not keep the others from being cleaned; the pass reports the failure.
        ctx.error(e, { table: name }, 'Retention of a table failed');
        failure ??= e;
      }
    }
    if (failure) throw failure;
    const total = Object.values(deleted).reduce((s, n) => s + n, 0);
    if (total > 0) this.logger.log({ deleted }, `Retention deleted ${total} expired rows`);
    return deleted;
  }

  /** Runs batches until one deletes fewer rows than the batch size (or the service stops). */
  private async drain(cutoff: Date, batch: (cutoff: Date) => Promise<number>, stop: AbortSignal): Promise<void> {
    for (;;) {
      if (stop.aborted) return;
      const n = await batch(cutoff);
      if (n < this.config.RETENTION_BATCH_SIZE) return;
      await new Promise((r) => setTimeout(r, RETENTION_BATCH_PAUSE_MS));
    }
  }

  private count(deleted: RetentionResult, table: RetentionTable, n: number): void {
    deleted[table] += n;
    if (n > 0) this.metrics.retentionDeletedRows.inc({ table }, n);
  }

  /** One statement: its own transaction. */
  private async simpleBatch(table: 'audit_events' | 'activity_events' | 'tenant_alerts' | 'idempotency_keys', cutoff: Date, deleted: RetentionResult): Promise<number> {
    const [, n] = (await this.dataSource.query(RETENTION_SQL[table], [cutoff, this.config.RETENTION_BATCH_SIZE])) as [unknown, number];
    this.count(deleted, table, n);
    return n;
  }

  /** Picks and locks a batch of events, deletes their deliveries, then the events: one short transaction. */
  private async webhookBatch(cutoff: Date, deleted: RetentionResult): Promise<number> {
    const { events, deliveries } = await this.dataSource.transaction(async (m) => {
      const picked = (await m.query(RETENTION_SQL.webhook_events_pick, [cutoff, this.config.RETENTION_BATCH_SIZE])) as { id: number }[];
      if (!picked.length) return { events: 0, deliveries: 0 };
      const ids = picked.map((r) => r.id);
      const [, d] = (await m.query(RETENTION_SQL.webhook_deliveries, [ids])) as [unknown, number];
      const [, e] = (await m.query(RETENTION_SQL.webhook_events, [ids])) as [unknown, number];
      return { events: e, deliveries: d };
    });
    this.count(deleted, 'webhook_deliveries', deliveries);
    this.count(deleted, 'webhook_events', events);
    return events;
  }
}
