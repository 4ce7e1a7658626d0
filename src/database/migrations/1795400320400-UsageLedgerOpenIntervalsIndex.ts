import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An index of the open intervals by cluster (docs/adr/0204): metering_sync_clusters reads a cluster's open intervals
 * on every priced change, and found them through usage_intervals_cluster_idx (cluster_id, started_at), which holds
 * every interval the cluster ever had: the cost of a resize grew with the pool's history (6,110 closed intervals
 * read and filtered out, 6.4 ms, after 6,000 resizes of one pool; bench/ledger-resize.ts). A cluster has a handful
 * of open intervals, and only those are in this index.
 */
export class UsageLedgerOpenIntervalsIndex1795400320400 implements MigrationInterface {
  name = 'UsageLedgerOpenIntervalsIndex1795400320400';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX usage_intervals_open_idx ON usage_intervals (cluster_id) WHERE ended_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX usage_intervals_open_idx`);
  }
}
