import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Bring-your-own-node pools: bootstrap tokens that let a customer's machine join one node pool (only the
 * SHA-256 of a token is stored), and the nodes that registered with them.
 */
export class ByonNodes1764000035200 implements MigrationInterface {
  name = 'ByonNodes1764000035200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE node_join_tokens (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        cluster_id bigint NOT NULL REFERENCES clusters(id) ON DELETE CASCADE,
        node_pool_id bigint NOT NULL REFERENCES cluster_node_pools(id) ON DELETE CASCADE,
        token_hash text NOT NULL UNIQUE CHECK (token_hash ~ '^[0-9a-f]{64}$'),
        max_nodes integer NOT NULL CHECK (max_nodes >= 1),
        registered_nodes integer NOT NULL DEFAULT 0 CHECK (registered_nodes >= 0),
        created_by text NOT NULL,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        revoked_at timestamptz,
        last_used_at timestamptz,
        CHECK (expires_at > created_at)
      );
      CREATE INDEX node_join_tokens_pool_open_idx ON node_join_tokens (node_pool_id) WHERE revoked_at IS NULL;

      CREATE TABLE node_pool_nodes (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        cluster_id bigint NOT NULL REFERENCES clusters(id) ON DELETE CASCADE,
        node_pool_id bigint NOT NULL REFERENCES cluster_node_pools(id) ON DELETE CASCADE,
        join_token_id bigint REFERENCES node_join_tokens(id) ON DELETE SET NULL,
        name text NOT NULL,
        address text NOT NULL,
        kubelet_version text NOT NULL,
        cpu integer CHECK (cpu IS NULL OR cpu >= 0),
        memory bigint CHECK (memory IS NULL OR memory >= 0),
        joined_at timestamptz NOT NULL,
        last_registered_at timestamptz NOT NULL,
        UNIQUE (node_pool_id, name)
      );
      CREATE INDEX node_pool_nodes_cluster_idx ON node_pool_nodes (cluster_id);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE node_pool_nodes; DROP TABLE node_join_tokens;`);
  }
}
