import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Maintenance exclusions: periods without scheduler-planned upgrades of a scope, on a schedule (for all its
 * clusters) and on a cluster (for itself). Both default to none.
 */
export class MaintenanceExclusions1764000030100 implements MigrationInterface {
  name = 'MaintenanceExclusions1764000030100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE maintenance_schedules ADD COLUMN exclusions jsonb NOT NULL DEFAULT '[]'
        CONSTRAINT maintenance_schedules_exclusions_chk CHECK (jsonb_typeof(exclusions) = 'array' AND jsonb_array_length(exclusions) <= 5);
      ALTER TABLE clusters ADD COLUMN maintenance_exclusions jsonb NOT NULL DEFAULT '[]'
        CONSTRAINT clusters_maintenance_exclusions_chk
          CHECK (jsonb_typeof(maintenance_exclusions) = 'array' AND jsonb_array_length(maintenance_exclusions) <= 5);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE clusters DROP COLUMN maintenance_exclusions;
      ALTER TABLE maintenance_schedules DROP COLUMN exclusions;
    `);
  }
}
