import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Live (non-deleted) cluster counts per organisation and per environment, kept by a trigger, so the
 * page envelope's totalElements costs one key lookup instead of counting every cluster of the scope.
 */
export class ClusterCounts1763800800000 implements MigrationInterface {
  name = 'ClusterCounts1763800800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE cluster_counts (
        scope text NOT NULL CHECK (scope IN ('organisation', 'environment')),
        scope_id bigint NOT NULL,
        live bigint NOT NULL DEFAULT 0 CHECK (live >= 0),
        PRIMARY KEY (scope, scope_id)
      );

      CREATE FUNCTION cluster_counts_bump(p_org bigint, p_env bigint, p_delta int) RETURNS void LANGUAGE sql AS $$
        INSERT INTO cluster_counts (scope, scope_id, live) VALUES ('organisation', p_org, GREATEST(p_delta, 0)), ('environment', p_env, GREATEST(p_delta, 0))
        ON CONFLICT (scope, scope_id) DO UPDATE SET live = cluster_counts.live + p_delta;
      $$;

      CREATE FUNCTION clusters_count_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
          PERFORM cluster_counts_bump(OLD.organisation_id, OLD.environment_id, -1);
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.deleted_at IS NULL THEN
          PERFORM cluster_counts_bump(NEW.organisation_id, NEW.environment_id, 1);
        END IF;
        RETURN NULL;
      END $$;

      CREATE TRIGGER clusters_count
        AFTER INSERT OR DELETE OR UPDATE OF deleted_at, organisation_id, environment_id ON clusters
        FOR EACH ROW EXECUTE FUNCTION clusters_count_trigger();

      INSERT INTO cluster_counts (scope, scope_id, live)
        SELECT 'organisation', organisation_id, count(*) FROM clusters WHERE deleted_at IS NULL GROUP BY organisation_id
        UNION ALL
        SELECT 'environment', environment_id, count(*) FROM clusters WHERE deleted_at IS NULL GROUP BY environment_id;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER clusters_count ON clusters;
      DROP FUNCTION clusters_count_trigger();
      DROP FUNCTION cluster_counts_bump(bigint, bigint, int);
      DROP TABLE cluster_counts;
    `);
  }
}
