import { Injectable } from '@nestjs/common';
import type { MaintenanceWindow } from '../../maintenance/maintenance-window';
import { ClusterPolicyEnforcer, PolicyVerdict, SYSTEM_POLICY_USER } from '../../policies/cluster-policy-enforcer';
import { describeUpgradeWindow, UPGRADE_COLUMNS, UPGRADE_FROM, UpgradeRow } from '../../upgrades/upgrade-rows';
import { countTransition, ruleBatch, RuleBatch, SchedulerRule, Transitions } from '../scheduler-rule';
import { SchedulerSql } from '../shared/scheduler-sql';
import { UpgradeTransitions, upgradeSubject } from '../shared/upgrade-transitions';
import { sequencingGate, upstreamSql, UpstreamFacts } from '../shared/upstream';
import { newer, samePatchLine } from '../shared/versions';
import { covering, ExclusionColumns, exclusionsOf, sequencedWindow } from '../shared/windows';

interface CandidateCluster extends UpstreamFacts, ExclusionColumns {
  id: number;
  /** An open upgrade exists (nothing to plan). */
  has_open: boolean;
  /** The channel's version failed before or a person cancelled it: not planned again by itself. */
  refused: boolean;
  organisation_id: number;
  version: string;
  channel_name: string;
  channel_version: string;
  windows: MaintenanceWindow[] | null;
  time_zone: string | null;
  auto_upgrade_policy: string;
  /** A cluster policy's refusal of an upgrade of this cluster was recorded (cluster_policy_denials). */
  has_denials: boolean;
}

/**
 * Auto-upgrade clusters behind their channel, with no open upgrade: SCHEDULED in the next window. The candidates
 * are found from the update channels: per channel, the auto-upgrade clusters on it whose version sorts before or
 * after the channel's, two range scans of clusters_channel_version_idx that skip the clusters on the channel's
 * version (a fleet at rest reads no cluster row).
 */
@Injectable()
export class PlanNewRule implements SchedulerRule {
  constructor(
    private readonly sql: SchedulerSql,
    private readonly upgrades: UpgradeTransitions,
    private readonly policies: ClusterPolicyEnforcer,
  ) {}

  async batch(now: Date, after: string, limit: number): Promise<RuleBatch> {
    const upstream = upstreamSql('ch.kubernetes_cluster_version');
    const candidates = await this.sql.q<CandidateCluster>(
      `WITH behind AS (
         SELECT b.id, ch.name AS channel_name, ch.kubernetes_cluster_version AS channel_version
           FROM update_channels ch
           CROSS JOIN LATERAL (
             SELECT c.id FROM clusters c
              WHERE c.update_channel = ch.name AND c.auto_upgrade AND c.deleted_at IS NULL
                AND c.version < ch.kubernetes_cluster_version AND c.id > $1
             UNION ALL
             SELECT c.id FROM clusters c
              WHERE c.update_channel = ch.name AND c.auto_upgrade AND c.deleted_at IS NULL
                AND c.version > ch.kubernetes_cluster_version AND c.id > $1) b
          ORDER BY b.id
          LIMIT $2)
       SELECT c.id, c.organisation_id, c.version, c.auto_upgrade_policy, ch.name AS channel_name, ch.kubernetes_cluster_version AS channel_version,
              ms.windows, ms.time_zone, c.maintenance_exclusions AS cluster_exclusions, ms.exclusions AS schedule_exclusions,
              EXISTS (SELECT 1 FROM scheduled_cluster_upgrades u
                       WHERE u.cluster_id = c.id AND u.status IN ('SCHEDULED','SCHEDULED_NOTIFIED','UPDATED')) AS has_open,
              -- a version whose upgrade failed, or a person cancelled, is not planned again by itself
              EXISTS (SELECT 1 FROM scheduled_cluster_upgrades u
                       WHERE u.cluster_id = c.id AND u.to_cluster_version = ch.kubernetes_cluster_version
                         AND (u.status = 'FAILED' OR (u.status = 'CANCELLED' AND u.cancelled_by IS DISTINCT FROM 'system'))) AS refused,
              EXISTS (SELECT 1 FROM cluster_policy_denials d WHERE d.cluster_id = c.id) AS has_denials,
              ${upstream.columns}
         FROM behind
         JOIN clusters c ON c.id = behind.id
         JOIN update_channels ch ON ch.name = behind.channel_name
         LEFT JOIN maintenance_schedules ms ON ms.id = c.maintenance_schedule_id
         ${upstream.joins}
        ORDER BY c.id`,
      [after, limit],
    );
    const done: Transitions = {};
    const withPolicies = await this.policies.organisationsWithPolicies(candidates.map((c) => c.organisation_id));
    for (const c of candidates) {
      if (c.has_open || c.refused) continue;
      if (!newer(c.channel_version, c.version)) continue;
      // PATCH_ONLY: a channel on another minor plans nothing (the cluster shows upgradeAvailable instead).
      if (c.auto_upgrade_policy === 'PATCH_ONLY' && !samePatchLine(c.channel_version, c.version)) continue;
      // Rollout sequencing: behind an upstream cluster, only once it has run the version for the soak time (and
      // not after its upgrade to it failed); nothing is planned meanwhile.
      const gate = sequencingGate(c, c.channel_version, now);
      if (gate.held) continue;
      // The window open now when enough of it remains (a user who opens a window wants it used), else the next;
      // either way the first one no exclusion covering this upgrade overlaps. None found: nothing is planned yet.
      // Behind an upstream, the first window starting at or after the end of its soak.
      const applying = covering(exclusionsOf(c, null), c.version, c.channel_version);
      const window = sequencedWindow(c.windows, c.time_zone, now, applying, gate.soakEnd);
      if (!window) continue;
      // The scheduler's change is evaluated like a person's: a Deny refuses the target version (nothing planned).
      let verdict: PolicyVerdict | null = null;
      if (withPolicies.has(Number(c.organisation_id))) {
        verdict = await this.policies.checkInBackground({
          clusterId: Number(c.id),
          operation: 'UPDATE',
          resource: 'scheduledClusterUpgrades',
          overrides: { version: c.channel_version },
          user: SYSTEM_POLICY_USER,
        });
        // The executor did not take the evaluation (the organisation's queue is full): next pass.
        if (!verdict) continue;
        if (verdict.denied.length) {
          await this.recordDenied(c, verdict, now);
          continue;
        }
      }
      if (await this.plan(c, window, now, verdict)) countTransition(done, 'SCHEDULED');
    }
    return ruleBatch(candidates, limit, done);
  }

