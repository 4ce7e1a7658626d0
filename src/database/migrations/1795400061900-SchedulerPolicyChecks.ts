import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The scheduler's own changes are evaluated against cluster policies (docs/policies.md, "The scheduler"):
 *
 * - scheduled_cluster_upgrades.held_by_policy: the upgrade's `blocked_reason` is a cluster policy's Deny at the
 *   start of its window (not rollout sequencing): the start rule re-evaluates it each pass of the window and the
 *   sequencing rule leaves it alone; the window still ends in MISSED.
 * - cluster_policy_denials: a policy that refused an upgrade the scheduler would have planned (cluster, target
 *   version, policy), so CLUSTER_POLICY_DENIED is recorded once, not on every pass. Cleared when the cluster's
 *   upgrade is planned.
 */
export class SchedulerPolicyChecks1795400061900 implements MigrationInterface {
  name = 'SchedulerPolicyChecks1795400061900';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE scheduled_cluster_upgrades ADD COLUMN held_by_policy boolean NOT NULL DEFAULT false;
      CREATE TABLE cluster_policy_denials (
        cluster_id bigint NOT NULL REFERENCES clusters(id) ON DELETE CASCADE,
        to_cluster_version text NOT NULL,
        policy_identity uuid NOT NULL,
        recorded_at timestamptz NOT NULL,
        PRIMARY KEY (cluster_id, to_cluster_version, policy_identity)
      );
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TABLE cluster_policy_denials;
      ALTER TABLE scheduled_cluster_upgrades DROP COLUMN held_by_policy;
    `);
  }
}
