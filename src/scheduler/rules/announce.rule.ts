import { Injectable } from '@nestjs/common';
import { describeUpgradeWindow } from '../../upgrades/upgrade-rows';
import { countTransition, ruleBatch, RuleBatch, SchedulerRule, Transitions } from '../scheduler-rule';
import { UpgradeTransitions, upgradeSubject } from '../shared/upgrade-transitions';

/** Announce an upgrade this long before its window opens (at once when the window is sooner). */
export const NOTIFY_AHEAD_MS = 24 * 60 * 60 * 1000;

/** SCHEDULED -> SCHEDULED_NOTIFIED once the window is at most NOTIFY_AHEAD_MS away: the announcement. */
@Injectable()
export class AnnounceRule implements SchedulerRule {
  constructor(private readonly upgrades: UpgradeTransitions) {}

  async batch(now: Date, after: string, limit: number): Promise<RuleBatch> {
    const rows = await this.upgrades.open(
      `u.status = 'SCHEDULED' AND u.window_start <= $1 AND u.window_end > $2 AND u.blocked_reason IS NULL`,
      [new Date(now.getTime() + NOTIFY_AHEAD_MS), now],
      after,
      limit,
    );
    const done: Transitions = {};
    for (const row of rows) {
      const announced = await this.upgrades.transition(row, 'SCHEDULED_NOTIFIED', now, {
        message:
          `Cluster ${upgradeSubject(row)} will be upgraded from ${row.from_cluster_version} to ${row.to_cluster_version} ` +
          `in the maintenance window ${describeUpgradeWindow(row.window_start, row.window_end)}`,
      });
      if (announced) countTransition(done, 'SCHEDULED_NOTIFIED');
    }
    return ruleBatch(rows, limit, done);
  }
}
