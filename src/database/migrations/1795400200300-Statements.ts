import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Monthly statements of issue 41 (docs/metering.md): a period (a calendar month in UTC) is closed once it is over
 * (plus a grace hour): its lines are written to `statement_lines` and never change again. A later change to the
 * period's usage becomes a new line with charge_class 'Correction' (FOCUS ChargeClass), holding the difference.
 * `statement_periods.organisation_type` keeps the type the period was priced with, so corrections price the same way.
 * No foreign keys to clusters: statements outlive what they describe.
 */
export class Statements1795400200300 implements MigrationInterface {
  name = 'Statements1795400200300';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE statement_periods (
        organisation_id bigint NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        period text NOT NULL CHECK (period ~ '^[0-9]{4}-(0[1-9]|1[0-2])$'),
        organisation_type text NOT NULL,
        closed_at timestamptz NOT NULL,
        PRIMARY KEY (organisation_id, period)
      );

      CREATE TABLE statement_lines (
        id bigserial PRIMARY KEY,
        organisation_id bigint NOT NULL,
        period text NOT NULL,
        line_key text NOT NULL,
        charge_class text CHECK (charge_class IN ('Correction')),
        recorded_at timestamptz NOT NULL,
        kind text NOT NULL CHECK (kind IN ('CONTROL_PLANE', 'NODES')),
        environment_id bigint NOT NULL,
        environment_slug text NOT NULL,
        cluster_id bigint NOT NULL,
        cluster_identity uuid NOT NULL,
        cluster_slug text NOT NULL,
        cluster_name text NOT NULL,
        node_pool_identity uuid,
        node_pool_name text,
        cloud_provider text NOT NULL,
        region text NOT NULL,
        node_type text,
        highly_available boolean,
        price_identity uuid,
        currency text,
        unit_price numeric(20, 10),
        list_unit_price numeric(20, 10),
        charge_period_start timestamptz NOT NULL,
        charge_period_end timestamptz NOT NULL,
        quantity numeric(24, 6) NOT NULL,
        billed_cost numeric(20, 2) NOT NULL,
        list_cost numeric(20, 2) NOT NULL,
        FOREIGN KEY (organisation_id, period) REFERENCES statement_periods (organisation_id, period) ON DELETE CASCADE
      );
      CREATE INDEX statement_lines_period_idx ON statement_lines (organisation_id, period, id);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE statement_lines; DROP TABLE statement_periods;`);
  }
}
