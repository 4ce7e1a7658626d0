import { Injectable } from '@nestjs/common';
import { describeUpgradeWindow } from '../../upgrades/upgrade-rows';
import { countTransition, ruleBatch, RuleBatch, SchedulerRule, Transitions } from '../scheduler-rule';
import { UpgradeTransitions, upgradeSubject } from '../shared/upgrade-transitions';

/**
 * The window closed before the upgrade could start (e.g. the cluster was stopped, or a cluster policy held it):
 * MISSED. Upgrades held by rollout sequencing are not missed (SequenceRule moves them).
 */
@Injectable()
export class MissRule implements SchedulerRule {
  constructor(private readonly upgrades: UpgradeTransitions) {}

  async batch(now: Date, after: string, limit: number): Promise<RuleBatch> {
    const rows = await this.upgrades.open(
      `u.status IN ('SCHEDULED','SCHEDULED_NOTIFIED') AND u.window_end <= $1 AND (u.blocked_reason IS NULL OR u.held_by_policy)`,
      [now],
      after,
      limit,
    );
    const done: Transitions = {};
    for (const row of rows) {
      const missed = await this.upgrades.transition(row, 'MISSED', now, {
        message:
          `The upgrade of cluster ${upgradeSubject(row)} from ${row.from_cluster_version} to ${row.to_cluster_version} missed its window ` +
          `${describeUpgradeWindow(row.window_start, row.window_end)} ` +
          (row.held_by_policy ? `(held by ${row.blocked_reason})` : `(the cluster was ${row.cluster_status})`),
      });
      if (missed) countTransition(done, 'MISSED');
    }
    return ruleBatch(rows, limit, done);
  }
}
