import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Rollout sequencing (docs/adr/0044-rollout-sequencing.md): a cluster with an upstream cluster is upgraded
 * to a version only once its upstream has run that version for a soak time.
 *
 * - organisations.upgrade_soak_hours: the organisation's soak time (0..720 h, default 24);
 * - clusters.upgrade_soak_hours: a cluster's own soak time (null: the organisation's);
 * - clusters.version_since: when the cluster reached the version it runs (observed_version). A trigger keeps
 *   it: it follows every change of observed_version (at the row's new modified_at when the writer set one,
 *   which is the application's clock, else at now()), unless the same statement sets version_since itself.
 *   Existing rows start from modified_at (or created_at).
 * - scheduled_cluster_upgrades.blocked_reason: why a planned upgrade is held (it neither starts nor misses its
 *   window while set).
 */
export class RolloutSequencing1764000033100 implements MigrationInterface {
  name = 'RolloutSequencing1764000033100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE organisations ADD COLUMN upgrade_soak_hours integer NOT NULL DEFAULT 24
        CONSTRAINT organisations_upgrade_soak_hours_chk CHECK (upgrade_soak_hours BETWEEN 0 AND 720);
      ALTER TABLE clusters ADD COLUMN upgrade_soak_hours integer
        CONSTRAINT clusters_upgrade_soak_hours_chk CHECK (upgrade_soak_hours BETWEEN 0 AND 720);
      ALTER TABLE clusters ADD COLUMN version_since timestamptz;
      UPDATE clusters SET version_since = COALESCE(modified_at, created_at);
      ALTER TABLE clusters ALTER COLUMN version_since SET NOT NULL;
      ALTER TABLE scheduled_cluster_upgrades ADD COLUMN blocked_reason text;

      CREATE FUNCTION clusters_version_since() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          NEW.version_since := COALESCE(NEW.version_since, NEW.created_at, now());
        ELSIF NEW.observed_version IS DISTINCT FROM OLD.observed_version
              AND NEW.version_since IS NOT DISTINCT FROM OLD.version_since THEN
          NEW.version_since := CASE WHEN NEW.modified_at IS DISTINCT FROM OLD.modified_at THEN NEW.modified_at ELSE now() END;
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER clusters_version_since_ins BEFORE INSERT ON clusters
        FOR EACH ROW EXECUTE FUNCTION clusters_version_since();
      CREATE TRIGGER clusters_version_since_upd BEFORE UPDATE OF observed_version ON clusters
        FOR EACH ROW WHEN (NEW.observed_version IS DISTINCT FROM OLD.observed_version) EXECUTE FUNCTION clusters_version_since();
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER clusters_version_since_upd ON clusters;
      DROP TRIGGER clusters_version_since_ins ON clusters;
      DROP FUNCTION clusters_version_since();
      ALTER TABLE scheduled_cluster_upgrades DROP COLUMN blocked_reason;
      ALTER TABLE clusters DROP COLUMN version_since;
      ALTER TABLE clusters DROP COLUMN upgrade_soak_hours;
      ALTER TABLE organisations DROP COLUMN upgrade_soak_hours;
    `);
  }
}
