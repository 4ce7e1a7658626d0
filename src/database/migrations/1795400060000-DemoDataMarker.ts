import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One row per one-off start-up action already done, so it is done once per database whatever the replica:
 * `demo-data` records that the demo organisation was created (src/demo), so it is not created again after
 * someone deleted it.
 */
export class DemoDataMarker1795400060000 implements MigrationInterface {
  name = 'DemoDataMarker1795400060000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE start_up_markers (name text PRIMARY KEY, created_at timestamptz NOT NULL)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE start_up_markers`);
  }
}
