import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * metering_sync_cluster (migration UsageLedger, ADR 0200), two corrections:
 * - Deleting keeps the state: a running cluster bills until the reconciler commits `deleted`; a stopped one is not
 *   billed while it is deleted (before, `deleting` opened a zero-length interval for a stopped cluster).
 * - A change at (or, from a lagging clock, before) the instant an interval started updates it in place, or removes it
 *   when it ends it: no zero-length interval is written.
 */
export class UsageLedgerDeleting1795400200150 implements MigrationInterface {
  name = 'UsageLedgerDeleting1795400200150';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION metering_sync_cluster(p_cluster_id bigint, ts timestamptz) RETURNS void LANGUAGE plpgsql AS $$
      DECLARE
        c record;
        billable boolean;
        effective text;
        open_row record;
        p record;
      BEGIN
        SELECT cl.*, e.slug AS env_slug INTO c FROM clusters cl JOIN environments e ON e.id = cl.environment_id WHERE cl.id = p_cluster_id;
        effective := CASE WHEN c.status = 'unknown' THEN COALESCE(c.status_before_fault, 'unknown') ELSE c.status END;
        billable := FOUND AND c.deleted_at IS NULL AND effective NOT IN ('stopped', 'deleted');
        -- Deleting keeps what runs running and what is stopped stopped (a stopped cluster is not started to delete it).
        IF billable AND effective = 'deleting' THEN
          billable := EXISTS (SELECT 1 FROM usage_intervals WHERE cluster_id = p_cluster_id AND kind = 'CONTROL_PLANE' AND ended_at IS NULL);
        END IF;

        -- Control plane: keep the open interval if it matches, else change it in place (same instant) or close it.
        SELECT * INTO open_row FROM usage_intervals
         WHERE cluster_id = p_cluster_id AND kind = 'CONTROL_PLANE' AND ended_at IS NULL FOR UPDATE;
        IF FOUND THEN
          IF billable AND open_row.highly_available = c.highly_available AND open_row.region = c.region THEN
            NULL;
          ELSIF billable AND open_row.started_at >= ts THEN
            UPDATE usage_intervals SET highly_available = c.highly_available, region = c.region WHERE id = open_row.id;
          ELSE
            IF open_row.started_at >= ts THEN
              DELETE FROM usage_intervals WHERE id = open_row.id; -- it never ran
            ELSE
              UPDATE usage_intervals SET ended_at = ts WHERE id = open_row.id;
            END IF;
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
          ELSIF open_row.started_at >= ts THEN
            DELETE FROM usage_intervals WHERE id = open_row.id; -- it never ran
          ELSE
            UPDATE usage_intervals SET ended_at = ts WHERE id = open_row.id;
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
    `);
    await q.query(`DELETE FROM usage_intervals WHERE ended_at = started_at`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION metering_sync_cluster(p_cluster_id bigint, ts timestamptz) RETURNS void LANGUAGE plpgsql AS $$
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
    `);
  }
}
