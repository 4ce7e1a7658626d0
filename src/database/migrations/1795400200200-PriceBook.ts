import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The price book of issue 41 (docs/metering.md, ADR 0201): what an hour of a control plane (with or without high
 * availability) or of one node of a node type costs, per cloud provider and region, from an effective time on.
 * Prices are `numeric` (exact decimals, never floating point); the list price and, per organisation type, the price
 * that type pays. An entry applies from `effective_from` until the next entry of the same key begins or its own
 * `effective_to`, whichever comes first (the view `price_book_periods`). The service refuses every change that would
 * reach into the past. One currency for the whole price book (the service checks it).
 */
export class PriceBook1795400200200 implements MigrationInterface {
  name = 'PriceBook1795400200200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE price_book_entries (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        kind text NOT NULL CHECK (kind IN ('CONTROL_PLANE', 'NODE')),
        cloud_provider text NOT NULL,
        region text NOT NULL,
        node_type text,
        highly_available boolean,
        currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
        list_price_per_hour numeric(20, 10) NOT NULL CHECK (list_price_per_hour >= 0),
        organisation_type_prices jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(organisation_type_prices) = 'object'),
        effective_from timestamptz NOT NULL,
        effective_to timestamptz,
        created_at timestamptz NOT NULL,
        modified_at timestamptz NOT NULL,
        version integer NOT NULL DEFAULT 1,
        CHECK (effective_to IS NULL OR effective_to > effective_from),
        CHECK ((kind = 'CONTROL_PLANE' AND highly_available IS NOT NULL AND node_type IS NULL)
            OR (kind = 'NODE' AND node_type IS NOT NULL AND highly_available IS NULL))
      );
      CREATE UNIQUE INDEX price_book_entries_key_from_uq
        ON price_book_entries (kind, cloud_provider, region, COALESCE(node_type, ''), COALESCE(highly_available, false), effective_from);

      CREATE VIEW price_book_periods AS
      SELECT e.*,
             LEAST(COALESCE(e.effective_to, 'infinity'::timestamptz),
                   COALESCE(LEAD(e.effective_from) OVER (PARTITION BY e.kind, e.cloud_provider, e.region, e.node_type, e.highly_available
                                                         ORDER BY e.effective_from), 'infinity'::timestamptz)) AS valid_to
        FROM price_book_entries e;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP VIEW price_book_periods; DROP TABLE price_book_entries;`);
  }
}
