import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Generations (docs/adr/0150-generations-bumped-by-the-database.md), as Kubernetes' `metadata.generation` and
 * `status.observedGeneration`:
 * - `clusters.generation` (from 1) counts the changes of what the cluster should look like; `observed_generation` is
 *   the newest one the driver reported applied (null: none yet); `conditions` holds Ready, Reconciling and Degraded
 *   with their last transition times.
 * - `cluster_node_pools.generation` is the cluster generation of the pool's last change, `observed_generation` the
 *   cluster generation the driver reported the pool applied at.
 * - Triggers bump the generation in the change's own statement, whoever writes it (API, admin API, the scheduler's
 *   upgrades, the demo seed): a change of a desired-state column of `clusters`, a start or stop request, and the
 *   insert, change or delete of a node pool. A bump marks the cluster Reconciling (Ready False), clears its
 *   `next_attempt_at` (a cluster backing off after a terminal driver error tries the new spec at once), and the
 *   NOTIFY trigger now also fires on `generation`.
 */
export class ClusterGenerations1795400150000 implements MigrationInterface {
  name = 'ClusterGenerations1795400150000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE clusters ADD COLUMN generation bigint NOT NULL DEFAULT 1,
        ADD COLUMN observed_generation bigint,
        ADD COLUMN conditions jsonb NOT NULL DEFAULT '[]';
      ALTER TABLE cluster_node_pools ADD COLUMN generation bigint NOT NULL DEFAULT 1,
        ADD COLUMN observed_generation bigint,
        ADD COLUMN conditions jsonb NOT NULL DEFAULT '[]';

      -- Sets conditions (an array of {type, status, reason, message}) in a conditions array: a condition whose status
      -- does not change keeps its lastTransitionTime; each carries the generation it was set for.
      CREATE FUNCTION cms_set_conditions(conds jsonb, changes jsonb, at timestamptz, gen bigint) RETURNS jsonb
      LANGUAGE plpgsql IMMUTABLE AS $$
      DECLARE
        ch jsonb;
        old jsonb;
        pos int;
        result jsonb := COALESCE(conds, '[]'::jsonb);
      BEGIN
        FOR ch IN SELECT value FROM jsonb_array_elements(changes) LOOP
          old := NULL;
          pos := NULL;
          SELECT e, (n - 1)::int INTO old, pos FROM jsonb_array_elements(result) WITH ORDINALITY AS x(e, n) WHERE e->>'type' = ch->>'type';
          ch := ch || jsonb_build_object(
            'observedGeneration', gen,
            'lastTransitionTime', CASE WHEN old IS NOT NULL AND old->>'status' = ch->>'status' THEN old->'lastTransitionTime'
                                       ELSE to_jsonb(to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) END);
          IF old IS NULL THEN result := result || jsonb_build_array(ch);
          ELSE result := jsonb_set(result, ARRAY[pos::text], ch);
          END IF;
        END LOOP;
        RETURN result;
      END $$;

      -- What a pending generation shows: Reconciling, not Ready (Degraded stays as the driver last left it).
      CREATE FUNCTION cms_spec_changed_conditions(conds jsonb, at timestamptz, gen bigint) RETURNS jsonb
      LANGUAGE sql IMMUTABLE AS $$
        SELECT cms_set_conditions(conds, jsonb_build_array(
          jsonb_build_object('type', 'Ready', 'status', 'False', 'reason', 'Reconciling', 'message', 'Generation ' || gen || ' is not applied yet'),
          jsonb_build_object('type', 'Reconciling', 'status', 'True', 'reason', 'SpecChanged', 'message', 'Generation ' || gen || ' is waiting to be applied by the cluster driver')),
          at, gen)
      $$;

