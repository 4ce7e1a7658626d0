import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { countTransition, ruleBatch, RuleBatch, SchedulerRule, Transitions } from '../scheduler-rule';
import { SchedulerSql } from '../shared/scheduler-sql';
import { OpenUpgradeRow, UpgradeTransitions, upgradeSubject } from '../shared/upgrade-transitions';

/**
 * UPDATED: the driver reports the new version (SUCCEEDED), or a fault, or no new version by the end of the window
 * plus UPGRADE_TIMEOUT_GRACE_MINUTES (FAILED; a time-out). One rule, as both read the same rows.
 */
@Injectable()
export class FinishRule implements SchedulerRule {
  constructor(
    private readonly sql: SchedulerSql,
    private readonly upgrades: UpgradeTransitions,
    private readonly config: AppConfig,
  ) {}

  async batch(now: Date, after: string, limit: number): Promise<RuleBatch> {
    const rows = await this.upgrades.open(`u.status = 'UPDATED'`, [], after, limit);
    const done: Transitions = {};
    for (const row of rows) {
      const subject = upgradeSubject(row);
      if (row.cluster_observed_version === row.to_cluster_version && !row.cluster_deleted_at) {
        const succeeded = await this.upgrades.transition(row, 'SUCCEEDED', now, {
          message: `Cluster ${subject} was upgraded from ${row.from_cluster_version} to ${row.to_cluster_version}`,
          // Its downstream clusters' soak time counts from here (the trigger set the database's time when the
          // observed version changed; the scheduler's clock is the one the rules use).
          before: async () => {
            await this.sql.q(`UPDATE clusters SET version_since = $2 WHERE id = $1 AND observed_version = $3`, [row.cluster_id, now, row.to_cluster_version]);
          },
        });
        if (succeeded) countTransition(done, 'SUCCEEDED');
      } else if (row.cluster_deleted_at) {
        const failed = await this.upgrades.transition(row, 'FAILED', now, {
          message: `The upgrade of cluster ${subject} to ${row.to_cluster_version} failed: the cluster was deleted`,
        });
        if (failed) countTransition(done, 'FAILED');
      } else if ((row.cluster_status === 'unknown' && row.cluster_last_error) || this.deadline(row).getTime() <= now.getTime()) {
        if (await this.fail(row, now)) countTransition(done, 'FAILED');
      }
    }
    return ruleBatch(rows, limit, done);
  }

  /** The end of the window plus the grace period: no new version by then is a time-out. */
  private deadline(row: OpenUpgradeRow): Date {
    return new Date(row.window_end.getTime() + this.config.UPGRADE_TIMEOUT_GRACE_MINUTES * 60_000);
  }

  /**
   * A driver fault, or a time-out. The cluster goes back to the version it runs, so the reconciler does not retry
   * the upgrade outside the window; a new attempt is a new scheduled upgrade.
   */
  private fail(row: OpenUpgradeRow, now: Date): Promise<boolean> {
    const timedOut = !(row.cluster_status === 'unknown' && row.cluster_last_error);
    const reason = timedOut
      ? `the cluster did not reach ${row.to_cluster_version} by ${this.deadline(row).toISOString()} ` +
        `(window end plus ${this.config.UPGRADE_TIMEOUT_GRACE_MINUTES} min)`
      : row.cluster_last_error!;
    const revertTo = row.cluster_observed_version ?? row.from_cluster_version;
    const reverts = row.cluster_version === row.to_cluster_version && revertTo !== row.cluster_version;
    return this.upgrades.transition(row, 'FAILED', now, {
      details: {
        ...(timedOut ? { reason: { old: row.reason, new: `timed out: ${reason}` } } : { lastError: { old: null, new: reason } }),
        ...(reverts ? { version: { old: row.cluster_version, new: revertTo } } : {}),
      },
      message: `The upgrade of cluster ${upgradeSubject(row)} from ${row.from_cluster_version} to ${row.to_cluster_version} failed: ${reason}`,
      before: async () => {
        if (timedOut) await this.sql.q(`UPDATE scheduled_cluster_upgrades SET reason = $2 WHERE id = $1`, [row.id, `timed out: ${reason}`]);
        if (reverts) {
          await this.sql.q(`UPDATE clusters SET version = $2, modified_at = $3, row_version = row_version + 1 WHERE id = $1`, [
            row.cluster_id,
            revertTo,
            now,
          ]);
        }
      },
    });
  }
}
