import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Live (non-deleted) cluster counts per organisation and per environment, kept by triggers, so the
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

      -- Statement-level triggers with transition tables: one aggregated write per statement, however
      -- many rows it touches (a bulk insert of 100,000 clusters updates each counter once).
      CREATE FUNCTION cluster_counts_apply(deltas jsonb) RETURNS void LANGUAGE sql AS $$
        INSERT INTO cluster_counts (scope, scope_id, live)
        SELECT d.scope, d.scope_id, GREATEST(d.delta, 0) FROM jsonb_to_recordset(deltas) AS d(scope text, scope_id bigint, delta bigint)
        ON CONFLICT (scope, scope_id) DO UPDATE
          SET live = cluster_counts.live + (SELECT d.delta FROM jsonb_to_recordset(deltas) AS d(scope text, scope_id bigint, delta bigint)
                                             WHERE d.scope = EXCLUDED.scope AND d.scope_id = EXCLUDED.scope_id);
      $$;

      CREATE FUNCTION clusters_count_statement() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE deltas jsonb;
      BEGIN
        IF TG_OP = 'INSERT' THEN
          SELECT jsonb_agg(x) INTO deltas FROM (
            SELECT scope, scope_id, sum(delta)::bigint AS delta FROM (
              SELECT 'organisation' AS scope, organisation_id AS scope_id, 1 AS delta FROM new_rows WHERE deleted_at IS NULL
              UNION ALL SELECT 'environment', environment_id, 1 FROM new_rows WHERE deleted_at IS NULL) u
            GROUP BY scope, scope_id) x;
        ELSIF TG_OP = 'DELETE' THEN
          SELECT jsonb_agg(x) INTO deltas FROM (
            SELECT scope, scope_id, sum(delta)::bigint AS delta FROM (
              SELECT 'organisation' AS scope, organisation_id AS scope_id, -1 AS delta FROM old_rows WHERE deleted_at IS NULL
              UNION ALL SELECT 'environment', environment_id, -1 FROM old_rows WHERE deleted_at IS NULL) u
            GROUP BY scope, scope_id) x;
        ELSE
          SELECT jsonb_agg(x) INTO deltas FROM (
            SELECT scope, scope_id, sum(delta)::bigint AS delta FROM (
              SELECT 'organisation' AS scope, organisation_id AS scope_id, -1 AS delta FROM old_rows WHERE deleted_at IS NULL
              UNION ALL SELECT 'environment', environment_id, -1 FROM old_rows WHERE deleted_at IS NULL
              UNION ALL SELECT 'organisation', organisation_id, 1 FROM new_rows WHERE deleted_at IS NULL
              UNION ALL SELECT 'environment', environment_id, 1 FROM new_rows WHERE deleted_at IS NULL) u
            GROUP BY scope, scope_id HAVING sum(delta) <> 0) x;
        END IF;
        IF deltas IS NOT NULL THEN PERFORM cluster_counts_apply(deltas); END IF;
        RETURN NULL;
      END $$;

      CREATE TRIGGER clusters_count_insert AFTER INSERT ON clusters REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION clusters_count_statement();
      CREATE TRIGGER clusters_count_delete AFTER DELETE ON clusters REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION clusters_count_statement();
      CREATE TRIGGER clusters_count_update AFTER UPDATE ON clusters REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION clusters_count_statement();

      INSERT INTO cluster_counts (scope, scope_id, live)
        SELECT 'organisation', organisation_id, count(*) FROM clusters WHERE deleted_at IS NULL GROUP BY organisation_id
        UNION ALL
        SELECT 'environment', environment_id, count(*) FROM clusters WHERE deleted_at IS NULL GROUP BY environment_id;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER clusters_count_insert ON clusters;
      DROP TRIGGER clusters_count_delete ON clusters;
      DROP TRIGGER clusters_count_update ON clusters;
      DROP FUNCTION clusters_count_statement();
      DROP FUNCTION cluster_counts_apply(jsonb);
      DROP TABLE cluster_counts;
    `);
  }
}
