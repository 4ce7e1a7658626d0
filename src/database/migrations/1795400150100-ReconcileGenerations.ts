import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The reconciler applies pending generations (docs/adr/0151-reconciler-on-the-driver-contract.md): a cluster whose
 * generation is newer than the one the driver reported applied is a reconcile candidate, and not a settled one to
 * observe. Both partial indexes take the predicates of cluster.entity.ts (RECONCILE_CANDIDATE_PREDICATE,
 * OBSERVE_CANDIDATE_PREDICATE), on the same columns in the same order.
 */
export class ReconcileGenerations1795400150100 implements MigrationInterface {
  name = 'ReconcileGenerations1795400150100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP INDEX clusters_reconcile_idx;
      CREATE INDEX clusters_reconcile_idx ON clusters (next_attempt_at NULLS FIRST, id)
        WHERE deleted_at IS NULL
          AND (desired_status IS NOT NULL
               OR status IN ('new','provisioning','provisioned','starting','stopping','deleting','unknown')
               OR version IS DISTINCT FROM observed_version
               OR generation > observed_generation);
      DROP INDEX clusters_observe_idx;
      CREATE INDEX clusters_observe_idx ON clusters (observed_at NULLS FIRST, id)
        WHERE deleted_at IS NULL AND status IN ('started','stopped') AND desired_status IS NULL
          AND version IS NOT DISTINCT FROM observed_version
          AND (observed_generation IS NULL OR observed_generation >= generation);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP INDEX clusters_reconcile_idx;
      CREATE INDEX clusters_reconcile_idx ON clusters (next_attempt_at NULLS FIRST, id)
        WHERE deleted_at IS NULL
          AND (desired_status IS NOT NULL
               OR status IN ('new','provisioning','provisioned','starting','stopping','deleting','unknown')
               OR version IS DISTINCT FROM observed_version);
      DROP INDEX clusters_observe_idx;
      CREATE INDEX clusters_observe_idx ON clusters (observed_at NULLS FIRST, id)
        WHERE deleted_at IS NULL AND status IN ('started','stopped') AND desired_status IS NULL
          AND version IS NOT DISTINCT FROM observed_version;
    `);
  }
}
