import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every bounded context on top of the spine: catalog, environments, cloud accounts and credentials,
 * maintenance schedules, clusters with node pools, scheduled upgrades and observability.
 *
 * Notes on choices that are not obvious from the column list:
 * - clusters keep the desired orchestration version in `version`, so their optimistic-lock counter
 *   is `row_version`.
 * - clusters cascade with their organisation, environment and cloud account: those parents are only
 *   hard-deleted after the service's guards (no live clusters; cloud account unused for 24 h), and
 *   what is left then is soft-deleted history that must not block the delete.
 * - the reconciler's partial index predicate must be repeated verbatim by the claim query
 *   (see RECONCILE_CANDIDATE_PREDICATE in src/clusters/cluster.entity.ts).
 */
export class DomainSchema1763800100000 implements MigrationInterface {
  name = 'DomainSchema1763800100000';

  async up(q: QueryRunner): Promise<void> {
    // ------------------------------------------------------------------ catalog
    await q.query(`
      CREATE TABLE cloud_providers (
        id bigserial PRIMARY KEY,
        slug text NOT NULL UNIQUE,
        type text NOT NULL UNIQUE CHECK (type IN ('byon','empty','none','platform_1','platform_2','platform_3','platform_4','platform_5','platform_6','platform_7')),
        name text NOT NULL,
        logo text NOT NULL DEFAULT '',
        available boolean NOT NULL DEFAULT true,
        byon boolean NOT NULL DEFAULT false,
        private_cluster_setting text NOT NULL CHECK (private_cluster_setting IN ('UNAVAILABLE','ENFORCED','PREFERRED','SELECTABLE')),
        metadata jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE cloud_provider_regions (
        id bigserial PRIMARY KEY,
        provider_id bigint NOT NULL REFERENCES cloud_providers(id) ON DELETE CASCADE,
        slug text NOT NULL,
        name text NOT NULL,
        available boolean NOT NULL DEFAULT true,
        restricted boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (provider_id, slug)
      );

      CREATE TABLE cloud_provider_availability_zones (
        id bigserial PRIMARY KEY,
        region_id bigint NOT NULL REFERENCES cloud_provider_regions(id) ON DELETE CASCADE,
        slug text NOT NULL,
        name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (region_id, slug)
      );

      CREATE TABLE cloud_provider_node_types (
        id bigserial PRIMARY KEY,
        provider_id bigint NOT NULL REFERENCES cloud_providers(id) ON DELETE CASCADE,
        type text NOT NULL,
        cpu bigint NOT NULL CHECK (cpu > 0),
        memory bigint NOT NULL CHECK (memory > 0),
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (provider_id, type)
      );

      CREATE TABLE cloud_profiles (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE,
        slug text NOT NULL UNIQUE,
        display_name text NOT NULL,
        type text NOT NULL REFERENCES cloud_providers(type),
        enabled boolean NOT NULL DEFAULT true,
        public boolean NOT NULL DEFAULT true,
        metadata jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
        regions text[] NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX cloud_profiles_type_idx ON cloud_profiles (type);

      CREATE TABLE cluster_versions (
        id bigserial PRIMARY KEY,
        version text NOT NULL UNIQUE CHECK (version ~ '^[0-9]+[.][0-9]+[.][0-9]+([-+].+)?$'),
        kubernetes_version text NOT NULL,
        available boolean NOT NULL DEFAULT true,
        note text NOT NULL DEFAULT '',
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE update_channels (
        id bigserial PRIMARY KEY,
        name text NOT NULL UNIQUE,
        kubernetes_cluster_version text NOT NULL REFERENCES cluster_versions(version) ON UPDATE CASCADE,
        available boolean NOT NULL DEFAULT true,
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX update_channels_version_idx ON update_channels (kubernetes_cluster_version);

      CREATE TABLE addons (
        id bigserial PRIMARY KEY,
        name text NOT NULL UNIQUE,
        display_name text NOT NULL,
        description text NOT NULL DEFAULT '',
        default_enabled boolean NOT NULL DEFAULT false,
        integration text,
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now()
      );
    `);

    // ------------------------------------------------------------- environments
    await q.query(`
      CREATE TABLE environments (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        organisation_id bigint NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        slug text NOT NULL,
        name text NOT NULL,
        description text,
        purpose text,
        type text CHECK (type IN ('production','staging','development','demo','other')),
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz,
        version integer NOT NULL DEFAULT 1
      );
      CREATE UNIQUE INDEX environments_org_slug_uq ON environments (organisation_id, slug) WHERE deleted_at IS NULL;

      CREATE TABLE environment_members (
        id bigserial PRIMARY KEY,
        environment_id bigint NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
        member_id bigint NOT NULL REFERENCES organisation_members(id) ON DELETE CASCADE,
        kubernetes_role text NOT NULL CHECK (kubernetes_role IN ('CLUSTER_ADMIN','EDIT','VIEW','NONE')),
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (environment_id, member_id)
      );
      CREATE INDEX environment_members_member_idx ON environment_members (member_id);
    `);

    // ----------------------------------------------------------- cloud accounts
    await q.query(`
      CREATE TABLE cloud_accounts (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        organisation_id bigint NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        cloud_profile_id bigint NOT NULL REFERENCES cloud_profiles(id),
        cloud_provider_type text NOT NULL,
        display_name text NOT NULL,
        enabled boolean NOT NULL DEFAULT true,
        metadata jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
        primary_credentials_id bigint,
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        version integer NOT NULL DEFAULT 1
      );
      CREATE INDEX cloud_accounts_org_idx ON cloud_accounts (organisation_id, id);
      CREATE INDEX cloud_accounts_profile_idx ON cloud_accounts (cloud_profile_id);

      CREATE TABLE cloud_credentials (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        cloud_account_id bigint NOT NULL REFERENCES cloud_accounts(id) ON DELETE CASCADE,
        display_name text NOT NULL,
        cloud_type text NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
        secret_ciphertext text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX cloud_credentials_account_idx ON cloud_credentials (cloud_account_id, id);

      ALTER TABLE cloud_accounts
        ADD CONSTRAINT cloud_accounts_primary_credentials_fk
        FOREIGN KEY (primary_credentials_id) REFERENCES cloud_credentials(id) ON DELETE SET NULL;
      CREATE INDEX cloud_accounts_primary_credentials_idx ON cloud_accounts (primary_credentials_id) WHERE primary_credentials_id IS NOT NULL;
    `);

    // -------------------------------------------------------------- maintenance
    await q.query(`
      CREATE TABLE maintenance_schedules (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        organisation_id bigint NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        name text NOT NULL,
        windows jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(windows) = 'array'),
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        version integer NOT NULL DEFAULT 1
      );
      CREATE INDEX maintenance_schedules_org_idx ON maintenance_schedules (organisation_id, id);
    `);

    // ----------------------------------------------------------------- clusters
    await q.query(`
      CREATE TABLE clusters (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        organisation_id bigint NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        environment_id bigint NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
        cloud_account_id bigint NOT NULL REFERENCES cloud_accounts(id) ON DELETE CASCADE,
        cloud_credentials_id bigint REFERENCES cloud_credentials(id) ON DELETE SET NULL,
        slug text NOT NULL,
        name text NOT NULL,
        description text,
        region text NOT NULL,
        cloud_provider text NOT NULL,
        version text NOT NULL,
        update_channel text,
        auto_upgrade boolean NOT NULL DEFAULT false,
        highly_available boolean NOT NULL DEFAULT false,
        enable_multi_availability_zones boolean NOT NULL DEFAULT false,
        enable_nat_gateway boolean NOT NULL DEFAULT false,
        enable_network_encryption boolean NOT NULL DEFAULT false,
        pod_security_standards_profile text CHECK (pod_security_standards_profile IN ('privileged','baseline','restricted')),
        delete_protection boolean NOT NULL DEFAULT false,
        cni text NOT NULL DEFAULT 'cilium' CHECK (cni IN ('custom','cilium','calico')),
        cluster_pod_subnet text,
        service_subnet text,
        ip_whitelist jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(ip_whitelist) = 'array'),
        addons jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(addons) = 'object'),
        cluster_autoscaler_settings jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(cluster_autoscaler_settings) = 'object'),
        maintenance_schedule_id bigint REFERENCES maintenance_schedules(id) ON DELETE SET NULL,
        upstream_cluster_id bigint REFERENCES clusters(id) ON DELETE SET NULL,
        platform_oidc boolean NOT NULL DEFAULT true,
        environment_metrics_rules boolean NOT NULL DEFAULT false,
        status text NOT NULL DEFAULT 'new' CHECK (status IN ('new','provisioning','provisioned','starting','started','stopping','stopped','deleting','deleted','unknown')),
        desired_status text CHECK (desired_status IN ('starting','stopping','deleting')),
        provision_status text NOT NULL DEFAULT 'ACCEPTED' CHECK (provision_status IN ('UNKNOWN','ACCEPTED','OIDC_PROVISIONED','CLUSTER_PROVISIONED','INITIAL_NODE_POOLS_PROVISIONED','INITIAL_ADDONS_PROVISIONED','DONE')),
        status_before_fault text CHECK (status_before_fault IN ('new','provisioning','provisioned','starting','started','stopping','stopped','deleting','deleted','unknown')),
        step_started_at timestamptz,
        next_attempt_at timestamptz,
        attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        last_error text,
        observed_at timestamptz,
        observed_status text CHECK (observed_status IN ('new','provisioning','provisioned','starting','started','stopping','stopped','deleting','deleted','unknown')),
        observed_version text,
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz,
        row_version integer NOT NULL DEFAULT 1,
        CHECK (upstream_cluster_id IS DISTINCT FROM id)
      );
      CREATE UNIQUE INDEX clusters_env_slug_uq ON clusters (environment_id, slug) WHERE deleted_at IS NULL;
      CREATE INDEX clusters_org_idx ON clusters (organisation_id, id) WHERE deleted_at IS NULL;
      CREATE INDEX clusters_env_idx ON clusters (environment_id, id) WHERE deleted_at IS NULL;
      CREATE INDEX clusters_cloud_account_idx ON clusters (cloud_account_id);
      CREATE INDEX clusters_cloud_credentials_idx ON clusters (cloud_credentials_id) WHERE cloud_credentials_id IS NOT NULL;
      CREATE INDEX clusters_maintenance_schedule_idx ON clusters (maintenance_schedule_id);
      CREATE INDEX clusters_upstream_idx ON clusters (upstream_cluster_id) WHERE upstream_cluster_id IS NOT NULL;
      CREATE INDEX clusters_reconcile_idx ON clusters (next_attempt_at)
        WHERE deleted_at IS NULL
          AND (desired_status IS NOT NULL
               OR status IN ('new','provisioning','provisioned','starting','stopping','deleting','unknown')
               OR version IS DISTINCT FROM observed_version);

      CREATE TABLE cluster_node_pools (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        cluster_id bigint NOT NULL REFERENCES clusters(id) ON DELETE CASCADE,
        name text NOT NULL,
        availability_zone text,
        node_size text NOT NULL,
        auto_scaling boolean NOT NULL DEFAULT false,
        min_size bigint NOT NULL,
        max_size bigint NOT NULL,
        enable_node_auto_replacement boolean NOT NULL DEFAULT true,
        enable_node_reboots boolean NOT NULL DEFAULT false,
        upgrade_strategy text NOT NULL DEFAULT 'REPLACE' CHECK (upgrade_strategy IN ('REPLACE','INPLACE','INPLACE_WITHOUT_DRAIN','REPLACE_MINOR_INPLACE_PATCH','REPLACE_MINOR_INPLACE_PATCH_WITHOUT_DRAIN')),
        annotations jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(annotations) = 'object'),
        labels jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(labels) = 'object'),
        taints jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(taints) = 'array'),
        provision_status text NOT NULL DEFAULT 'ACCEPTED' CHECK (provision_status IN ('UNKNOWN','ACCEPTED','OIDC_PROVISIONED','CLUSTER_PROVISIONED','INITIAL_NODE_POOLS_PROVISIONED','INITIAL_ADDONS_PROVISIONED','DONE')),
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        version integer NOT NULL DEFAULT 1,
        CHECK (min_size <= max_size AND min_size >= 0),
        UNIQUE (cluster_id, name)
      );

      CREATE TABLE simulated_driver_faults (
        id bigserial PRIMARY KEY,
        cluster_id bigint NOT NULL REFERENCES clusters(id) ON DELETE CASCADE,
        step text NOT NULL,
        remaining integer NOT NULL DEFAULT 1 CHECK (remaining >= 0),
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX simulated_driver_faults_cluster_idx ON simulated_driver_faults (cluster_id, step);
    `);

    // ----------------------------------------------------------------- upgrades
    await q.query(`
      CREATE TABLE scheduled_cluster_upgrades (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        organisation_id bigint NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        cluster_id bigint NOT NULL REFERENCES clusters(id) ON DELETE CASCADE,
        from_cluster_version text NOT NULL,
        to_cluster_version text NOT NULL,
        window_start timestamptz NOT NULL,
        window_end timestamptz NOT NULL,
        status text NOT NULL DEFAULT 'SCHEDULED' CHECK (status IN ('SCHEDULED','SCHEDULED_NOTIFIED','UPDATED','SUCCEEDED','CANCELLED','SUPERSEDED','FAILED','MISSED')),
        reason text,
        notified_at timestamptz,
        started_at timestamptz,
        finished_at timestamptz,
        created_by text NOT NULL DEFAULT 'system',
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        version integer NOT NULL DEFAULT 1,
        CHECK (window_start < window_end)
      );
      CREATE UNIQUE INDEX scheduled_cluster_upgrades_active_uq ON scheduled_cluster_upgrades (cluster_id)
        WHERE status IN ('SCHEDULED','SCHEDULED_NOTIFIED','UPDATED');
      CREATE INDEX scheduled_cluster_upgrades_org_idx ON scheduled_cluster_upgrades (organisation_id, id);
      CREATE INDEX scheduled_cluster_upgrades_status_window_idx ON scheduled_cluster_upgrades (status, window_start);
      CREATE INDEX scheduled_cluster_upgrades_cluster_idx ON scheduled_cluster_upgrades (cluster_id, id);
    `);

    // ------------------------------------------------------------ observability
    await q.query(`
      CREATE TABLE observability_tenants (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        organisation_id bigint NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        cluster_id bigint REFERENCES clusters(id) ON DELETE SET NULL,
        environment_id bigint REFERENCES environments(id) ON DELETE SET NULL,
        slug text NOT NULL,
        name text NOT NULL,
        available boolean NOT NULL DEFAULT true,
        ip_white_list text,
        webhook_token_hash char(64),
        alerting_config text,
        rule_files jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(rule_files) = 'object'),
        template_files jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(template_files) = 'object'),
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz
      );
      CREATE UNIQUE INDEX observability_tenants_org_slug_uq ON observability_tenants (organisation_id, slug) WHERE deleted_at IS NULL;
      CREATE INDEX observability_tenants_org_idx ON observability_tenants (organisation_id, id) WHERE deleted_at IS NULL;
      CREATE INDEX observability_tenants_slug_idx ON observability_tenants (slug) WHERE deleted_at IS NULL;
      CREATE INDEX observability_tenants_cluster_idx ON observability_tenants (cluster_id) WHERE cluster_id IS NOT NULL;
      CREATE INDEX observability_tenants_environment_idx ON observability_tenants (environment_id) WHERE environment_id IS NOT NULL;

      CREATE TABLE environment_alerting_configs (
        environment_id bigint PRIMARY KEY REFERENCES environments(id) ON DELETE CASCADE,
        alerting_config text,
        rule_files jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(rule_files) = 'object'),
        template_files jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(template_files) = 'object'),
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE tenant_alerts (
        id bigserial PRIMARY KEY,
        tenant_id bigint NOT NULL REFERENCES observability_tenants(id) ON DELETE CASCADE,
        fingerprint text NOT NULL,
        status text NOT NULL CHECK (status IN ('firing','resolved')),
        labels jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(labels) = 'object'),
        annotations jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(annotations) = 'object'),
        starts_at timestamptz NOT NULL,
        ends_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tenant_id, fingerprint)
      );

      CREATE TABLE dashboard_integrations (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        organisation_id bigint NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        slug text NOT NULL,
        name text NOT NULL,
        url text NOT NULL,
        api_token_ciphertext text NOT NULL,
        datasource_prefix text,
        manage_datasources boolean NOT NULL DEFAULT false,
        provision_users boolean NOT NULL DEFAULT false,
        status text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING','CONNECTED','ERROR')),
        status_message text,
        checked_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz
      );
      CREATE UNIQUE INDEX dashboard_integrations_org_slug_uq ON dashboard_integrations (organisation_id, slug) WHERE deleted_at IS NULL;
      CREATE INDEX dashboard_integrations_org_idx ON dashboard_integrations (organisation_id, id) WHERE deleted_at IS NULL;
      CREATE INDEX dashboard_integrations_check_idx ON dashboard_integrations (checked_at NULLS FIRST) WHERE deleted_at IS NULL;

      CREATE TABLE organisation_integrations (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        organisation_id bigint NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        type text NOT NULL CHECK (type = 'alerting'),
        display_name text NOT NULL,
        enabled boolean NOT NULL DEFAULT false,
        config jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(config) = 'object'),
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        version integer NOT NULL DEFAULT 1,
        UNIQUE (organisation_id, type)
      );
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TABLE
        organisation_integrations, dashboard_integrations, tenant_alerts, environment_alerting_configs,
        observability_tenants, scheduled_cluster_upgrades, simulated_driver_faults, cluster_node_pools,
        clusters, maintenance_schedules, cloud_credentials, cloud_accounts, environment_members,
        environments, addons, update_channels, cluster_versions, cloud_profiles, cloud_provider_node_types,
        cloud_provider_availability_zones, cloud_provider_regions, cloud_providers
    `);
  }
}
