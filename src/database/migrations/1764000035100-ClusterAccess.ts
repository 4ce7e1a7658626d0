import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * How clients reach a cluster: the API server endpoint and CA certificate the driver reports when the
 * control plane is provisioned, and the cluster's OIDC client (created at the OIDC_PROVISIONED step; its
 * secret sealed with SecretBox). One row per cluster.
 */
export class ClusterAccess1764000035100 implements MigrationInterface {
  name = 'ClusterAccess1764000035100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE cluster_access (
        cluster_id bigint PRIMARY KEY REFERENCES clusters(id) ON DELETE CASCADE,
        oidc_client_id text NOT NULL UNIQUE,
        oidc_client_secret_ciphertext text NOT NULL,
        api_endpoint text,
        ca_certificate text,
        created_at timestamptz NOT NULL,
        modified_at timestamptz NOT NULL,
        CHECK ((api_endpoint IS NULL) = (ca_certificate IS NULL))
      );
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE cluster_access`);
  }
}
