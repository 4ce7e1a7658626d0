import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Budgets of issue 41 (docs/metering.md): a monthly amount per organisation or environment with thresholds on the
 * actual and the forecast cost; `budget_alerts` records each threshold crossed once per period (its primary key), so
 * the webhook event and the activity entry of a crossing are written once, whichever replica evaluates it.
 */
export class Budgets1795400200400 implements MigrationInterface {
  name = 'Budgets1795400200400';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE budgets (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        organisation_id bigint NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        environment_id bigint REFERENCES environments(id) ON DELETE CASCADE,
        name text NOT NULL,
        amount numeric(20, 2) NOT NULL CHECK (amount > 0),
        currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
        thresholds jsonb NOT NULL CHECK (jsonb_typeof(thresholds) = 'array'),
        created_at timestamptz NOT NULL,
        modified_at timestamptz NOT NULL,
        version integer NOT NULL DEFAULT 1,
        UNIQUE (organisation_id, name)
      );
      CREATE TABLE budget_alerts (
        budget_id bigint NOT NULL REFERENCES budgets(id) ON DELETE CASCADE,
        period text NOT NULL CHECK (period ~ '^[0-9]{4}-(0[1-9]|1[0-2])$'),
        basis text NOT NULL CHECK (basis IN ('ACTUAL', 'FORECAST')),
        percent integer NOT NULL CHECK (percent > 0),
        cost numeric(20, 2) NOT NULL,
        crossed_at timestamptz NOT NULL,
        PRIMARY KEY (budget_id, period, basis, percent)
      );
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE budget_alerts; DROP TABLE budgets;`);
  }
}
