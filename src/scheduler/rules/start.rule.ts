import { Injectable } from '@nestjs/common';
import { overlappingExclusion } from '../../maintenance/maintenance-exclusion';
import { ClusterPolicyEnforcer, policyLabel, PolicyVerdict, SYSTEM_POLICY_USER } from '../../policies/cluster-policy-enforcer';
import { countTransition, ruleBatch, RuleBatch, SchedulerRule, Transitions } from '../scheduler-rule';
import { SchedulerSql } from '../shared/scheduler-sql';
import { OpenUpgradeRow, UpgradeTransitions, upgradeSubject } from '../shared/upgrade-transitions';
import { covering, exclusionsOf } from '../shared/windows';

/**
 * Window open and the cluster running: set its desired version (the reconciler upgrades it), UPDATED. The change
 * is evaluated against the cluster policies (request.user `system`): a Deny holds the upgrade (`blocked_reason`
 * names the policies, `held_by_policy`), re-evaluated on each pass of the window; once no policy denies it, the
 * hold is released and the next pass starts it (after SequenceRule had its say). Warn and Audit findings are
 * recorded as CLUSTER_POLICY_VIOLATED when it starts.
 */
@Injectable()
export class StartRule implements SchedulerRule {
  constructor(
    private readonly sql: SchedulerSql,
    private readonly upgrades: UpgradeTransitions,
    private readonly policies: ClusterPolicyEnforcer,
  ) {}

  async batch(now: Date, after: string, limit: number): Promise<RuleBatch> {
    const rows = await this.upgrades.open(
      `u.status IN ('SCHEDULED','SCHEDULED_NOTIFIED') AND u.window_start <= $1 AND u.window_end > $1 AND (u.blocked_reason IS NULL OR u.held_by_policy)
       AND c.deleted_at IS NULL AND c.status = 'started' AND c.desired_status IS NULL`,
      [now],
      after,
      limit,
    );
    const done: Transitions = {};
    const withPolicies = await this.policies.organisationsWithPolicies(rows.map((r) => r.organisation_id));
    for (const row of rows) {
      // An upgrade the scheduler planned does not start inside an exclusion covering it (ReplanRule normally moved
      // it already); an administrator's upgrade is not held back.
      if (row.created_by === 'system') {
        const applying = covering(exclusionsOf(row, null), row.cluster_version, row.to_cluster_version);
        if (overlappingExclusion(applying.map((x) => x.exclusion), now, new Date(now.getTime() + 1))) continue;
      }
      let verdict: PolicyVerdict | null = null;
      if (withPolicies.has(Number(row.organisation_id))) {
        verdict = await this.policies.checkInBackground({
          clusterId: Number(row.cluster_id),
          operation: 'UPDATE',
          resource: 'scheduledClusterUpgrades',
          overrides: { version: row.to_cluster_version },
          user: SYSTEM_POLICY_USER,
        });
        // The executor did not take the evaluation (the organisation's queue is full): next pass.
        if (!verdict) continue;
        if (verdict.denied.length) {
          await this.hold(row, verdict, now);
          continue;
        }
      }
      if (row.held_by_policy) {
        await this.release(row, now);
        continue;
      }
      const started = await this.upgrades.transition(row, 'UPDATED', now, {
        details: { version: { old: row.cluster_version, new: row.to_cluster_version } },
        message: `system started the upgrade of cluster ${upgradeSubject(row)} from ${row.cluster_version} to ${row.to_cluster_version}`,
        before: async () => {
          await this.sql.q(
            `UPDATE clusters SET version = $2, next_attempt_at = NULL, modified_at = $3, row_version = row_version + 1 WHERE id = $1`,
            [row.cluster_id, row.to_cluster_version, now],
          );
          if (verdict) await this.policies.recordInBackground(verdict);
        },
      });
      if (started) countTransition(done, 'UPDATED');
    }
    return ruleBatch(rows, limit, done);
  }

  /** Held by the Deny findings (audited once per reason: a pass that finds the same policies denying writes nothing). */
  private async hold(row: OpenUpgradeRow, verdict: PolicyVerdict, now: Date): Promise<void> {
    const reason = verdict.denied.map((f) => `${policyLabel(f)}: ${f.message}`).join('; ').slice(0, 2000);
    if (row.held_by_policy && row.blocked_reason === reason) return;
    await this.sql.savepoint(async () => {
      await this.sql.guardedUpdate(
        `UPDATE scheduled_cluster_upgrades SET blocked_reason = $3, held_by_policy = true, modified_at = $4, version = version + 1
          WHERE id = $1 AND status = $2 AND blocked_reason IS NOT DISTINCT FROM $5`,
        [row.id, row.status, reason, now, row.blocked_reason],
        row,
      );
      await this.upgrades.record(
        'SCHEDULED_CLUSTER_UPGRADE_BLOCKED',
        row,
        { blockedReason: { old: row.blocked_reason, new: reason } },
        `system held the upgrade of cluster ${upgradeSubject(row)} to ${row.to_cluster_version}: ${reason}`,
      );
      for (const f of verdict.denied) {
        await this.policies.recordDenialInBackground(verdict, f, `the upgrade to ${row.to_cluster_version} (upgrade ${row.identity}) is held`, {
          toClusterVersion: { old: null, new: row.to_cluster_version },
        });
      }
    });
  }

  /** No policy denies it any more: the hold is released (the next pass starts it). */
  private async release(row: OpenUpgradeRow, now: Date): Promise<void> {
    await this.sql.savepoint(async () => {
      await this.sql.guardedUpdate(
        `UPDATE scheduled_cluster_upgrades SET blocked_reason = NULL, held_by_policy = false, modified_at = $3, version = version + 1
          WHERE id = $1 AND status = $2 AND held_by_policy`,
        [row.id, row.status, now],
        row,
      );
      await this.upgrades.record(
        'SCHEDULED_CLUSTER_UPGRADE_UNBLOCKED',
        row,
        { blockedReason: { old: row.blocked_reason, new: null } },
        `system released the upgrade of cluster ${upgradeSubject(row)} to ${row.to_cluster_version}: no cluster policy denies it any more`,
      );
    });
  }
}
