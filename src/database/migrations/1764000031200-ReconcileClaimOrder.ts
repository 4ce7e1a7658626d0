import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The reconciler's claim orders candidates by `next_attempt_at NULLS FIRST, id`; the candidate index had
 * only `(next_attempt_at)` in the default order (nulls last), so every claim read and sorted all candidates,
 * and the planner (which misjudges `version IS DISTINCT FROM observed_version`) chose a sequential scan of
 * the whole table: about 45 ms per claim at 100,000 clusters, once per worker. In the claim's own order an
 * index scan stops at the first row (well under a millisecond). Same name and predicate
 * (RECONCILE_CANDIDATE_PREDICATE), so the claim query is unchanged.
 */
export class ReconcileClaimOrder1764000031200 implements MigrationInterface {
  name = 'ReconcileClaimOrder1764000031200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP INDEX clusters_reconcile_idx;
      CREATE INDEX clusters_reconcile_idx ON clusters (next_attempt_at NULLS FIRST, id)
        WHERE deleted_at IS NULL
          AND (desired_status IS NOT NULL
               OR status IN ('new','provisioning','provisioned','starting','stopping','deleting','unknown')
               OR version IS DISTINCT FROM observed_version);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP INDEX clusters_reconcile_idx;
      CREATE INDEX clusters_reconcile_idx ON clusters (next_attempt_at)
        WHERE deleted_at IS NULL
          AND (desired_status IS NOT NULL
               OR status IN ('new','provisioning','provisioned','starting','stopping','deleting','unknown')
               OR version IS DISTINCT FROM observed_version);
    `);
  }
}