  /**
   * A Deny kept the upgrade of `c` to its channel's version from being planned: CLUSTER_POLICY_DENIED once per
   * cluster, target version and policy (cluster_policy_denials), not on every pass that finds it denied again.
   */
  private async recordDenied(c: CandidateCluster, verdict: PolicyVerdict, now: Date): Promise<void> {
    await this.sql.savepoint(async () => {
      for (const f of verdict.denied) {
        const [fresh] = await this.sql.q(
          `INSERT INTO cluster_policy_denials (cluster_id, to_cluster_version, policy_identity, recorded_at) VALUES ($1, $2, $3, $4)
           ON CONFLICT DO NOTHING RETURNING policy_identity`,
          [c.id, c.channel_version, f.policy.identity, now],
        );
        if (!fresh) continue;
        await this.policies.recordDenialInBackground(
          verdict,
          f,
          `the upgrade from ${c.version} to ${c.channel_version} (update channel ${c.channel_name}) was not planned`,
          { fromClusterVersion: { old: null, new: c.version }, toClusterVersion: { old: null, new: c.channel_version } },
        );
      }
    });
  }

  /** A SCHEDULED upgrade of `c` to its channel's version in `window`, audited; false when none was created. */
  private async plan(c: CandidateCluster, window: { start: Date; end: Date }, now: Date, verdict: PolicyVerdict | null): Promise<boolean> {
    const reason =
      `update channel ${c.channel_name} moved to ${c.channel_version}` +
      (c.up_id != null ? `; upstream cluster ${c.up_subject} runs it since ${c.up_since!.toISOString()} (soak ${c.soak_hours} h)` : '');
    const planned = await this.sql.savepoint(async () => {
      const [inserted] = await this.sql.q<{ identity: string }>(
        `INSERT INTO scheduled_cluster_upgrades
           (organisation_id, cluster_id, from_cluster_version, to_cluster_version, window_start, window_end, status, reason,
            created_by, created_at, modified_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'SCHEDULED', $7, 'system', $8, $8)
         ON CONFLICT DO NOTHING RETURNING identity`,
        [c.organisation_id, c.id, c.version, c.channel_version, window.start, window.end, reason, now],
      );
      if (!inserted) return false; // an open upgrade appeared meanwhile (e.g. created by an administrator)
      const [row] = await this.sql.q<UpgradeRow>(`SELECT ${UPGRADE_COLUMNS} ${UPGRADE_FROM} WHERE u.identity = $1`, [inserted.identity]);
      await this.upgrades.record(
        'SCHEDULED_CLUSTER_UPGRADE_SCHEDULED',
        row,
        {
          status: { old: null, new: 'SCHEDULED' },
          fromClusterVersion: { old: null, new: row.from_cluster_version },
          toClusterVersion: { old: null, new: row.to_cluster_version },
          windowStart: { old: null, new: row.window_start.toISOString() },
          windowEnd: { old: null, new: row.window_end.toISOString() },
          reason: { old: null, new: reason },
        },
        `system scheduled an upgrade of cluster ${upgradeSubject(row)} from ${row.from_cluster_version} to ${row.to_cluster_version} ` +
          `in the window ${describeUpgradeWindow(row.window_start, row.window_end)} (${reason})`,
      );
      // Warn and Audit findings of the plan are recorded (nobody receives a Warning header in background work).
      if (verdict) await this.policies.recordInBackground(verdict);
      // A denial recorded earlier is over: a later Deny of this cluster is news again.
      if (c.has_denials) await this.sql.q(`DELETE FROM cluster_policy_denials WHERE cluster_id = $1`, [c.id]);
      return true;
    });
    return planned === true;
  }
}
