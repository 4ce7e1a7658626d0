import { Injectable } from '@nestjs/common';
import type { AuditDetails } from '../../audit/audit-event.entity';
import { overlappingExclusion } from '../../maintenance/maintenance-exclusion';
import type { MaintenanceWindow } from '../../maintenance/maintenance-window';
import { describeUpgradeWindow, UPGRADE_COLUMNS, UPGRADE_FROM, UpgradeRow } from '../../upgrades/upgrade-rows';
import { ruleBatch, RuleBatch, SchedulerRule } from '../scheduler-rule';
import { SchedulerSql } from '../shared/scheduler-sql';
import { UpgradeTransitions, upgradeSubject } from '../shared/upgrade-transitions';
import { covering, ExclusionColumns, exclusionsOf, planWindow } from '../shared/windows';

type PlannedRow = UpgradeRow &
  ExclusionColumns & {
    windows: MaintenanceWindow[] | null;
    time_zone: string | null;
    schedule_name: string | null;
    cluster_version: string;
  };

/**
 * An upgrade the scheduler planned follows its cluster's maintenance schedule and exclusions: when the
 * schedule (or the cluster's choice of schedule) changed before the window opened, or an exclusion covering
 * the upgrade now overlaps its window (even one already open, as long as the upgrade has not started), the
 * upgrade moves to the first allowed window and goes back to SCHEDULED so the new window is announced.
 */
@Injectable()
export class ReplanRule implements SchedulerRule {
  constructor(
    private readonly sql: SchedulerSql,
    private readonly upgrades: UpgradeTransitions,
  ) {}

  async batch(now: Date, after: string, limit: number): Promise<RuleBatch> {
    const rows = await this.sql.q<PlannedRow>(
      `SELECT ${UPGRADE_COLUMNS}, ms.windows, ms.time_zone, ms.name AS schedule_name, c.version AS cluster_version,
              c.maintenance_exclusions AS cluster_exclusions, ms.exclusions AS schedule_exclusions
         ${UPGRADE_FROM}
         LEFT JOIN maintenance_schedules ms ON ms.id = c.maintenance_schedule_id
        WHERE u.status IN ('SCHEDULED','SCHEDULED_NOTIFIED') AND u.created_by = 'system' AND u.window_end > $1
          AND c.deleted_at IS NULL AND u.blocked_reason IS NULL AND u.id > $2
        ORDER BY u.id
        LIMIT $3
        FOR UPDATE OF u SKIP LOCKED`,
      [now, after, limit],
    );
    for (const row of rows) {
      const sourced = exclusionsOf(row, row.schedule_name);
      const applying = covering(sourced, row.cluster_version, row.to_cluster_version);
      const blocking = overlappingExclusion(
        applying.map((x) => x.exclusion),
        row.window_start,
        row.window_end,
      );
      const hasWindows = !!row.windows?.length;
      // Without an exclusion in the way, only a future window of a schedule follows the schedule's changes.
      if (!blocking && !(hasWindows && row.window_start.getTime() > now.getTime())) continue;
      const next = planWindow(row.windows, row.time_zone, now, applying, false);
      if (!next) continue;
      if (next.start.getTime() === row.window_start.getTime() && next.end.getTime() === row.window_end.getTime()) continue;
      const because = blocking
        ? `its window overlapped the maintenance exclusion "${blocking.name}" (${blocking.scope}, ` +
          `${describeUpgradeWindow(new Date(blocking.startsAt), new Date(blocking.endsAt))}) of ${sourced.find((x) => x.exclusion === blocking)!.source}`
        : 'its maintenance schedule changed';
      await this.move(row, next, now, because);
    }
    return ruleBatch(rows, limit);
  }

  /** Into the window `next`, back to SCHEDULED (the new window is announced again). */
  private async move(row: PlannedRow, next: { start: Date; end: Date }, now: Date, because: string): Promise<void> {
    await this.sql.savepoint(async () => {
      await this.sql.q(
        `UPDATE scheduled_cluster_upgrades
            SET window_start = $2, window_end = $3, status = 'SCHEDULED', notified_at = NULL, modified_at = $4, version = version + 1
          WHERE id = $1`,
        [row.id, next.start, next.end, now],
      );
      const details: AuditDetails = {
        windowStart: { old: row.window_start.toISOString(), new: next.start.toISOString() },
        windowEnd: { old: row.window_end.toISOString(), new: next.end.toISOString() },
      };
      if (row.status !== 'SCHEDULED') details.status = { old: row.status, new: 'SCHEDULED' };
      await this.upgrades.record(
        'SCHEDULED_CLUSTER_UPGRADE_RESCHEDULED',
        row,
        details,
        `system moved the upgrade of cluster ${upgradeSubject(row)} to ${row.to_cluster_version} to the window ` +
          `${describeUpgradeWindow(next.start, next.end)}: ${because}`,
      );
    });
  }
}
