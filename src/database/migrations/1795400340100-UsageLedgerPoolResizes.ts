import { MigrationInterface, QueryRunner } from 'typeorm';
import { NODE_POOL_UPDATED } from './1795400330100-UsageLedgerRowUpdates';

/**
 * A resize of a running pool is one narrow row in `usage_pool_resizes` instead of the interval it ends and the one it
 * opens (docs/adr/0210). Those two writes, an update that is not HOT (`ended_at` is in four indexes) and a wide
 * insert into six, were nearly all the ledger's cost on the node-pool PUT, and they ran under the pool's row lock,
 * which the bench's eight connections wait on.
 *
 * The ledger is the same as before: the intervals of usage_intervals, each pool interval cut at the resizes recorded
 * in it, are the rows UsageLedgerRowUpdates1795400330100 wrote (test/metering/ledger-per-statement.e2e-spec.ts compares
 * them with the original row triggers). That holds because:
 * - A resize is recorded only where metering_pool_resized would have ended the pool's interval and opened the next,
 *   and only when every column that next interval takes from the cluster, its environment and the pool (names,
 *   region, node type) equals the open interval's: the cut interval copies them. The interval's own start is taken as
 *   the last resize recorded in it (or its start) and its node count as that resize's. Anything else goes the general
 *   way, as before.
 * - Before the general way touches a cluster's intervals (metering_sync_clusters, metering_pool_resized), the resizes
 *   recorded in its open pool intervals are written out as the intervals they stand for
 *   (metering_materialize_resizes): the general way then finds the ledger exactly as the old path left it. So resizes
 *   are recorded only in open intervals, and every closed interval was cut already.
 * - Readers take the ledger through ledgerIntervalsCte (src/metering/usage-sql.ts), which cuts the intervals.
 *
 * The previous release reads usage_intervals only: until the next change of a resized pool's cluster it would bill
 * that pool at its size when its interval opened. down() writes every recorded resize out first.
 */
