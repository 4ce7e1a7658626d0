import { Injectable } from '@nestjs/common';
import { overlappingExclusion } from '../../maintenance/maintenance-exclusion';
import { countTransition, ruleBatch, RuleBatch, SchedulerRule, Transitions } from '../scheduler-rule';
import { SchedulerSql } from '../shared/scheduler-sql';
import { UpgradeTransitions, upgradeSubject } from '../shared/upgrade-transitions';
import { covering, exclusionsOf } from '../shared/windows';

/** Window open and the cluster running: set its desired version (the reconciler upgrades it), UPDATED. */
@Injectable()
export class StartRule implements SchedulerRule {
  constructor(
    private readonly sql: SchedulerSql,
    private readonly upgrades: UpgradeTransitions,
  ) {}

  async batch(now: Date, after: string, limit: number): Promise<RuleBatch> {
    const rows = await this.upgrades.open(
      `u.status IN ('SCHEDULED','SCHEDULED_NOTIFIED') AND u.window_start <= $1 AND u.window_end > $1 AND u.blocked_reason IS NULL
       AND c.deleted_at IS NULL AND c.status = 'started' AND c.desired_status IS NULL`,
      [now],
      after,
      limit,
    );
    const done: Transitions = {};
    for (const row of rows) {
      // An upgrade the scheduler planned does not start inside an exclusion covering it (ReplanRule normally moved
      // it already); an administrator's upgrade is not held back.
      if (row.created_by === 'system') {
        const applying = covering(exclusionsOf(row, null), row.cluster_version, row.to_cluster_version);
        if (overlappingExclusion(applying.map((x) => x.exclusion), now, new Date(now.getTime() + 1))) continue;
      }
      const started = await this.upgrades.transition(row, 'UPDATED', now, {
        details: { version: { old: row.cluster_version, new: row.to_cluster_version } },
        message: `system started the upgrade of cluster ${upgradeSubject(row)} from ${row.cluster_version} to ${row.to_cluster_version}`,
        before: async () => {
          await this.sql.q(
            `UPDATE clusters SET version = $2, next_attempt_at = NULL, modified_at = $3, row_version = row_version + 1 WHERE id = $1`,
            [row.cluster_id, row.to_cluster_version, now],
          );
        },
      });
      if (started) countTransition(done, 'UPDATED');
    }
    return ruleBatch(rows, limit, done);
  }
}
