import { MigrationInterface, QueryRunner } from 'typeorm';

/** Alert silences per observability tenant (Alertmanager v2 semantics: matchers, a time range, a comment). */
export class AlertSilences1764000014300 implements MigrationInterface {
  name = 'AlertSilences1764000014300';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE alert_silences (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id bigint NOT NULL REFERENCES observability_tenants(id) ON DELETE CASCADE,
        matchers jsonb NOT NULL,
        starts_at timestamptz NOT NULL,
        ends_at timestamptz NOT NULL,
        comment text NOT NULL,
        created_by text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT alert_silences_range_chk CHECK (ends_at > starts_at)
      );
      CREATE INDEX alert_silences_tenant_ends_idx ON alert_silences (tenant_id, ends_at);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE alert_silences`);
  }
}
