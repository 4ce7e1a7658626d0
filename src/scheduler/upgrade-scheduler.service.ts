import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { SchedulerRunner, SchedulerRunResult } from './scheduler-runner';
import { SCHEDULER_LOG_CONTEXT } from './shared/scheduler-sql';

export { SCHEDULER_LOCK_KEY } from './scheduler-runner';
export type { SchedulerRunResult } from './scheduler-runner';
export { NOTIFY_AHEAD_MS } from './rules/announce.rule';
export { DEFAULT_WINDOW_DELAY_MS, DEFAULT_WINDOW_LENGTH_MS } from './shared/windows';

const INTERVAL_NAME = 'scheduled-cluster-upgrades';

/**
 * Drives scheduled cluster upgrades through their states (docs/decisions.md "Maintenance and upgrades"):
 * creates SCHEDULED upgrades for auto-upgrade clusters behind their update channel, announces them
 * (SCHEDULED_NOTIFIED), starts them when the window opens (UPDATED: sets the cluster's desired
 * version for the reconciler), and records the outcome (SUCCEEDED, FAILED, MISSED, SUPERSEDED).
 * Each rule is a class under `rules/`; SchedulerRunner walks them in keyset batches under the advisory lock. The
 * rows come from indexes on what needs work (open upgrades, clusters behind their channel), so a pass over a fleet
 * at rest costs a few index probes whatever its size (docs/performance.md "Scheduler pass"). Every batch reads
 * afresh under the lock and every update is guarded by the status it read, so however many replicas run, each
 * transition happens once. Each transition sits in a savepoint so one bad row cannot block the others.
 * This service adds the timer (every SCHEDULER_INTERVAL_SECONDS) and the metrics of a pass.
 */
@Injectable()
export class UpgradeSchedulerService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(SCHEDULER_LOG_CONTEXT);

  constructor(
    private readonly runner: SchedulerRunner,
    private readonly config: AppConfig,
    private readonly registry: SchedulerRegistry,
    private readonly metrics: MetricsService,
  ) {}

  /** One pass over every rule; tests call it directly with the clock set. */
  async runOnce(): Promise<SchedulerRunResult> {
    const result = await this.runner.pass();
    // Counted after the pass committed.
    for (const [status, n] of Object.entries(result.transitions)) this.metrics.schedulerTransitions.inc({ status }, n ?? 0);
    return result;
  }

  // ---- timer lifecycle (kept apart: the shared background-job lifecycle will take it over) ----------------

  private running = false;
  private inFlight: Promise<void> | null = null;

  onApplicationBootstrap(): void {
    if (!this.config.BACKGROUND_JOBS_ENABLED || this.config.SCHEDULER_INTERVAL_SECONDS <= 0) return;
    const timer = setInterval(() => void this.tick(), this.config.SCHEDULER_INTERVAL_SECONDS * 1000);
    timer.unref?.();
    this.registry.addInterval(INTERVAL_NAME, timer);
  }

  /** Shutdown: no new pass starts; a pass under way finishes (its transitions commit) before the pool closes. */
  async onModuleDestroy(): Promise<void> {
    if (this.registry.doesExist('interval', INTERVAL_NAME)) this.registry.deleteInterval(INTERVAL_NAME);
    if (this.inFlight) await this.inFlight;
  }

  private tick(): Promise<void> {
    if (this.running) return this.inFlight ?? Promise.resolve();
    this.running = true;
    this.inFlight = this.timedPass().finally(() => (this.inFlight = null));
    return this.inFlight;
  }

  private async timedPass(): Promise<void> {
    try {
      await this.runOnce();
    } catch (err) {
      this.logger.error({ err }, 'Scheduler run failed');
      this.metrics.backgroundErrors.inc({ job: 'scheduler' });
    } finally {
      this.running = false;
    }
  }
}