      CREATE FUNCTION cms_cluster_generation() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          NEW.conditions := cms_spec_changed_conditions(NEW.conditions, COALESCE(NEW.created_at, now()), NEW.generation);
          RETURN NEW;
        END IF;
        IF NEW.version IS DISTINCT FROM OLD.version
           OR NEW.highly_available IS DISTINCT FROM OLD.highly_available
           OR NEW.enable_multi_availability_zones IS DISTINCT FROM OLD.enable_multi_availability_zones
           OR NEW.enable_nat_gateway IS DISTINCT FROM OLD.enable_nat_gateway
           OR NEW.enable_network_encryption IS DISTINCT FROM OLD.enable_network_encryption
           OR NEW.pod_security_standards_profile IS DISTINCT FROM OLD.pod_security_standards_profile
           OR NEW.cni IS DISTINCT FROM OLD.cni
           OR NEW.cluster_pod_subnet IS DISTINCT FROM OLD.cluster_pod_subnet
           OR NEW.service_subnet IS DISTINCT FROM OLD.service_subnet
           OR NEW.ip_whitelist IS DISTINCT FROM OLD.ip_whitelist
           OR NEW.addons IS DISTINCT FROM OLD.addons
           OR NEW.cluster_autoscaler_settings IS DISTINCT FROM OLD.cluster_autoscaler_settings
           OR NEW.platform_oidc IS DISTINCT FROM OLD.platform_oidc
           OR (NEW.desired_status IS DISTINCT FROM OLD.desired_status AND NEW.desired_status IN ('starting', 'stopping'))
        THEN
          NEW.generation := OLD.generation + 1;
          NEW.next_attempt_at := NULL;
          NEW.conditions := cms_spec_changed_conditions(NEW.conditions, COALESCE(NEW.modified_at, now()), NEW.generation);
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER clusters_generation_insert BEFORE INSERT ON clusters
        FOR EACH ROW EXECUTE FUNCTION cms_cluster_generation();
      CREATE TRIGGER clusters_generation BEFORE UPDATE OF version, highly_available, enable_multi_availability_zones, enable_nat_gateway,
          enable_network_encryption, pod_security_standards_profile, cni, cluster_pod_subnet, service_subnet, ip_whitelist, addons,
          cluster_autoscaler_settings, platform_oidc, desired_status ON clusters
        FOR EACH ROW EXECUTE FUNCTION cms_cluster_generation();

      CREATE FUNCTION cms_node_pool_generation() RETURNS trigger LANGUAGE plpgsql AS $$
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
      CREATE TRIGGER cluster_node_pools_generation BEFORE INSERT OR UPDATE OR DELETE ON cluster_node_pools
        FOR EACH ROW EXECUTE FUNCTION cms_node_pool_generation();

      DROP TRIGGER clusters_notify_update ON clusters;
      CREATE TRIGGER clusters_notify_update AFTER UPDATE OF desired_status, version, deleted_at, generation ON clusters
        FOR EACH STATEMENT EXECUTE FUNCTION cms_notify_cluster_change();

      -- What exists was brought about by the driver of its time: a cluster past provisioning and a provisioned pool
      -- are at generation 1, applied.
      UPDATE clusters SET observed_generation = 1 WHERE status NOT IN ('new', 'provisioning')
        AND NOT (status = 'unknown' AND status_before_fault IN ('new', 'provisioning'));
      UPDATE clusters SET conditions = CASE WHEN observed_generation IS NULL THEN cms_spec_changed_conditions('[]', modified_at, 1)
        ELSE cms_set_conditions('[]', jsonb_build_array(
          jsonb_build_object('type', 'Ready', 'status', CASE WHEN status IN ('started', 'stopped') THEN 'True' ELSE 'False' END,
                             'reason', CASE WHEN status IN ('started', 'stopped') THEN 'Applied' ELSE 'Reconciling' END,
                             'message', 'Generation 1 is applied'),
          jsonb_build_object('type', 'Reconciling', 'status', 'False', 'reason', 'Applied', 'message', 'Generation 1 is applied')), modified_at, 1) END;
      UPDATE cluster_node_pools SET observed_generation = 1 WHERE provision_status = 'DONE';
      UPDATE cluster_node_pools SET conditions = CASE WHEN observed_generation IS NULL THEN cms_spec_changed_conditions('[]', modified_at, 1)
        ELSE cms_set_conditions('[]', jsonb_build_array(
          jsonb_build_object('type', 'Ready', 'status', 'True', 'reason', 'Applied', 'message', 'Generation 1 is applied'),
          jsonb_build_object('type', 'Reconciling', 'status', 'False', 'reason', 'Applied', 'message', 'Generation 1 is applied')), modified_at, 1) END;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER clusters_notify_update ON clusters;
      CREATE TRIGGER clusters_notify_update AFTER UPDATE OF desired_status, version, deleted_at ON clusters
        FOR EACH STATEMENT EXECUTE FUNCTION cms_notify_cluster_change();
      DROP TRIGGER cluster_node_pools_generation ON cluster_node_pools;
      DROP FUNCTION cms_node_pool_generation();
      DROP TRIGGER clusters_generation ON clusters;
      DROP TRIGGER clusters_generation_insert ON clusters;
      DROP FUNCTION cms_cluster_generation();
      DROP FUNCTION cms_spec_changed_conditions(jsonb, timestamptz, bigint);
      DROP FUNCTION cms_set_conditions(jsonb, jsonb, timestamptz, bigint);
      ALTER TABLE cluster_node_pools DROP COLUMN conditions, DROP COLUMN observed_generation, DROP COLUMN generation;
      ALTER TABLE clusters DROP COLUMN conditions, DROP COLUMN observed_generation, DROP COLUMN generation;
    `);
  }
}
