import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import type { BackgroundJob, PassContext } from '../jobs/background-job';
import { BackgroundJobs } from '../jobs/background-jobs.service';
import type { JobLoop } from '../jobs/job-loop';
import { MetricsService } from '../metrics/metrics.service';
import { SCHEDULED_UPGRADE_STATUSES } from '../upgrades/scheduled-cluster-upgrade.entity';
import { SchedulerRunner, SchedulerRunResult } from './scheduler-runner';
import { SCHEDULER_LOG_CONTEXT } from './shared/scheduler-sql';

export { SCHEDULER_LOCK_KEY } from './scheduler-runner';
export type { SchedulerRunResult } from './scheduler-runner';
export { NOTIFY_AHEAD_MS } from './rules/announce.rule';
export { DEFAULT_WINDOW_DELAY_MS, DEFAULT_WINDOW_LENGTH_MS } from './shared/windows';

/**
 * Drives scheduled cluster upgrades through their states (docs/conventions.md "Maintenance and upgrades"):
 * creates SCHEDULED upgrades for auto-upgrade clusters behind their update channel, announces them
 * (SCHEDULED_NOTIFIED), starts them when the window opens (UPDATED: sets the cluster's desired
 * version for the reconciler), and records the outcome (SUCCEEDED, FAILED, MISSED, SUPERSEDED).
 * Each rule is a class under `rules/`; SchedulerRunner walks them in keyset batches under the advisory lock. The
 * rows come from indexes on what needs work (open upgrades, clusters behind their channel), so a pass over a fleet
 * at rest costs a few index probes whatever its size (docs/performance-history.md "Scheduler pass"). Every batch reads
 * afresh under the lock and every update is guarded by the status it read, so however many replicas run, each
 * transition happens once. Each transition sits in a savepoint so one bad row cannot block the others.
 * This is the scheduler's `BackgroundJob`: the jobs module runs a pass every SCHEDULER_INTERVAL_SECONDS (0: never
 * by itself), never two at once, and lets the pass under way finish at shutdown.
 */
@Injectable()
export class UpgradeSchedulerService implements BackgroundJob<SchedulerRunResult> {
  private readonly loop: JobLoop<SchedulerRunResult>;

  constructor(
    private readonly runner: SchedulerRunner,
    private readonly metrics: MetricsService,
    config: AppConfig,
    jobs: BackgroundJobs,
  ) {
    // Every status is exported at 0 from the start, so rates and alerts work before the first transition.
    for (const status of SCHEDULED_UPGRADE_STATUSES) metrics.schedulerTransitions.inc({ status }, 0);
    this.loop = jobs.register(this, { name: 'scheduler', logContext: SCHEDULER_LOG_CONTEXT, everyMs: config.SCHEDULER_INTERVAL_SECONDS * 1000 });
  }

  /** One pass over every rule now (after a pass under way); tests call it with the clock set. */
  runOnce(): Promise<SchedulerRunResult> {
    return this.loop.runPass();
  }

  /** One walk of the runner over every rule; a pass stops between batches once shutdown began. */
  async pass(ctx: PassContext): Promise<SchedulerRunResult> {
    const result = await this.runner.pass(ctx.signal);
    // Counted after the pass committed.
    for (const [status, n] of Object.entries(result.transitions)) this.metrics.schedulerTransitions.inc({ status }, n ?? 0);
    return result;
  }
}
