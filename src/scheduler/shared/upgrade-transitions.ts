import { Injectable, Logger } from '@nestjs/common';
import type { AuditDetails } from '../../audit/audit-event.entity';
import type { OrganisationAuditEventType } from '../../audit/audit-event-types';
import { AuditService } from '../../audit/audit.service';
import { SYSTEM_ACTOR } from '../../identity/principal';
import type { ScheduledUpgradeStatus } from '../../upgrades/scheduled-cluster-upgrade.entity';
import { UPGRADE_COLUMNS, UPGRADE_FROM, upgradeAuditRefs, UpgradeRow } from '../../upgrades/upgrade-rows';
import { SCHEDULER_LOG_CONTEXT, SchedulerSql } from './scheduler-sql';
import type { ExclusionColumns } from './windows';

const TERMINAL: ScheduledUpgradeStatus[] = ['SUCCEEDED', 'FAILED', 'MISSED', 'CANCELLED', 'SUPERSEDED'];

/** An open upgrade with its cluster and channel, as `UpgradeTransitions.open` reads it. */
export interface OpenUpgradeRow extends UpgradeRow, ExclusionColumns {
  created_by: string;
  blocked_reason: string | null;
  /** `blocked_reason` is a cluster policy's Deny at the start (StartRule), not rollout sequencing. */
  held_by_policy: boolean;
  cluster_version: string;
  cluster_status: string;
  cluster_desired_status: string | null;
  cluster_deleted_at: Date | null;
  cluster_observed_version: string | null;
  cluster_last_error: string | null;
  auto_upgrade: boolean;
  channel_name: string | null;
  channel_version: string | null;
}

/** `environment/cluster`, how the scheduler's messages name a cluster. */
export function upgradeSubject(row: UpgradeRow): string {
  return `${row.environment_slug}/${row.cluster_slug}`;
}

/** The audit type of an upgrade moving to `status` (a listed organisation type for every status, checked here by the compiler). */
const upgradeStatusEventType = (status: ScheduledUpgradeStatus): OrganisationAuditEventType => `SCHEDULED_CLUSTER_UPGRADE_${status}`;

/** Reading open upgrades and moving them from status to status, each change audited (actor: system) and logged. */
@Injectable()
export class UpgradeTransitions {
  private readonly logger = new Logger(SCHEDULER_LOG_CONTEXT);

  constructor(
    private readonly sql: SchedulerSql,
    private readonly audit: AuditService,
  ) {}

  /**
   * One batch (after the id `after`) of the upgrades matching `where`, with their cluster and channel, locked (rows
   * held elsewhere are skipped).
   */
  open(where: string, params: unknown[], after: string, limit: number): Promise<OpenUpgradeRow[]> {
    return this.sql.q<OpenUpgradeRow>(
      `SELECT ${UPGRADE_COLUMNS}, u.created_by, u.held_by_policy, c.version AS cluster_version, c.status AS cluster_status,
              c.desired_status AS cluster_desired_status, c.deleted_at AS cluster_deleted_at,
              c.observed_version AS cluster_observed_version, c.last_error AS cluster_last_error, c.auto_upgrade,
              ch.name AS channel_name, ch.kubernetes_cluster_version AS channel_version,
              c.maintenance_exclusions AS cluster_exclusions, ms.exclusions AS schedule_exclusions
         ${UPGRADE_FROM}
         LEFT JOIN update_channels ch ON ch.name = c.update_channel
         LEFT JOIN maintenance_schedules ms ON ms.id = c.maintenance_schedule_id
        WHERE ${where} AND u.id > $${params.length + 1}
        ORDER BY u.id
        LIMIT $${params.length + 2}
        FOR UPDATE OF u SKIP LOCKED`,
      [...params, after, limit],
    );
  }

  /**
   * Moves `row` to `to` in a savepoint (after `before`, the changes that go with it), guarded by the status it was
   * read in; writes the SCHEDULED_CLUSTER_UPGRADE_<to> audit row and a log line. True when it happened.
   */
  async transition(
    row: OpenUpgradeRow,
    to: ScheduledUpgradeStatus,
    now: Date,
    opts: { message: string; details?: AuditDetails; before?: () => Promise<void> },
  ): Promise<boolean> {
    const done = await this.sql.savepoint(async () => {
      if (opts.before) await opts.before();
      const changed = await this.sql.changed(
        `UPDATE scheduled_cluster_upgrades
            SET status = $2, modified_at = $3, version = version + 1,
                notified_at = CASE WHEN $2 = 'SCHEDULED_NOTIFIED' THEN $3 ELSE notified_at END,
                started_at = CASE WHEN $2 = 'UPDATED' THEN $3 ELSE started_at END,
                finished_at = CASE WHEN $2 = ANY($5::text[]) THEN $3 ELSE finished_at END,
                cancelled_by = CASE WHEN $2 = 'CANCELLED' THEN 'system' ELSE cancelled_by END
          WHERE id = $1 AND status = $4`,
        [row.id, to, now, row.status, TERMINAL],
      );
      if (!changed) throw new Error(`upgrade ${row.identity} left ${row.status} meanwhile`);
      await this.record(upgradeStatusEventType(to), row, { status: { old: row.status, new: to }, ...(opts.details ?? {}) }, opts.message);
      this.logger.log(
        {
          upgrade: row.identity,
          cluster: row.cluster_identity,
          organisation: row.organisation_slug,
          environment: row.environment_slug,
          from: row.status,
          to,
          toVersion: row.to_cluster_version,
        },
        `Scheduled upgrade ${row.identity} of ${row.environment_slug}/${row.cluster_slug}: ${row.status} -> ${to}`,
      );
      row.status = to;
      return true;
    });
    return done === true;
  }

  /** The audit row of a change the scheduler made to an upgrade (actor: system). */
  async record(type: string, row: UpgradeRow, details: AuditDetails, message: string): Promise<void> {
    await this.audit.write({ type, ...upgradeAuditRefs(row), details, message }, SYSTEM_ACTOR);
  }
}
