import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The reconciler at fleet scale: a claimed cluster carries a lease (until when, and which claim holds it), so
 * the driver is called outside any transaction and a crashed replica's clusters are taken over once the
 * lease has passed. Settled clusters are observed oldest observation first through a partial index (the
 * predicate is OBSERVE_CANDIDATE_PREDICATE in cluster.entity.ts, unchanged).
 */
export class ReconcileLease1764000031100 implements MigrationInterface {
  name = 'ReconcileLease1764000031100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE clusters ADD COLUMN reconcile_lease_until timestamptz, ADD COLUMN reconcile_lease_token uuid;
      CREATE INDEX clusters_observe_idx ON clusters (observed_at NULLS FIRST, id)
        WHERE deleted_at IS NULL AND status IN ('started','stopped') AND desired_status IS NULL
          AND version IS NOT DISTINCT FROM observed_version;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP INDEX clusters_observe_idx;
      ALTER TABLE clusters DROP COLUMN reconcile_lease_token, DROP COLUMN reconcile_lease_until;
    `);
  }
}
