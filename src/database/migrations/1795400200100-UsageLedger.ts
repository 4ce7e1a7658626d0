import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The usage ledger of issue 41 (docs/metering.md, ADR 0200): `usage_intervals`, one row per stretch of time a
 * cluster's control plane or a node pool's nodes ran with the same priced attributes. Triggers on `clusters` and
 * `cluster_node_pools` close the open interval and open the next one in the transaction of the change, whoever
 * makes it (API, reconciler, scheduler, demo seed), so a crashed worker leaves neither a gap nor a double count.
 *
 * - Billable: a cluster from its creation until it is stopped or deleted (`status` stopped/deleted or `deleted_at`
 *   set; in `unknown` the status it had before the fault decides). Its pools' nodes are billable while the pool
 *   exists and the cluster is billable.
 * - Priced attributes: control plane (region, highly_available); nodes (region, node_size, node count = min_size, the
 *   size compute-information uses). A change of any of them closes the open interval and opens another.
 * - Boundary time: the row's own timestamp written by the application's Clock: `created_at` on insert,
 *   `modified_at` on update (every writer of the priced columns sets it: API, reconciler steps, failures and
 *   recoveries); a node pool's delete takes the pool's `modified_at` (the service touches it before deleting).
 *   Not now(): that is the database's clock, not the application's, and tests drive the latter. An interval never
 *   ends before it started (the end is clamped to its start); a change at the very instant an interval started
 *   updates it in place instead of leaving a zero-length row.
 * - No foreign keys to clusters, pools or organisations: usage of deleted clusters stays (retention may remove the
 *   cluster rows); the identities, names and slugs are copied into the row.
 * - At most one open interval per cluster control plane and per node pool (partial unique indexes).
 */
