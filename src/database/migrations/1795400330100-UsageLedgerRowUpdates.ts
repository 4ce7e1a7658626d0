import { MigrationInterface, QueryRunner } from 'typeorm';
import { CLUSTERS_UPDATED, NODE_POOLS_UPDATED } from './1795400320100-UsageLedgerPerStatement';

/** The pool's update trigger function as this migration makes it (UsageLedgerPoolResizes1795400340100's down() restores it). */
export const NODE_POOL_UPDATED = `
      CREATE OR REPLACE FUNCTION metering_node_pool_updated() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NOT metering_pool_resized(NEW) THEN
          PERFORM metering_sync_clusters(ARRAY[NEW.cluster_id], ARRAY[NEW.modified_at]);
        END IF;
        RETURN NULL;
      END $$;`;

/**
 * The ledger's update triggers fire per row again, only for a priced change, and a resize changes its pool's interval
 * alone (docs/adr/0209). The API and the reconciler write one row per statement; the statement triggers of
 * UsageLedgerPerStatement1795400320100 ran on every update of either table (a description, a pool's generation bump:
 * transition tables kept, grouped and compared) and sent a resize through metering_sync_clusters, built for many
 * clusters: together 0.24 ms of the database's CPU per resize, and 41 % of the throughput of resizes serialised on
 * one pool (bench/ledger-resize.ts; docs/performance.md). Inserts and deletes keep their statement triggers.
 *
 * - clusters: `AFTER UPDATE OF` the priced columns `FOR EACH ROW WHEN` one of them differs, as UsageLedger1795400200100
 *   had it: an unpriced update runs nothing. A priced one brings the cluster in line at the row's `modified_at`
 *   (metering_sync_clusters for one cluster), as that row trigger did.
 * - cluster_node_pools: the same for `node_size` and `min_size`; then metering_pool_resized ends that pool's open
 *   interval and opens the next, alone, when the cluster is billable and not deleting, and the interval began before
 *   the change, is in the cluster's region and differs from the pool: there the general path would keep every other
 *   interval of the cluster (the triggers keep them in line with their rows on every priced write) and do to this one
 *   what this function does. Otherwise (a stopped or deleting cluster, a second change at the time of the first, a
 *   ledger out of line) metering_sync_clusters decides.
 *
 * The ledger is the same as the row triggers wrote (test/metering/ledger-per-statement.e2e-spec.ts compares them on
 * random and scripted workloads), and as the statement triggers wrote, but for two cases the service does not make: a
 * statement updating several pools of one cluster at different `modified_at` now ends each pool's interval at its own
 * row's time (the statement triggers took the first row's for the cluster), and such a statement's new intervals take
 * their ids in the order its rows were written. A 1,000-row priced update runs 1,000 calls instead of one
 * (bench:metering measures it).
 */
export class UsageLedgerRowUpdates1795400330100 implements MigrationInterface {
  name = 'UsageLedgerRowUpdates1795400330100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      -- A resize of pool p at p.modified_at: when the cluster is billable (and not deleting) and the pool's open
      -- interval began before the change, is in the cluster's region and differs from the pool, it is ended at the
      -- change and the next one opened, as metering_sync_clusters would do (it would keep every other interval of an
      -- in-line cluster). Anything else (a stopped or deleting cluster, a change at the very time the interval began, a
      -- ledger out of line) returns false: the general path decides. Three statements of index probes; a plan of its
      -- own per statement is not needed (PostgreSQL picks the generic one for these after five calls).
      CREATE FUNCTION metering_pool_resized(p cluster_node_pools) RETURNS boolean LANGUAGE plpgsql AS $$
      DECLARE
        c record;
      BEGIN
        SELECT cl.organisation_id, cl.environment_id, e.slug AS environment_slug, cl.identity, cl.slug, cl.name, cl.cloud_provider, cl.region,
               cl.deleted_at IS NULL
                 AND CASE WHEN cl.status = 'unknown' THEN COALESCE(cl.status_before_fault, 'unknown') ELSE cl.status END NOT IN ('stopped', 'deleted', 'deleting')
                 AS billable
          INTO c
          FROM clusters cl JOIN environments e ON e.id = cl.environment_id
         WHERE cl.id = p.cluster_id;
        IF c.billable IS NOT TRUE THEN
          RETURN false;
        END IF;
        UPDATE usage_intervals SET ended_at = p.modified_at
         WHERE node_pool_id = p.id AND kind = 'NODES' AND ended_at IS NULL AND started_at < p.modified_at AND region = c.region
           AND (node_type, node_count) IS DISTINCT FROM (p.node_size, p.min_size::bigint);
        IF NOT FOUND THEN
          RETURN false;
        END IF;
        INSERT INTO usage_intervals (kind, organisation_id, environment_id, environment_slug, cluster_id, cluster_identity, cluster_slug,
                                     cluster_name, cloud_provider, region, highly_available, node_pool_id, node_pool_identity, node_pool_name,
                                     node_type, node_count, started_at)
        VALUES ('NODES', c.organisation_id, c.environment_id, c.environment_slug, p.cluster_id, c.identity, c.slug, c.name, c.cloud_provider,
                c.region, NULL, p.id, p.identity, p.name, p.node_size, p.min_size, p.modified_at);
        RETURN true;
      END $$;

      DROP TRIGGER metering_clusters_upd ON clusters;
      DROP FUNCTION metering_clusters_updated();
      CREATE FUNCTION metering_cluster_updated() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM metering_sync_clusters(ARRAY[NEW.id], ARRAY[NEW.modified_at]);
        RETURN NULL;
      END $$;
      CREATE TRIGGER metering_clusters_upd AFTER UPDATE OF status, status_before_fault, deleted_at, highly_available, region ON clusters
        FOR EACH ROW
        WHEN (NEW.status IS DISTINCT FROM OLD.status OR NEW.status_before_fault IS DISTINCT FROM OLD.status_before_fault
              OR NEW.deleted_at IS DISTINCT FROM OLD.deleted_at OR NEW.highly_available IS DISTINCT FROM OLD.highly_available
              OR NEW.region IS DISTINCT FROM OLD.region)
        EXECUTE FUNCTION metering_cluster_updated();

      DROP TRIGGER metering_node_pools_upd ON cluster_node_pools;
      DROP FUNCTION metering_node_pools_updated();
      ${NODE_POOL_UPDATED}
      CREATE TRIGGER metering_node_pools_upd AFTER UPDATE OF node_size, min_size ON cluster_node_pools
        FOR EACH ROW WHEN (NEW.node_size IS DISTINCT FROM OLD.node_size OR NEW.min_size IS DISTINCT FROM OLD.min_size)
        EXECUTE FUNCTION metering_node_pool_updated();
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER metering_node_pools_upd ON cluster_node_pools;
      DROP FUNCTION metering_node_pool_updated();
      DROP FUNCTION metering_pool_resized(cluster_node_pools);
      DROP TRIGGER metering_clusters_upd ON clusters;
      DROP FUNCTION metering_cluster_updated();
      ${CLUSTERS_UPDATED}
      ${NODE_POOLS_UPDATED}
    `);
  }
}
