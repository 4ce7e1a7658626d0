import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Cluster policies: CEL expressions checked on every change of a cluster (docs/policies.md). A row with
 * organisation_id NULL is a platform policy (platform administrators; applies to every organisation).
 * Names are unique per organisation and among platform policies.
 */
export class ClusterPolicies1795400031742 implements MigrationInterface {
  name = 'ClusterPolicies1795400031742';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE cluster_policies (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
        organisation_id bigint REFERENCES organisations(id) ON DELETE CASCADE,
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        expression text NOT NULL,
        message text NOT NULL,
        message_expression text,
        action text NOT NULL CHECK (action IN ('Deny', 'Warn', 'Audit')),
        environments text[],
        environment_types text[],
        enabled boolean NOT NULL DEFAULT true,
        created_by text NOT NULL,
        created_at timestamptz NOT NULL,
        modified_at timestamptz NOT NULL,
        CHECK (environments IS NULL OR environment_types IS NULL)
      );
      CREATE UNIQUE INDEX cluster_policies_org_name_idx ON cluster_policies (organisation_id, name) WHERE organisation_id IS NOT NULL;
      CREATE UNIQUE INDEX cluster_policies_platform_name_idx ON cluster_policies (name) WHERE organisation_id IS NULL;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE cluster_policies`);
  }
}
