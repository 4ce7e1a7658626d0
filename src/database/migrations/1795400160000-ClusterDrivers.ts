import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The registry of out-of-process cluster drivers (src/cluster-drivers, docs/drivers.md): one row per driver, its
 * signing secret sealed with SecretBox, the cloud providers (types) and cloud profiles (slugs) it serves, and the
 * last health check. Every committed change sends a NOTIFY on `cms_cluster_drivers`, so each replica's resolver
 * reloads the registry at once (a trigger catches every write, psql included).
 */
export class ClusterDrivers1795400160000 implements MigrationInterface {
  name = 'ClusterDrivers1795400160000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE cluster_drivers (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
        name text NOT NULL UNIQUE,
        url text NOT NULL,
        secret_ciphertext text NOT NULL,
        cloud_providers text[] NOT NULL DEFAULT '{}',
        cloud_profiles text[] NOT NULL DEFAULT '{}',
        enabled boolean NOT NULL DEFAULT true,
        timeout_ms integer NOT NULL DEFAULT 15000 CHECK (timeout_ms BETWEEN 100 AND 300000),
        max_in_flight integer NOT NULL DEFAULT 16 CHECK (max_in_flight BETWEEN 1 AND 1024),
        health_status text NOT NULL DEFAULT 'UNKNOWN' CHECK (health_status IN ('UNKNOWN', 'HEALTHY', 'UNHEALTHY')),
        health_checked_at timestamptz,
        health_message text,
        capabilities jsonb,
        created_at timestamptz NOT NULL,
        modified_at timestamptz NOT NULL
      );
      CREATE FUNCTION cms_notify_cluster_drivers() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('cms_cluster_drivers', '');
        RETURN NULL;
      END $$;
      CREATE TRIGGER cluster_drivers_notify AFTER INSERT OR UPDATE OR DELETE ON cluster_drivers
        FOR EACH STATEMENT EXECUTE FUNCTION cms_notify_cluster_drivers();
      CREATE TRIGGER cluster_drivers_notify_truncate AFTER TRUNCATE ON cluster_drivers
        FOR EACH STATEMENT EXECUTE FUNCTION cms_notify_cluster_drivers();
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TABLE cluster_drivers;
      DROP FUNCTION cms_notify_cluster_drivers();
    `);
  }
}
