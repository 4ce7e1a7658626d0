import type { AuditEntry } from '../audit/audit-recorder';
import type { ScheduledUpgradeStatus } from './scheduled-cluster-upgrade.entity';
import type { ScheduledClusterUpgradeResponse } from './dto/scheduled-cluster-upgrade.dto';

/** A scheduled upgrade joined with the names the response and the audit rows need. */
export interface UpgradeRow {
  id: number;
  identity: string;
  organisation_id: number;
  organisation_slug: string;
  cluster_id: number;
  cluster_identity: string;
  cluster_slug: string;
  cluster_name: string;
  environment_id: number;
  environment_slug: string;
  from_cluster_version: string;
  to_cluster_version: string;
  window_start: Date;
  window_end: Date;
  status: ScheduledUpgradeStatus;
  reason: string | null;
  created_at: Date;
  modified_at: Date;
  ignore_maintenance_schedule: boolean;
  blocked_reason: string | null;
}

export const UPGRADE_COLUMNS = `
         u.id, u.identity, u.organisation_id, o.slug AS organisation_slug, u.cluster_id, c.identity AS cluster_identity,
         c.slug AS cluster_slug, c.name AS cluster_name, c.environment_id, e.slug AS environment_slug,
         u.from_cluster_version, u.to_cluster_version, u.window_start, u.window_end, u.status, u.reason,
         u.created_at, u.modified_at, u.ignore_maintenance_schedule, u.blocked_reason`;

export const UPGRADE_FROM = `
    FROM scheduled_cluster_upgrades u
    JOIN clusters c ON c.id = u.cluster_id
    JOIN environments e ON e.id = c.environment_id
    JOIN organisations o ON o.id = u.organisation_id`;

export const UPGRADE_SELECT = `SELECT ${UPGRADE_COLUMNS} ${UPGRADE_FROM}`;

export function toUpgradeResponse(r: UpgradeRow): ScheduledClusterUpgradeResponse {
  return {
    clusterIdentity: r.cluster_identity,
    clusterSlug: r.cluster_slug,
    createdAt: r.created_at.toISOString(),
    modifiedAt: r.modified_at.toISOString(),
    environmentSlug: r.environment_slug,
    fromClusterVersion: r.from_cluster_version,
    identity: r.identity,
    organisationSlug: r.organisation_slug,
    reason: r.reason,
    status: r.status,
    toClusterVersion: r.to_cluster_version,
    windowEnd: r.window_end.toISOString(),
    windowStart: r.window_start.toISOString(),
    // The original client's fields: when the upgrade was requested, and whether it ignores maintenance windows.
    scheduleRequestDate: r.created_at.toISOString(),
    ignoreMaintenanceSchedule: r.ignore_maintenance_schedule ?? false,
    blockedReason: r.blocked_reason ?? null,
  };
}

/** The audit refs of an upgrade (organisation, environment, cluster, upgrade identity). */
export function upgradeAuditRefs(r: UpgradeRow): Pick<AuditEntry, 'organisation' | 'environment' | 'cluster' | 'referencedEntityIdentity'> {
  return {
    organisation: { id: Number(r.organisation_id), slug: r.organisation_slug },
    environment: { id: Number(r.environment_id), slug: r.environment_slug },
    cluster: { id: Number(r.cluster_id), slug: r.cluster_slug },
    referencedEntityIdentity: r.identity,
  };
}

/** "2026-11-24 02:00 to 04:00 UTC" or across days "2026-11-29 23:00 to 2026-11-30 01:00 UTC". */
export function describeUpgradeWindow(start: Date, end: Date): string {
  const s = start.toISOString();
  const e = end.toISOString();
  const sameDay = s.slice(0, 10) === e.slice(0, 10);
  return `${s.slice(0, 10)} ${s.slice(11, 16)} to ${sameDay ? '' : `${e.slice(0, 10)} `}${e.slice(11, 16)} UTC`;
}
