import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A cluster with deleteProtection is never deleted: the database refuses any row that is protected while a
 * deletion is pending or running, so no race between a protecting PATCH, a deleting PATCH and the reconciler
 * can get past it. Rows that break the rule today keep their protection and lose the pending deletion
 * (protection was asked for last); rows already being deleted lose the flag.
 */
export class DeleteProtectionGuard1764000015300 implements MigrationInterface {
  name = 'DeleteProtectionGuard1764000015300';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      UPDATE clusters SET desired_status = NULL
       WHERE delete_protection AND desired_status = 'deleting' AND status NOT IN ('deleting', 'deleted');
      UPDATE clusters SET delete_protection = false WHERE delete_protection AND status IN ('deleting', 'deleted');
      ALTER TABLE clusters ADD CONSTRAINT clusters_delete_protection_chk
        CHECK (NOT delete_protection OR (desired_status IS DISTINCT FROM 'deleting' AND status NOT IN ('deleting', 'deleted')));
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE clusters DROP CONSTRAINT clusters_delete_protection_chk`);
  }
}
