import { Injectable } from '@nestjs/common';
import { countTransition, ruleBatch, RuleBatch, SchedulerRule, Transitions } from '../scheduler-rule';
import { UpgradeTransitions, upgradeSubject } from '../shared/upgrade-transitions';
import { atLeast, newer } from '../shared/versions';

/**
 * Open upgrades that no longer make sense: cluster deleted, auto-upgrade turned off or channel left
 * or moved back (CANCELLED, for upgrades the scheduler planned); already running the version, or the
 * channel moved past the target (SUPERSEDED; PlanNewRule then plans the newer version).
 */
@Injectable()
export class CloseObsoleteRule implements SchedulerRule {
  constructor(private readonly upgrades: UpgradeTransitions) {}

  async batch(now: Date, after: string, limit: number): Promise<RuleBatch> {
    const rows = await this.upgrades.open(`u.status IN ('SCHEDULED','SCHEDULED_NOTIFIED')`, [], after, limit);
    const done: Transitions = {};
    for (const row of rows) {
      const subject = upgradeSubject(row);
      let to: 'CANCELLED' | 'SUPERSEDED' | null = null;
      let message = '';
      if (row.cluster_deleted_at) {
        to = 'CANCELLED';
        message = `system cancelled the upgrade of cluster ${subject} to ${row.to_cluster_version}: the cluster was deleted`;
      } else if (atLeast(row.cluster_version, row.to_cluster_version)) {
        to = 'SUPERSEDED';
        message = `system superseded the upgrade of cluster ${subject} to ${row.to_cluster_version}: the cluster already runs ${row.cluster_version}`;
      } else if (row.created_by === 'system' && (!row.auto_upgrade || !row.channel_version)) {
        to = 'CANCELLED';
        message =
          `system cancelled the upgrade of cluster ${subject} to ${row.to_cluster_version}: ` +
          (row.auto_upgrade ? 'the cluster no longer follows an update channel' : 'auto-upgrade was turned off');
      } else if (row.created_by === 'system' && newer(row.to_cluster_version, row.channel_version!)) {
        to = 'CANCELLED';
        message = `system cancelled the upgrade of cluster ${subject} to ${row.to_cluster_version}: update channel ${row.channel_name} offers ${row.channel_version}`;
      } else if (row.auto_upgrade && row.channel_version && newer(row.channel_version, row.to_cluster_version)) {
        to = 'SUPERSEDED';
        message = `system superseded the upgrade of cluster ${subject} to ${row.to_cluster_version}: update channel ${row.channel_name} moved to ${row.channel_version}`;
      }
      if (to && (await this.upgrades.transition(row, to, now, { message }))) countTransition(done, to);
    }
    return ruleBatch(rows, limit, done);
  }
}
