import { MigrationInterface, QueryRunner } from 'typeorm';
import { buildIndexConcurrently } from '../concurrent-index';

/**
 * Indexes for the retention job (src/retention) and the per-cluster audit list:
 * - `audit_events (created_at)`, `activity_events (created_at)`: each retention batch reads the oldest rows
 *   below the cutoff through them and stops after the batch size (the existing indexes lead with
 *   organisation_id or cluster_id, so without these a batch, and even a pass with nothing to delete, would
 *   read the whole table).
 * - `tenant_alerts (ends_at) WHERE status = 'resolved'`: resolved alerts expire by the time they ended.
 * - `webhook_events (created_at)` exists already (1764000032100); deliveries are found by `webhook_deliveries_event`.
 * - `audit_events (organisation_id, environment_slug, cluster_slug, created_at, id)`: the per-cluster audit
 *   list selects by organisation and slugs (a deleted cluster's events stay listed under its slug), which
 *   `audit_events_cluster_idx` (by cluster_id) cannot serve; without it the list read every event of the
 *   organisation and sorted them. See docs/performance-history.md, "Audit lists and retention at 10 million rows".
 * Built CONCURRENTLY (no transaction), so audit writes go on while a large table is indexed.
 */
export class RetentionIndexes1764000034100 implements MigrationInterface {
  name = 'RetentionIndexes1764000034100';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await buildIndexConcurrently(q, 'audit_events_created_idx', 'audit_events (created_at)');
    await buildIndexConcurrently(q, 'activity_events_created_idx', 'activity_events (created_at)');
    await buildIndexConcurrently(q, 'tenant_alerts_resolved_ends_idx', `tenant_alerts (ends_at) WHERE status = 'resolved'`);
    await buildIndexConcurrently(
      q,
      'audit_events_cluster_slug_idx',
      'audit_events (organisation_id, environment_slug, cluster_slug, created_at, id) WHERE cluster_slug IS NOT NULL',
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS audit_events_cluster_slug_idx`);
    await q.query(`DROP INDEX IF EXISTS tenant_alerts_resolved_ends_idx`);
    await q.query(`DROP INDEX IF EXISTS activity_events_created_idx`);
    await q.query(`DROP INDEX IF EXISTS audit_events_created_idx`);
  }
}
