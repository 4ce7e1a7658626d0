import { MigrationInterface, QueryRunner } from 'typeorm';
import { PoolsOfANewCluster1795400315000 } from './1795400315000-PoolsOfANewCluster';

const SPEC_CHANGED = `NEW.name IS DISTINCT FROM OLD.name
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
          OR NEW.taints IS DISTINCT FROM OLD.taints`;

/**
 * Node pool changes bump their clusters once per statement (docs/adr/0150): a row trigger gives each changed pool the
 * cluster's next generation (holding the cluster's row lock, so no other change takes that number), and a statement
 * trigger bumps each cluster whose pools took it, once. A statement that writes 2,000 pools of 2,000 clusters (an
 * import, a seed) costs one UPDATE of clusters instead of 2,000 nested ones, each with the clusters table's own
 * triggers. A new cluster's pools written in the transaction that created it still keep generation 1
 * (PoolsOfANewCluster1795400315000); deleting pools bumps their clusters once per statement.
 */
export class PoolGenerationsPerStatement1795400315100 implements MigrationInterface {
  name = 'PoolGenerationsPerStatement1795400315100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER cluster_node_pools_generation ON cluster_node_pools;

      CREATE OR REPLACE FUNCTION cms_node_pool_generation() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        c record;
      BEGIN
        IF TG_OP = 'UPDATE' AND NOT (${SPEC_CHANGED}) THEN
          RETURN NEW;
        END IF;
        SELECT generation, observed_generation, xmin::text::bigint = (txid_current() % 4294967296) AS written_here
          INTO c FROM clusters WHERE id = NEW.cluster_id FOR UPDATE;
        IF c.generation IS NULL THEN
          RETURN NEW;
        END IF;
        -- A cluster at generation 1 that no driver has applied and that this transaction wrote (it is being created
        -- with its pools) keeps generation 1; otherwise the pool takes the next one, which the statement trigger sets.
        NEW.generation := CASE WHEN c.generation = 1 AND c.observed_generation IS NULL AND c.written_here THEN 1 ELSE c.generation + 1 END;
        NEW.conditions := cms_spec_changed_conditions(NEW.conditions, COALESCE(NEW.modified_at, now()), NEW.generation);
        RETURN NEW;
      END $$;
      CREATE TRIGGER cluster_node_pools_generation BEFORE INSERT OR UPDATE ON cluster_node_pools
        FOR EACH ROW EXECUTE FUNCTION cms_node_pool_generation();

      CREATE FUNCTION cms_node_pools_written() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE clusters c SET generation = c.generation + 1, next_attempt_at = NULL,
               conditions = cms_spec_changed_conditions(c.conditions, w.at, c.generation + 1)
          FROM (SELECT cluster_id, max(generation) AS generation, max(modified_at) AS at FROM written GROUP BY cluster_id) w
         WHERE c.id = w.cluster_id AND w.generation = c.generation + 1;
        RETURN NULL;
      END $$;
      CREATE TRIGGER cluster_node_pools_inserted AFTER INSERT ON cluster_node_pools
        REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION cms_node_pools_written();
      CREATE TRIGGER cluster_node_pools_updated AFTER UPDATE ON cluster_node_pools
        REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION cms_node_pools_written();

      CREATE FUNCTION cms_node_pools_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE clusters c SET generation = c.generation + 1, next_attempt_at = NULL,
               conditions = cms_spec_changed_conditions(c.conditions, now(), c.generation + 1)
         WHERE c.id IN (SELECT DISTINCT cluster_id FROM removed);
        RETURN NULL;
      END $$;
      CREATE TRIGGER cluster_node_pools_deleted AFTER DELETE ON cluster_node_pools
        REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION cms_node_pools_deleted();
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER cluster_node_pools_deleted ON cluster_node_pools;
      DROP TRIGGER cluster_node_pools_updated ON cluster_node_pools;
      DROP TRIGGER cluster_node_pools_inserted ON cluster_node_pools;
      DROP FUNCTION cms_node_pools_deleted();
      DROP FUNCTION cms_node_pools_written();
      DROP TRIGGER cluster_node_pools_generation ON cluster_node_pools;
      CREATE TRIGGER cluster_node_pools_generation BEFORE INSERT OR UPDATE OR DELETE ON cluster_node_pools
        FOR EACH ROW EXECUTE FUNCTION cms_node_pool_generation();
    `);
    // The row function of that migration (which bumped per row, deletions included).
    await new PoolsOfANewCluster1795400315000().up(q);
  }
}
