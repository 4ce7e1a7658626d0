import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Who cancelled a scheduled upgrade: a user's name (DELETE) or `system` (the scheduler, e.g. the
 * cluster was deleted or left auto-upgrade). The scheduler does not plan again a version whose
 * upgrade a person cancelled, but does after its own cancellations.
 */
export class ScheduledUpgradeCancelledBy1763800600000 implements MigrationInterface {
  name = 'ScheduledUpgradeCancelledBy1763800600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE scheduled_cluster_upgrades ADD COLUMN cancelled_by text;
      ALTER TABLE scheduled_cluster_upgrades ADD CONSTRAINT scheduled_cluster_upgrades_cancelled_by_chk
        CHECK (cancelled_by IS NULL OR status = 'CANCELLED');
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE scheduled_cluster_upgrades DROP CONSTRAINT scheduled_cluster_upgrades_cancelled_by_chk;
      ALTER TABLE scheduled_cluster_upgrades DROP COLUMN cancelled_by;
    `);
  }
}