export class UsageLedgerPoolResizes1795400340100 implements MigrationInterface {
  name = 'UsageLedgerPoolResizes1795400340100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      -- The node counts a pool took inside its open interval, each from resized_at (the pool's modified_at) on. One
      -- index: the recorded resizes of a pool in time order, which the resize, the general way and the reads probe.
      CREATE TABLE usage_pool_resizes (
        node_pool_id bigint NOT NULL,
        resized_at timestamptz NOT NULL,
        id bigserial,
        node_count bigint NOT NULL CHECK (node_count >= 0),
        PRIMARY KEY (node_pool_id, resized_at, id)
      );

      -- Writes the resizes recorded in the open pool intervals of the clusters p_ids out as intervals: the open one
      -- ends at the first, each opens the next with its count and the interval's other columns, the last stays open.
      -- The recorded rows of those pools go (a row before its pool's open interval began is one nothing reads).
      -- Every general change of any cluster runs it. Its plans are generic, made once per session: PostgreSQL's own
      -- choice planned each of its statements anew on every call (1.2 ms a write-out instead of 0.46 ms, measured on
      -- a stop of 1,000 clusters with a recorded resize each). They plan without sequential scans, as
      -- metering_pool_resize_recorded's, so that a plan made while the table looked empty stays an index probe.
      CREATE FUNCTION metering_materialize_resizes(p_ids bigint[]) RETURNS void LANGUAGE plpgsql
        SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
      DECLARE
        ivs bigint[];
        ats timestamptz[];
        counts bigint[];
      BEGIN
        WITH taken AS (
          DELETE FROM usage_pool_resizes r USING usage_intervals u
           WHERE u.cluster_id = ANY (p_ids) AND u.kind = 'NODES' AND u.ended_at IS NULL AND r.node_pool_id = u.node_pool_id
          RETURNING u.id AS interval_id, u.started_at, r.resized_at, r.id, r.node_count
        ), last_of_instant AS (
          SELECT DISTINCT ON (interval_id, resized_at) interval_id, resized_at, node_count
            FROM taken WHERE resized_at > started_at ORDER BY interval_id, resized_at, id DESC
        )
        SELECT array_agg(interval_id ORDER BY resized_at, interval_id), array_agg(resized_at ORDER BY resized_at, interval_id),
               array_agg(node_count ORDER BY resized_at, interval_id)
          INTO ivs, ats, counts FROM last_of_instant;
        IF ivs IS NULL THEN
          RETURN;
        END IF;
        UPDATE usage_intervals u SET ended_at = f.first_at
          FROM (SELECT i, min(a) AS first_at FROM unnest(ivs, ats) AS x(i, a) GROUP BY i) f
         WHERE u.id = f.i;
        INSERT INTO usage_intervals (kind, organisation_id, environment_id, environment_slug, cluster_id, cluster_identity, cluster_slug,
                                     cluster_name, cloud_provider, region, highly_available, node_pool_id, node_pool_identity, node_pool_name,
                                     node_type, node_count, started_at, ended_at)
        SELECT u.kind, u.organisation_id, u.environment_id, u.environment_slug, u.cluster_id, u.cluster_identity, u.cluster_slug,
               u.cluster_name, u.cloud_provider, u.region, u.highly_available, u.node_pool_id, u.node_pool_identity, u.node_pool_name,
               u.node_type, x.c, x.a, lead(x.a) OVER (PARTITION BY x.i ORDER BY x.a)
          FROM unnest(ivs, ats, counts) WITH ORDINALITY AS x(i, a, c, n) JOIN usage_intervals u ON u.id = x.i
         ORDER BY x.n;
      END $$;

      -- The general way: the recorded resizes written out, then the intervals brought in line as before.
      ALTER FUNCTION metering_sync_clusters(bigint[], timestamptz[]) RENAME TO metering_sync_intervals;
      CREATE FUNCTION metering_sync_clusters(p_ids bigint[], p_ts timestamptz[]) RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM metering_materialize_resizes(p_ids);
        PERFORM metering_sync_intervals(p_ids, p_ts);
      END $$;

      -- A change of min_size alone is recorded as a resize where metering_pool_resized would end the pool's interval
      -- and open the next (the cluster billable and not deleting; the open interval, as cut by its last resize, began
      -- before the change, is in the cluster's region and differs from the pool) and where that next interval would
      -- take exactly the open one's other columns. One statement of index probes and a narrow insert; false, and
      -- nothing written, otherwise.
      --
      -- Its plan is made once per session and kept (a generic plan), and a plan made while usage_pool_resizes looked
      -- empty read the last resize by scanning and sorting the table, whose cost grows with every resize recorded
      -- (0.5 ms a resize after 1,000 of one pool, 1.7 ms after 5,000). Without sequential scans the one plan left is
      -- the index read backwards, one entry, whatever the table's size or statistics.
      CREATE FUNCTION metering_pool_resize_recorded(p cluster_node_pools) RETURNS boolean LANGUAGE plpgsql
        SET enable_seqscan = off AS $$
      BEGIN
        INSERT INTO usage_pool_resizes (node_pool_id, resized_at, node_count)
        SELECT p.id, p.modified_at, p.min_size
          FROM usage_intervals u
          JOIN clusters cl ON cl.id = p.cluster_id
          JOIN environments e ON e.id = cl.environment_id
          LEFT JOIN LATERAL (SELECT r.resized_at, r.node_count FROM usage_pool_resizes r
                              WHERE r.node_pool_id = p.id AND r.resized_at > u.started_at
                              ORDER BY r.resized_at DESC, r.id DESC LIMIT 1) last ON true
         WHERE u.node_pool_id = p.id AND u.kind = 'NODES' AND u.ended_at IS NULL
           AND GREATEST(u.started_at, last.resized_at) < p.modified_at
           AND COALESCE(last.node_count, u.node_count) <> p.min_size
           AND cl.deleted_at IS NULL
           AND CASE WHEN cl.status = 'unknown' THEN COALESCE(cl.status_before_fault, 'unknown') ELSE cl.status END NOT IN ('stopped', 'deleted', 'deleting')
           AND (u.organisation_id, u.environment_id, u.environment_slug, u.cluster_identity, u.cluster_slug, u.cluster_name, u.cloud_provider,
                u.region, u.node_pool_identity, u.node_pool_name, u.node_type)
             = (cl.organisation_id, cl.environment_id, e.slug, cl.identity, cl.slug, cl.name, cl.cloud_provider,
                cl.region, p.identity, p.name, p.node_size);
        RETURN FOUND;
      END $$;

      CREATE OR REPLACE FUNCTION metering_node_pool_updated() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.node_size IS NOT DISTINCT FROM OLD.node_size AND metering_pool_resize_recorded(NEW) THEN
          RETURN NULL;
        END IF;
        PERFORM metering_materialize_resizes(ARRAY[NEW.cluster_id]);
        IF NOT metering_pool_resized(NEW) THEN
          PERFORM metering_sync_intervals(ARRAY[NEW.cluster_id], ARRAY[NEW.modified_at]);
        END IF;
        RETURN NULL;
      END $$;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      SELECT metering_materialize_resizes(array_agg(DISTINCT cluster_id)) FROM usage_intervals WHERE kind = 'NODES' AND ended_at IS NULL;
      ${NODE_POOL_UPDATED}
      DROP FUNCTION metering_sync_clusters(bigint[], timestamptz[]);
      ALTER FUNCTION metering_sync_intervals(bigint[], timestamptz[]) RENAME TO metering_sync_clusters;
      DROP FUNCTION metering_pool_resize_recorded(cluster_node_pools);
      DROP FUNCTION metering_materialize_resizes(bigint[]);
      DROP TABLE usage_pool_resizes;
    `);
  }
}
