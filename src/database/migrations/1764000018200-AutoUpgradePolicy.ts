import { MigrationInterface, QueryRunner } from 'typeorm';

/** Auto-upgrade may be limited to patch versions of the minor a cluster runs. */
export class AutoUpgradePolicy1764000018200 implements MigrationInterface {
  name = 'AutoUpgradePolicy1764000018200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE clusters ADD COLUMN auto_upgrade_policy text NOT NULL DEFAULT 'PATCH_AND_MINOR'
        CONSTRAINT clusters_auto_upgrade_policy_chk CHECK (auto_upgrade_policy IN ('PATCH_AND_MINOR', 'PATCH_ONLY'));
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE clusters DROP COLUMN auto_upgrade_policy`);
  }
}
