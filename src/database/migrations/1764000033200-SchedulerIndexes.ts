import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A scheduler pass finds its work through these (docs/performance-history.md "Scheduler pass"):
 * - open upgrades by status and window start, and by id (the rules page through them in id order): partial
 *   indexes holding only the few open rows, however long the history of finished upgrades grows (without the
 *   second, a keyset page in id order walks the primary key through the whole history);
 * - auto-upgrade clusters by update channel and version: per channel, the clusters whose version sorts before or
 *   after the channel's are two range scans that skip every cluster already on the channel's version.
 */
export class SchedulerIndexes1764000033200 implements MigrationInterface {
  name = 'SchedulerIndexes1764000033200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE INDEX scheduled_cluster_upgrades_open_idx ON scheduled_cluster_upgrades (status, window_start)
        WHERE status IN ('SCHEDULED','SCHEDULED_NOTIFIED','UPDATED');
      CREATE INDEX scheduled_cluster_upgrades_open_id_idx ON scheduled_cluster_upgrades (id)
        WHERE status IN ('SCHEDULED','SCHEDULED_NOTIFIED','UPDATED');
      CREATE INDEX clusters_channel_version_idx ON clusters (update_channel, version, id)
        WHERE auto_upgrade AND deleted_at IS NULL;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP INDEX clusters_channel_version_idx;
      DROP INDEX scheduled_cluster_upgrades_open_id_idx;
      DROP INDEX scheduled_cluster_upgrades_open_idx;
    `);
  }
}
