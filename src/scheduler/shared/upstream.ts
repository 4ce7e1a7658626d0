import type { ScheduledUpgradeStatus } from '../../upgrades/scheduled-cluster-upgrade.entity';
import { atLeast } from './versions';

const HOUR_MS = 60 * 60 * 1000;

/**
 * Rollout sequencing facts about a cluster's upstream cluster, for one target version (see `upstreamSql`).
 * `up_id` is null when the cluster has no (live) upstream cluster.
 */
export interface UpstreamFacts {
  up_id: number | null;
  up_subject: string | null;
  up_version: string | null;
  up_since: Date | null;
  up_upgrade: string | null;
  up_upgrade_status: ScheduledUpgradeStatus | null;
  soak_hours: number;
}

/**
 * Columns and joins giving the UpstreamFacts of cluster `c` for the target version `target` (an SQL
 * expression): the upstream's running version and since when, its latest upgrade to the target, and the
 * soak time that applies (the cluster's own, else its organisation's).
 */
export function upstreamSql(target: string): { columns: string; joins: string } {
  return {
    columns: `up.id AS up_id, upe.slug || '/' || up.slug AS up_subject, up.observed_version AS up_version, up.version_since AS up_since,
              upu.identity AS up_upgrade, upu.status AS up_upgrade_status,
              COALESCE(c.upgrade_soak_hours, (SELECT o2.upgrade_soak_hours FROM organisations o2 WHERE o2.id = c.organisation_id)) AS soak_hours`,
    joins: `LEFT JOIN clusters up ON up.id = c.upstream_cluster_id AND up.deleted_at IS NULL
            LEFT JOIN environments upe ON upe.id = up.environment_id
            LEFT JOIN LATERAL (SELECT x.identity, x.status FROM scheduled_cluster_upgrades x
                                WHERE x.cluster_id = up.id AND x.to_cluster_version = ${target}
                                ORDER BY x.id DESC LIMIT 1) upu ON true`,
  };
}

/** Whether sequencing holds an upgrade to a version back, and when the upstream's soak ended (or ends). */
export interface Gate {
  held: string | null;
  soakEnd: Date | null;
}

/**
 * Rollout sequencing for an upgrade to `to` of a cluster with these upstream facts: held (with the reason) while
 * the upstream does not run `to` (or newer), its upgrade to `to` is still under way, or it runs `to` for less than
 * the soak time; and when the upstream's latest upgrade to `to` FAILED (and it does not run `to` after all).
 * `soakEnd` is when the upstream's soak ended (null without an upstream).
 */
export function sequencingGate(f: UpstreamFacts, to: string, now: Date): Gate {
  if (f.up_id == null) return { held: null, soakEnd: null };
  const hours = Number(f.soak_hours);
  const runs = !!f.up_version && atLeast(f.up_version, to);
  if (!runs && f.up_upgrade_status === 'FAILED') {
    return { held: `upstream cluster ${f.up_subject} failed its upgrade to ${to} (upgrade ${f.up_upgrade})`, soakEnd: null };
  }
  // While the upstream's upgrade to `to` is still UPDATED its outcome is open (and the soak starts when it
  // is recorded as SUCCEEDED).
  const settled = runs && f.up_upgrade_status !== 'UPDATED';
  const soakEnd = settled && f.up_since ? new Date(new Date(f.up_since).getTime() + hours * HOUR_MS) : null;
  if (!soakEnd || soakEnd.getTime() > now.getTime()) {
    return { held: `waiting for upstream cluster ${f.up_subject} to run ${to} for ${hours} h`, soakEnd };
  }
  return { held: null, soakEnd };
}

