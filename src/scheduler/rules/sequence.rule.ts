import { Injectable } from '@nestjs/common';
import type { AuditDetails } from '../../audit/audit-event.entity';
import type { MaintenanceWindow } from '../../maintenance/maintenance-window';
import { describeUpgradeWindow, UPGRADE_COLUMNS, UPGRADE_FROM } from '../../upgrades/upgrade-rows';
import { ruleBatch, RuleBatch, SchedulerRule } from '../scheduler-rule';
import { SchedulerSql } from '../shared/scheduler-sql';
import { OpenUpgradeRow, UpgradeTransitions, upgradeSubject } from '../shared/upgrade-transitions';
import { sequencingGate, upstreamSql, UpstreamFacts } from '../shared/upstream';
import { covering, exclusionsOf, sequencedWindow } from '../shared/windows';

type SequencedRow = OpenUpgradeRow & UpstreamFacts & { windows: MaintenanceWindow[] | null; time_zone: string | null };

/**
 * Rollout sequencing of upgrades already planned (e.g. before the cluster got its upstream cluster): an upgrade
 * the scheduler planned is held (`blocked_reason`, status SCHEDULED: it neither starts nor misses its window)
 * while its upstream cluster has not run the target version for the soak time, or after the upstream's upgrade
 * to it failed; once that clears it is released into the first allowed window starting at or after the end of
 * the soak. Each hold, change of reason and release is audited.
 */
@Injectable()
export class SequenceRule implements SchedulerRule {
  constructor(
    private readonly sql: SchedulerSql,
    private readonly upgrades: UpgradeTransitions,
  ) {}

  async batch(now: Date, after: string, limit: number): Promise<RuleBatch> {
    const upstream = upstreamSql('u.to_cluster_version');
    const rows = await this.sql.q<SequencedRow>(
      `SELECT ${UPGRADE_COLUMNS}, u.created_by, c.version AS cluster_version, ms.windows, ms.time_zone,
              c.maintenance_exclusions AS cluster_exclusions, ms.exclusions AS schedule_exclusions, ${upstream.columns}
         ${UPGRADE_FROM}
         LEFT JOIN maintenance_schedules ms ON ms.id = c.maintenance_schedule_id
         ${upstream.joins}
        WHERE u.status IN ('SCHEDULED','SCHEDULED_NOTIFIED') AND u.created_by = 'system' AND c.deleted_at IS NULL AND u.id > $1
          -- a cluster policy's hold is StartRule's to keep or release
          AND NOT u.held_by_policy
          -- found from the clusters with an upstream (clusters_upstream_idx) and the held upgrades, not from every open one
          AND u.id IN (SELECT x.id FROM clusters dc
                         JOIN scheduled_cluster_upgrades x ON x.cluster_id = dc.id AND x.status IN ('SCHEDULED','SCHEDULED_NOTIFIED')
                        WHERE dc.upstream_cluster_id IS NOT NULL AND dc.deleted_at IS NULL
                       UNION
                       SELECT x.id FROM scheduled_cluster_upgrades x
                        WHERE x.blocked_reason IS NOT NULL AND NOT x.held_by_policy AND x.status IN ('SCHEDULED','SCHEDULED_NOTIFIED'))
        ORDER BY u.id
        LIMIT $2
        FOR UPDATE OF u SKIP LOCKED`,
      [after, limit],
    );
    for (const row of rows) {
      const gate = sequencingGate(row, row.to_cluster_version, now);
      if (gate.held && gate.held !== row.blocked_reason) {
        await this.hold(row, gate.held, now);
      } else if (!gate.held && row.blocked_reason) {
        const applying = covering(exclusionsOf(row, null), row.cluster_version, row.to_cluster_version);
        const next = sequencedWindow(row.windows, row.time_zone, now, applying, gate.soakEnd);
        if (!next) continue; // no allowed window yet: stays held, tried again next pass
        await this.release(row, next, now);
      }
    }
    return ruleBatch(rows, limit);
  }

  /** Held (or held for another reason): back to SCHEDULED, so the window is announced again once released. */
  private async hold(row: SequencedRow, reason: string, now: Date): Promise<void> {
    await this.sql.savepoint(async () => {
      await this.sql.guardedUpdate(
        `UPDATE scheduled_cluster_upgrades
            SET blocked_reason = $3, status = 'SCHEDULED', notified_at = NULL, modified_at = $4, version = version + 1
          WHERE id = $1 AND status = $2 AND blocked_reason IS NOT DISTINCT FROM $5`,
        [row.id, row.status, reason, now, row.blocked_reason],
        row,
      );
      const details: AuditDetails = { blockedReason: { old: row.blocked_reason, new: reason } };
      if (row.status !== 'SCHEDULED') details.status = { old: row.status, new: 'SCHEDULED' };
      await this.upgrades.record(
        'SCHEDULED_CLUSTER_UPGRADE_BLOCKED',
        row,
        details,
        `system held the upgrade of cluster ${upgradeSubject(row)} to ${row.to_cluster_version}: ${reason}`,
      );
    });
  }

  /** Released into the window `next`. */
  private async release(row: SequencedRow, next: { start: Date; end: Date }, now: Date): Promise<void> {
    await this.sql.savepoint(async () => {
      await this.sql.guardedUpdate(
        `UPDATE scheduled_cluster_upgrades
            SET blocked_reason = NULL, window_start = $3, window_end = $4, modified_at = $5, version = version + 1
          WHERE id = $1 AND status = $2 AND blocked_reason = $6`,
        [row.id, row.status, next.start, next.end, now, row.blocked_reason],
        row,
      );
      const details: AuditDetails = { blockedReason: { old: row.blocked_reason, new: null } };
      if (row.window_start.getTime() !== next.start.getTime()) details.windowStart = { old: row.window_start.toISOString(), new: next.start.toISOString() };
      if (row.window_end.getTime() !== next.end.getTime()) details.windowEnd = { old: row.window_end.toISOString(), new: next.end.toISOString() };
      const why =
        row.up_id != null
          ? `upstream cluster ${row.up_subject} has run ${row.to_cluster_version} since ${row.up_since!.toISOString()} (soak ${row.soak_hours} h)`
          : 'the cluster no longer has an upstream cluster';
      await this.upgrades.record(
        'SCHEDULED_CLUSTER_UPGRADE_UNBLOCKED',
        row,
        details,
        `system released the upgrade of cluster ${upgradeSubject(row)} to ${row.to_cluster_version} into the window ` +
          `${describeUpgradeWindow(next.start, next.end)}: ${why}`,
      );
    });
  }
}
