import { MigrationInterface, QueryRunner } from 'typeorm';

/** Maintenance windows are local to the schedule's IANA time zone; existing schedules stay on UTC. */
export class MaintenanceTimeZone1764000018100 implements MigrationInterface {
  name = 'MaintenanceTimeZone1764000018100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE maintenance_schedules ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE maintenance_schedules DROP COLUMN time_zone`);
  }
}
