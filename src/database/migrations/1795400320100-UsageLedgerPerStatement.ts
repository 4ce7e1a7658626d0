import { MigrationInterface, QueryRunner } from 'typeorm';
import { UsageLedgerDeleting1795400200150 } from './1795400200150-UsageLedgerDeleting';

/**
 * The update triggers and their functions as this migration made them: UsageLedgerRowUpdates1795400330100 replaces
 * them with row triggers, and its down() puts these back.
 */
export const CLUSTERS_UPDATED = `
      -- Old and new rows side by side by grouping, not by a join: a transition table has no index, and the plan, made
      -- once, would keep the join the first statement's size called for (a nested loop planned for one row compares
      -- every pair of 1,000). Records compare as IS DISTINCT FROM does (two nulls are equal).
      CREATE OR REPLACE FUNCTION metering_clusters_updated() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM metering_sync_clusters(array_agg(c.id ORDER BY c.n), array_agg(c.ts ORDER BY c.n))
           FROM (SELECT x.id, max(x.n) AS n, max(x.ts) AS ts
                   FROM (SELECT id, row_number() OVER () AS n, modified_at AS ts,
                                ROW(status, status_before_fault, deleted_at, highly_available, region) AS priced FROM new_rows
                         UNION ALL
                         SELECT id, NULL, NULL, ROW(status, status_before_fault, deleted_at, highly_available, region) FROM old_rows) x
                  GROUP BY x.id
                 HAVING count(DISTINCT x.priced) > 1) c;
        RETURN NULL;
      END $$;
      CREATE TRIGGER metering_clusters_upd AFTER UPDATE ON clusters
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION metering_clusters_updated();`;
export const NODE_POOLS_UPDATED = `
      CREATE OR REPLACE FUNCTION metering_node_pools_updated() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM metering_sync_clusters(array_agg(c.cluster_id ORDER BY c.n), array_agg(c.ts ORDER BY c.n))
           FROM (SELECT max(x.cluster_id) AS cluster_id, max(x.n) AS n, max(x.ts) AS ts
                   FROM (SELECT id, cluster_id, row_number() OVER () AS n, modified_at AS ts, ROW(node_size, min_size) AS priced FROM new_rows
                         UNION ALL
                         SELECT id, cluster_id, NULL, NULL, ROW(node_size, min_size) FROM old_rows) x
                  GROUP BY x.id
                 HAVING count(DISTINCT x.priced) > 1) c;
        RETURN NULL;
      END $$;
      CREATE TRIGGER metering_node_pools_upd AFTER UPDATE ON cluster_node_pools
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION metering_node_pools_updated();`;

/**
 * The usage ledger's triggers fire once per statement instead of once per row (docs/adr/0203): each trigger reads the
 * rows its statement wrote from a transition table and hands the clusters they belong to, once each, to
 * metering_sync_clusters, which does for all of them in two set-based statements what metering_sync_cluster
 * (UsageLedger1795400200100, UsageLedgerDeleting1795400200150) did for one cluster at a time in a loop of its own.
 * The ledger it writes is the same, row for row (test/metering/ledger-per-statement.e2e-spec.ts compares the two):
 *
 * - Which changes count: an INSERT of clusters or node pools, a DELETE of node pools, and an UPDATE whose old and new
 *   rows differ in a priced column (clusters: status, status_before_fault, deleted_at, highly_available, region; node
 *   pools: node_size, min_size), as the row triggers' `UPDATE OF ... WHEN (... IS DISTINCT FROM ...)` decided. A
 *   trigger with transition tables can have neither a column list nor more than one event, so there is one trigger per
 *   event and the comparison is made in the function; no BEFORE trigger changes a priced column, so "differs" is
 *   exactly what `UPDATE OF` and `WHEN` let through.
 * - The time of a change: the row's `created_at` (insert), new `modified_at` (update) or old `modified_at` (delete).
 *   A statement that writes several rows of one cluster takes the time of the first of them in the order it wrote
 *   them: the row triggers fired in that order and the later ones found the cluster's intervals in line already.
 * - Per cluster, the same rules: billable decided before anything changes; an open interval that no longer matches
 *   is changed in place (when it began at or after the change), removed (when it began at or after it and the
 *   cluster is no longer billable or its pool is gone) or ended; then what is billable and has no open interval
 *   opens one (a pool's not before its last interval ended). Clusters are independent of each other (every statement
 *   reads and writes one cluster's rows), so doing them together changes nothing but the order of the ids the new
 *   rows take, which is kept too: by cluster in the order the statement wrote them, control plane first, then pools.
 * - Locks: the intervals a statement changes or removes are locked by it; the writer holds each cluster's row lock
 *   already (it updates the cluster, or the node-pool generation trigger locks it), so no two syncs of one cluster
 *   interleave. The row function also locked the open intervals it kept; with the cluster locked that added nothing.
 *
 * The previous release neither calls nor knows the functions (the triggers are the database's own), so it keeps
 * working on this schema; the swap is one transaction, so no write runs between the old triggers and the new ones.
 */