export class UsageLedger1795400200100 implements MigrationInterface {
  name = 'UsageLedger1795400200100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE usage_intervals (
        id bigserial PRIMARY KEY,
        kind text NOT NULL CHECK (kind IN ('CONTROL_PLANE', 'NODES')),
        organisation_id bigint NOT NULL,
        environment_id bigint NOT NULL,
        environment_slug text NOT NULL,
        cluster_id bigint NOT NULL,
        cluster_identity uuid NOT NULL,
        cluster_slug text NOT NULL,
        cluster_name text NOT NULL,
        cloud_provider text NOT NULL,
        region text NOT NULL,
        highly_available boolean,
        node_pool_id bigint,
        node_pool_identity uuid,
        node_pool_name text,
        node_type text,
        node_count bigint CHECK (node_count >= 0),
        started_at timestamptz NOT NULL,
        ended_at timestamptz,
        CHECK (ended_at IS NULL OR ended_at >= started_at),
        CHECK ((kind = 'CONTROL_PLANE' AND node_pool_id IS NULL AND highly_available IS NOT NULL)
            OR (kind = 'NODES' AND node_pool_id IS NOT NULL AND node_type IS NOT NULL AND node_count IS NOT NULL))
      );
      CREATE UNIQUE INDEX usage_intervals_open_control_plane_uq ON usage_intervals (cluster_id) WHERE ended_at IS NULL AND kind = 'CONTROL_PLANE';
      CREATE UNIQUE INDEX usage_intervals_open_nodes_uq ON usage_intervals (node_pool_id) WHERE ended_at IS NULL AND kind = 'NODES';
      CREATE INDEX usage_intervals_org_idx ON usage_intervals (organisation_id, started_at);
      CREATE INDEX usage_intervals_cluster_idx ON usage_intervals (cluster_id, started_at);

      -- Brings the open intervals of one cluster (control plane and every pool) in line with its rows, at ts.
      CREATE FUNCTION metering_sync_cluster(p_cluster_id bigint, ts timestamptz) RETURNS void LANGUAGE plpgsql AS $$
      DECLARE
        c record;
        billable boolean;
        open_row record;
        p record;
      BEGIN
        SELECT cl.*, e.slug AS env_slug INTO c FROM clusters cl JOIN environments e ON e.id = cl.environment_id WHERE cl.id = p_cluster_id;
        billable := FOUND AND c.deleted_at IS NULL
          AND (CASE WHEN c.status = 'unknown' THEN COALESCE(c.status_before_fault, 'unknown') ELSE c.status END) NOT IN ('stopped', 'deleted');

        -- Control plane: keep the open interval if it matches, else change it in place (same instant) or close it.
        SELECT * INTO open_row FROM usage_intervals
         WHERE cluster_id = p_cluster_id AND kind = 'CONTROL_PLANE' AND ended_at IS NULL FOR UPDATE;
        IF FOUND THEN
          IF billable AND open_row.highly_available = c.highly_available AND open_row.region = c.region THEN
            NULL;
          ELSIF billable AND open_row.started_at >= ts THEN
            UPDATE usage_intervals SET highly_available = c.highly_available, region = c.region WHERE id = open_row.id;
          ELSE
            UPDATE usage_intervals SET ended_at = GREATEST(ts, started_at) WHERE id = open_row.id;
            IF billable THEN
              INSERT INTO usage_intervals (kind, organisation_id, environment_id, environment_slug, cluster_id, cluster_identity, cluster_slug,
                                           cluster_name, cloud_provider, region, highly_available, started_at)
              VALUES ('CONTROL_PLANE', c.organisation_id, c.environment_id, c.env_slug, c.id, c.identity, c.slug,
                      c.name, c.cloud_provider, c.region, c.highly_available, GREATEST(ts, open_row.started_at));
            END IF;
          END IF;
        ELSIF billable THEN
          INSERT INTO usage_intervals (kind, organisation_id, environment_id, environment_slug, cluster_id, cluster_identity, cluster_slug,
                                       cluster_name, cloud_provider, region, highly_available, started_at)
          VALUES ('CONTROL_PLANE', c.organisation_id, c.environment_id, c.env_slug, c.id, c.identity, c.slug,
                  c.name, c.cloud_provider, c.region, c.highly_available, ts);
        END IF;

        -- Open node intervals that no longer match their pool (or whose pool is gone, or the cluster is not billable).
        FOR open_row IN
          SELECT u.id, u.started_at, u.node_type, u.node_count, u.region, np.node_size AS cur_type, np.min_size AS cur_count
            FROM usage_intervals u LEFT JOIN cluster_node_pools np ON np.id = u.node_pool_id
           WHERE u.cluster_id = p_cluster_id AND u.kind = 'NODES' AND u.ended_at IS NULL
           ORDER BY u.id
           FOR UPDATE OF u
        LOOP
          IF billable AND open_row.cur_type IS NOT NULL AND open_row.cur_type = open_row.node_type
             AND open_row.cur_count = open_row.node_count AND open_row.region = c.region THEN
            CONTINUE;
          ELSIF billable AND open_row.cur_type IS NOT NULL AND open_row.started_at >= ts THEN
            UPDATE usage_intervals SET node_type = open_row.cur_type, node_count = open_row.cur_count, region = c.region WHERE id = open_row.id;
          ELSE
            UPDATE usage_intervals SET ended_at = GREATEST(ts, started_at) WHERE id = open_row.id;
          END IF;
        END LOOP;

        -- Pools without an open interval open one (new pools, changed pools, a cluster that started again).
        IF billable THEN
          FOR p IN
            SELECT np.id, np.identity, np.name, np.node_size, np.min_size,
                   (SELECT max(u.ended_at) FROM usage_intervals u WHERE u.node_pool_id = np.id AND u.kind = 'NODES') AS last_end
              FROM cluster_node_pools np
             WHERE np.cluster_id = p_cluster_id
               AND NOT EXISTS (SELECT 1 FROM usage_intervals u WHERE u.node_pool_id = np.id AND u.kind = 'NODES' AND u.ended_at IS NULL)
             ORDER BY np.id
          LOOP
            INSERT INTO usage_intervals (kind, organisation_id, environment_id, environment_slug, cluster_id, cluster_identity, cluster_slug,
                                         cluster_name, cloud_provider, region, node_pool_id, node_pool_identity, node_pool_name, node_type,
                                         node_count, started_at)
            VALUES ('NODES', c.organisation_id, c.environment_id, c.env_slug, c.id, c.identity, c.slug,
                    c.name, c.cloud_provider, c.region, p.id, p.identity, p.name, p.node_size, p.min_size,
                    GREATEST(ts, COALESCE(p.last_end, ts)));
          END LOOP;
        END IF;
      END $$;

      CREATE FUNCTION metering_clusters_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          PERFORM metering_sync_cluster(NEW.id, NEW.created_at);
        ELSE
          PERFORM metering_sync_cluster(NEW.id, NEW.modified_at);
        END IF;
        RETURN NULL;
      END $$;
      CREATE TRIGGER metering_clusters_ins AFTER INSERT ON clusters FOR EACH ROW EXECUTE FUNCTION metering_clusters_changed();
      CREATE TRIGGER metering_clusters_upd AFTER UPDATE OF status, status_before_fault, deleted_at, highly_available, region ON clusters
        FOR EACH ROW
        WHEN (NEW.status IS DISTINCT FROM OLD.status OR NEW.status_before_fault IS DISTINCT FROM OLD.status_before_fault
              OR NEW.deleted_at IS DISTINCT FROM OLD.deleted_at OR NEW.highly_available IS DISTINCT FROM OLD.highly_available
              OR NEW.region IS DISTINCT FROM OLD.region)
        EXECUTE FUNCTION metering_clusters_changed();

      CREATE FUNCTION metering_node_pools_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          PERFORM metering_sync_cluster(NEW.cluster_id, NEW.created_at);
        ELSIF TG_OP = 'UPDATE' THEN
          PERFORM metering_sync_cluster(NEW.cluster_id, NEW.modified_at);
        ELSE
          PERFORM metering_sync_cluster(OLD.cluster_id, OLD.modified_at);
        END IF;
        RETURN NULL;
      END $$;
      CREATE TRIGGER metering_node_pools_ins AFTER INSERT ON cluster_node_pools FOR EACH ROW EXECUTE FUNCTION metering_node_pools_changed();
      CREATE TRIGGER metering_node_pools_upd AFTER UPDATE OF node_size, min_size ON cluster_node_pools
        FOR EACH ROW WHEN (NEW.node_size IS DISTINCT FROM OLD.node_size OR NEW.min_size IS DISTINCT FROM OLD.min_size)
        EXECUTE FUNCTION metering_node_pools_changed();
      CREATE TRIGGER metering_node_pools_del AFTER DELETE ON cluster_node_pools FOR EACH ROW EXECUTE FUNCTION metering_node_pools_changed();

      -- Clusters that exist already: their usage starts now (nothing before the ledger existed is invented).
      INSERT INTO usage_intervals (kind, organisation_id, environment_id, environment_slug, cluster_id, cluster_identity, cluster_slug,
                                   cluster_name, cloud_provider, region, highly_available, started_at)
      SELECT 'CONTROL_PLANE', c.organisation_id, c.environment_id, e.slug, c.id, c.identity, c.slug, c.name, c.cloud_provider, c.region,
             c.highly_available, now()
        FROM clusters c JOIN environments e ON e.id = c.environment_id
       WHERE c.deleted_at IS NULL AND (CASE WHEN c.status = 'unknown' THEN COALESCE(c.status_before_fault, 'unknown') ELSE c.status END) NOT IN ('stopped', 'deleted');
      INSERT INTO usage_intervals (kind, organisation_id, environment_id, environment_slug, cluster_id, cluster_identity, cluster_slug,
                                   cluster_name, cloud_provider, region, node_pool_id, node_pool_identity, node_pool_name, node_type,
                                   node_count, started_at)
      SELECT 'NODES', c.organisation_id, c.environment_id, e.slug, c.id, c.identity, c.slug, c.name, c.cloud_provider, c.region,
             p.id, p.identity, p.name, p.node_size, p.min_size, now()
        FROM cluster_node_pools p JOIN clusters c ON c.id = p.cluster_id JOIN environments e ON e.id = c.environment_id
       WHERE c.deleted_at IS NULL AND (CASE WHEN c.status = 'unknown' THEN COALESCE(c.status_before_fault, 'unknown') ELSE c.status END) NOT IN ('stopped', 'deleted');
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER metering_node_pools_del ON cluster_node_pools;
      DROP TRIGGER metering_node_pools_upd ON cluster_node_pools;
      DROP TRIGGER metering_node_pools_ins ON cluster_node_pools;
      DROP FUNCTION metering_node_pools_changed();
      DROP TRIGGER metering_clusters_upd ON clusters;
      DROP TRIGGER metering_clusters_ins ON clusters;
      DROP FUNCTION metering_clusters_changed();
      DROP FUNCTION metering_sync_cluster(bigint, timestamptz);
      DROP TABLE usage_intervals;
    `);
  }
}
