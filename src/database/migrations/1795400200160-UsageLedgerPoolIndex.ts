import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An index on usage_intervals by node pool: metering_sync_cluster looks up a pool's last interval when it opens the
 * next one (so it never starts before the last one ended); without it, every node-pool insert or change scanned the
 * whole ledger (found while npm run bench:metering seeded 10,000 clusters).
 */
export class UsageLedgerPoolIndex1795400200160 implements MigrationInterface {
  name = 'UsageLedgerPoolIndex1795400200160';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX usage_intervals_pool_idx ON usage_intervals (node_pool_id, ended_at) WHERE node_pool_id IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX usage_intervals_pool_idx`);
  }
}
