import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The pools a cluster is created with do not bump its generation (docs/adr/0150): a pool inserted in the transaction
 * that wrote its cluster, while the cluster is at generation 1 and no driver has applied it, takes generation 1
 * without writing the cluster row again. A cluster created with its pools stays generation 1 without one update per
 * pool, and a bulk insert of clusters with their pools (a seed, an import) does not rewrite each cluster once per
 * pool. Every other pool change bumps as in ClusterGenerations1795400150000.
 */
export class PoolsOfANewCluster1795400315000 implements MigrationInterface {
  name = 'PoolsOfANewCluster1795400315000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION cms_node_pool_generation() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        g bigint;
        at timestamptz;
        cluster bigint;
      BEGIN
        IF TG_OP = 'UPDATE' AND NOT (
             NEW.name IS DISTINCT FROM OLD.name
          OR NEW.availability_zone IS DISTINCT FROM OLD.availability_zone
          OR NEW.node_size IS DISTINCT FROM OLD.node_size
          OR NEW.auto_scaling IS DISTINCT FROM OLD.auto_scaling
          OR NEW.min_size IS DISTINCT FROM OLD.min_size
          OR NEW.max_size IS DISTINCT FROM OLD.max_size
          OR NEW.enable_node_auto_replacement IS DISTINCT FROM OLD.enable_node_auto_replacement
          OR NEW.enable_node_reboots IS DISTINCT FROM OLD.enable_node_reboots
          OR NEW.upgrade_strategy IS DISTINCT FROM OLD.upgrade_strategy
          OR NEW.annotations IS DISTINCT FROM OLD.annotations
          OR NEW.labels IS DISTINCT FROM OLD.labels
          OR NEW.taints IS DISTINCT FROM OLD.taints) THEN
          RETURN NEW;
        END IF;
        at := CASE WHEN TG_OP = 'DELETE' THEN now() ELSE COALESCE(NEW.modified_at, now()) END;
        cluster := CASE WHEN TG_OP = 'DELETE' THEN OLD.cluster_id ELSE NEW.cluster_id END;
        -- A cluster at generation 1 that no driver has applied yet and that this transaction wrote (its xmin is this
        -- transaction's id: it is being created with its pools) keeps generation 1.
        UPDATE clusters SET generation = generation + 1, next_attempt_at = NULL,
               conditions = cms_spec_changed_conditions(conditions, at, generation + 1)
         WHERE id = cluster
           AND NOT (generation = 1 AND observed_generation IS NULL AND xmin::text::bigint = (txid_current() % 4294967296))
        RETURNING generation INTO g;
        IF g IS NULL THEN
          SELECT generation INTO g FROM clusters WHERE id = cluster;
        END IF;
        IF TG_OP = 'DELETE' THEN
          RETURN OLD;
        END IF;
        NEW.generation := COALESCE(g, NEW.generation);
        NEW.conditions := cms_spec_changed_conditions(NEW.conditions, at, NEW.generation);
        RETURN NEW;
      END $$;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION cms_node_pool_generation() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        g bigint;
        at timestamptz;
      BEGIN
        IF TG_OP = 'UPDATE' AND NOT (
             NEW.name IS DISTINCT FROM OLD.name
          OR NEW.availability_zone IS DISTINCT FROM OLD.availability_zone
          OR NEW.node_size IS DISTINCT FROM OLD.node_size
          OR NEW.auto_scaling IS DISTINCT FROM OLD.auto_scaling
          OR NEW.min_size IS DISTINCT FROM OLD.min_size
          OR NEW.max_size IS DISTINCT FROM OLD.max_size
          OR NEW.enable_node_auto_replacement IS DISTINCT FROM OLD.enable_node_auto_replacement
          OR NEW.enable_node_reboots IS DISTINCT FROM OLD.enable_node_reboots
          OR NEW.upgrade_strategy IS DISTINCT FROM OLD.upgrade_strategy
          OR NEW.annotations IS DISTINCT FROM OLD.annotations
          OR NEW.labels IS DISTINCT FROM OLD.labels
          OR NEW.taints IS DISTINCT FROM OLD.taints) THEN
          RETURN NEW;
        END IF;
        at := CASE WHEN TG_OP = 'DELETE' THEN now() ELSE COALESCE(NEW.modified_at, now()) END;
        UPDATE clusters SET generation = generation + 1, next_attempt_at = NULL,
               conditions = cms_spec_changed_conditions(conditions, at, generation + 1)
         WHERE id = CASE WHEN TG_OP = 'DELETE' THEN OLD.cluster_id ELSE NEW.cluster_id END
        RETURNING generation INTO g;
        IF TG_OP = 'DELETE' THEN
          RETURN OLD;
        END IF;
        NEW.generation := COALESCE(g, NEW.generation);
        NEW.conditions := cms_spec_changed_conditions(NEW.conditions, at, NEW.generation);
        RETURN NEW;
      END $$;
    `);
  }
}