export class UsageLedgerPerStatement1795400320100 implements MigrationInterface {
  name = 'UsageLedgerPerStatement1795400320100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER metering_node_pools_del ON cluster_node_pools;
      DROP TRIGGER metering_node_pools_upd ON cluster_node_pools;
      DROP TRIGGER metering_node_pools_ins ON cluster_node_pools;
      DROP FUNCTION metering_node_pools_changed();
      DROP TRIGGER metering_clusters_upd ON clusters;
      DROP TRIGGER metering_clusters_ins ON clusters;
      DROP FUNCTION metering_clusters_changed();
      DROP FUNCTION metering_sync_cluster(bigint, timestamptz);

      -- Brings the open intervals of the clusters p_ids (at the times p_ts, in that order; a repeated cluster keeps its
      -- first time) in line with their rows, in two statements whatever their number.
      --
      -- Plans: a few clusters (an API request, a reconciler step) reuse one plan made for a few rows, index probes;
      -- PostgreSQL's own choice planned both statements anew on every call (1.5 ms of a 2.5 ms insert). Many clusters
      -- are planned for their number: a plan for a few rows, made while the ledger was still empty (a seed, an import),
      -- compared every new cluster with every open interval (10,000 x 10,000), where hash joins take milliseconds.
      CREATE FUNCTION metering_sync_clusters(p_ids bigint[], p_ts timestamptz[]) RETURNS void LANGUAGE plpgsql
        SET plan_cache_mode = force_generic_plan AS $$
      DECLARE
        ids bigint[];
        tss timestamptz[];
        bill boolean[];
      BEGIN
        IF p_ids IS NULL THEN
          RETURN;
        END IF;
        IF cardinality(p_ids) > 100 THEN
          PERFORM set_config('plan_cache_mode', 'force_custom_plan', true); -- until the function returns (its SET clause)
        END IF;
        -- Each open interval of the clusters is kept (it matches), changed in place (it began at or after the change),
        -- removed (the same, but the cluster is no longer billable or the pool is gone: it never ran) or ended. Billable
        -- is decided before anything changes: a deleting cluster keeps what runs running and what is stopped stopped.
        WITH a AS (
          SELECT b.cluster_id, b.ts, b.ord, c.region, c.highly_available,
                 c.id IS NOT NULL AND c.deleted_at IS NULL AND c.effective NOT IN ('stopped', 'deleted')
                   AND (c.effective <> 'deleting'
                        OR EXISTS (SELECT 1 FROM usage_intervals u WHERE u.cluster_id = b.cluster_id AND u.kind = 'CONTROL_PLANE' AND u.ended_at IS NULL))
                   AS billable
            FROM (SELECT DISTINCT ON (x.cluster_id) x.cluster_id, x.ts, x.ord
                    FROM unnest(p_ids, p_ts) WITH ORDINALITY AS x(cluster_id, ts, ord) ORDER BY x.cluster_id, x.ord) b
            LEFT JOIN (SELECT cl.id, cl.deleted_at, cl.region, cl.highly_available,
                              CASE WHEN cl.status = 'unknown' THEN COALESCE(cl.status_before_fault, 'unknown') ELSE cl.status END AS effective
                         FROM clusters cl JOIN environments e ON e.id = cl.environment_id) c ON c.id = b.cluster_id
        ), o AS (
          SELECT u.id, u.kind, a.ts, a.region, a.highly_available, np.node_size, np.min_size,
                 CASE WHEN a.billable AND u.region = a.region
                           AND CASE WHEN u.kind = 'CONTROL_PLANE' THEN u.highly_available = a.highly_available
                                    ELSE np.id IS NOT NULL AND np.node_size = u.node_type AND np.min_size = u.node_count END THEN 'keep'
                      WHEN a.billable AND (u.kind = 'CONTROL_PLANE' OR np.id IS NOT NULL) AND u.started_at >= a.ts THEN 'change'
                      WHEN u.started_at >= a.ts THEN 'remove'
                      ELSE 'end' END AS action
            FROM a JOIN usage_intervals u ON u.cluster_id = a.cluster_id AND u.ended_at IS NULL
            LEFT JOIN cluster_node_pools np ON u.kind = 'NODES' AND np.id = u.node_pool_id
        ), changed AS (
          UPDATE usage_intervals u
             SET ended_at = CASE WHEN o.action = 'end' THEN o.ts END,
                 region = CASE WHEN o.action = 'change' THEN o.region ELSE u.region END,
                 highly_available = CASE WHEN o.action = 'change' AND o.kind = 'CONTROL_PLANE' THEN o.highly_available ELSE u.highly_available END,
                 node_type = CASE WHEN o.action = 'change' AND o.kind = 'NODES' THEN o.node_size ELSE u.node_type END,
                 node_count = CASE WHEN o.action = 'change' AND o.kind = 'NODES' THEN o.min_size ELSE u.node_count END
            FROM o WHERE u.id = o.id AND o.action IN ('change', 'end')
        ), removed AS (
          DELETE FROM usage_intervals u USING o WHERE u.id = o.id AND o.action = 'remove'
        )
        SELECT array_agg(a.cluster_id ORDER BY a.ord), array_agg(a.ts ORDER BY a.ord), array_agg(a.billable ORDER BY a.ord)
          INTO ids, tss, bill FROM a;

