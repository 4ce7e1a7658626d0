import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * cluster_policies.failure_policy: what a change does when the policy's expression cannot be evaluated (an error,
 * its run-time budget spent, the executor's deadline or heap bound), as Kubernetes admission policies' failurePolicy:
 * 'Fail' (the default, and what every policy did so far) counts it as a violation under the policy's action; 'Ignore'
 * lets the change pass that policy and records CLUSTER_POLICY_EVALUATION_FAILED.
 */
export class PolicyFailurePolicy1795400071000 implements MigrationInterface {
  name = 'PolicyFailurePolicy1795400071000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE cluster_policies ADD COLUMN failure_policy text NOT NULL DEFAULT 'Fail' CHECK (failure_policy IN ('Fail', 'Ignore'))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE cluster_policies DROP COLUMN failure_policy`);
  }
}
