import { MigrationInterface, QueryRunner } from 'typeorm';

/** An upgrade a platform administrator placed outside the cluster's maintenance windows on purpose. */
export class IgnoreMaintenanceSchedule1764000018300 implements MigrationInterface {
  name = 'IgnoreMaintenanceSchedule1764000018300';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE scheduled_cluster_upgrades ADD COLUMN ignore_maintenance_schedule boolean NOT NULL DEFAULT false`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE scheduled_cluster_upgrades DROP COLUMN ignore_maintenance_schedule`);
  }
}