        -- What is billable and has no open interval opens one: the control plane at the change, a pool not before its
        -- last interval ended (new pools, changed pools, a cluster that started again); by cluster in the order the
        -- statement wrote them, control plane first.
        INSERT INTO usage_intervals (kind, organisation_id, environment_id, environment_slug, cluster_id, cluster_identity, cluster_slug,
                                     cluster_name, cloud_provider, region, highly_available, node_pool_id, node_pool_identity, node_pool_name,
                                     node_type, node_count, started_at)
        SELECT o.kind, cl.organisation_id, cl.environment_id, e.slug, cl.id, cl.identity, cl.slug, cl.name, cl.cloud_provider, cl.region,
               CASE WHEN o.kind = 'CONTROL_PLANE' THEN cl.highly_available END, np.id, np.identity, np.name, np.node_size, np.min_size,
               CASE WHEN o.kind = 'CONTROL_PLANE' THEN o.ts
                    ELSE GREATEST(o.ts, COALESCE((SELECT max(u.ended_at) FROM usage_intervals u WHERE u.node_pool_id = np.id AND u.kind = 'NODES'), o.ts)) END
          FROM (SELECT a.ord, a.cluster_id, a.ts, 'CONTROL_PLANE' AS kind, NULL::bigint AS pool_id
                  FROM unnest(ids, tss, bill) WITH ORDINALITY AS a(cluster_id, ts, billable, ord)
                 WHERE a.billable
                   AND NOT EXISTS (SELECT 1 FROM usage_intervals u WHERE u.cluster_id = a.cluster_id AND u.kind = 'CONTROL_PLANE' AND u.ended_at IS NULL)
                UNION ALL
                SELECT a.ord, a.cluster_id, a.ts, 'NODES', p.id
                  FROM unnest(ids, tss, bill) WITH ORDINALITY AS a(cluster_id, ts, billable, ord) JOIN cluster_node_pools p ON p.cluster_id = a.cluster_id
                 WHERE a.billable
                   AND NOT EXISTS (SELECT 1 FROM usage_intervals u WHERE u.node_pool_id = p.id AND u.kind = 'NODES' AND u.ended_at IS NULL)) o
          JOIN clusters cl ON cl.id = o.cluster_id
          JOIN environments e ON e.id = cl.environment_id
          LEFT JOIN cluster_node_pools np ON np.id = o.pool_id
         ORDER BY o.ord, o.pool_id NULLS FIRST;
      END $$;

      -- Each trigger hands over the clusters its statement wrote, in the order it wrote them (a transition table is read
      -- in that order), with the time the row states.
      CREATE FUNCTION metering_clusters_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM metering_sync_clusters(array_agg(id ORDER BY n), array_agg(created_at ORDER BY n))
           FROM (SELECT id, created_at, row_number() OVER () AS n FROM new_rows) w;
        RETURN NULL;
      END $$;
${CLUSTERS_UPDATED}
      CREATE TRIGGER metering_clusters_ins AFTER INSERT ON clusters
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION metering_clusters_inserted();

      CREATE FUNCTION metering_node_pools_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM metering_sync_clusters(array_agg(cluster_id ORDER BY n), array_agg(created_at ORDER BY n))
           FROM (SELECT cluster_id, created_at, row_number() OVER () AS n FROM new_rows) w;
        RETURN NULL;
      END $$;
${NODE_POOLS_UPDATED}
      CREATE FUNCTION metering_node_pools_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM metering_sync_clusters(array_agg(cluster_id ORDER BY n), array_agg(modified_at ORDER BY n))
           FROM (SELECT cluster_id, modified_at, row_number() OVER () AS n FROM old_rows) w;
        RETURN NULL;
      END $$;
      CREATE TRIGGER metering_node_pools_ins AFTER INSERT ON cluster_node_pools
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION metering_node_pools_inserted();
      CREATE TRIGGER metering_node_pools_del AFTER DELETE ON cluster_node_pools
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION metering_node_pools_deleted();
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER metering_node_pools_del ON cluster_node_pools;
      DROP TRIGGER metering_node_pools_upd ON cluster_node_pools;
      DROP TRIGGER metering_node_pools_ins ON cluster_node_pools;
      DROP FUNCTION metering_node_pools_deleted();
      DROP FUNCTION metering_node_pools_updated();
      DROP FUNCTION metering_node_pools_inserted();
      DROP TRIGGER metering_clusters_upd ON clusters;
      DROP TRIGGER metering_clusters_ins ON clusters;
      DROP FUNCTION metering_clusters_updated();
      DROP FUNCTION metering_clusters_inserted();
      DROP FUNCTION metering_sync_clusters(bigint[], timestamptz[]);
    `);
    // The row function as UsageLedgerDeleting left it, and the row triggers of UsageLedger.
    await new UsageLedgerDeleting1795400200150().up(q);
    await q.query(`
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
    `);
  }
}
