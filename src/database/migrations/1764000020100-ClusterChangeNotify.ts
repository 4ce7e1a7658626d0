import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Wakes the reconcilers: a statement that creates clusters or changes what they should be (desired status,
 * version, deletion) sends one NOTIFY on `cms_cluster_changed` when it commits. Polling stays as the safety net.
 */
export class ClusterChangeNotify1764000020100 implements MigrationInterface {
  name = 'ClusterChangeNotify1764000020100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION cms_notify_cluster_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('cms_cluster_changed', '');
        RETURN NULL;
      END $$;
      CREATE TRIGGER clusters_notify_insert AFTER INSERT ON clusters
        FOR EACH STATEMENT EXECUTE FUNCTION cms_notify_cluster_change();
      CREATE TRIGGER clusters_notify_update AFTER UPDATE OF desired_status, version, deleted_at ON clusters
        FOR EACH STATEMENT EXECUTE FUNCTION cms_notify_cluster_change();
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER clusters_notify_update ON clusters;
      DROP TRIGGER clusters_notify_insert ON clusters;
      DROP FUNCTION cms_notify_cluster_change();
    `);
  }
}
