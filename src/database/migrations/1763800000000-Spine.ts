import { MigrationInterface, QueryRunner } from 'typeorm';

/** Users, tokens, organisations with members, audit and activity: the tables every context builds on. */
export class Spine1763800000000 implements MigrationInterface {
  name = 'Spine1763800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE users (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        username text NOT NULL,
        email text NOT NULL,
        oidc_id text UNIQUE,
        can_create_organisations boolean NOT NULL DEFAULT false,
        platform_admin boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX users_username_uq ON users (lower(username));
      CREATE UNIQUE INDEX users_email_uq ON users (lower(email));
      CREATE INDEX users_username_prefix_idx ON users (lower(username) text_pattern_ops);

      CREATE TABLE personal_access_tokens (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        user_id bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        name text NOT NULL,
        token_hash char(64) NOT NULL UNIQUE,
        type text NOT NULL CHECK (type IN ('FULL_ACCESS','READ_ONLY')),
        ip_restriction text,
        expire_at timestamptz NOT NULL,
        revoked_at timestamptz,
        last_used_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX personal_access_tokens_user_idx ON personal_access_tokens (user_id);

      CREATE TABLE organisations (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        slug text NOT NULL UNIQUE,
        name text NOT NULL,
        type text NOT NULL CHECK (type IN ('BUSINESS','ENTERPRISE','INDIVIDUAL','TRIAL')),
        company_name text,
        company_address text,
        contact_email text,
        billing_email text,
        phone_number text,
        vat_code text,
        vat_code_validated boolean NOT NULL DEFAULT false,
        vat_code_validated_at timestamptz,
        accepted_terms boolean NOT NULL DEFAULT false,
        accepted_terms_at timestamptz,
        accepted_agreements text[] NOT NULL DEFAULT '{}',
        restricted_to_available_cloud_providers boolean NOT NULL DEFAULT false,
        clusters_per_customer bigint NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        modified_at timestamptz NOT NULL DEFAULT now(),
        version integer NOT NULL DEFAULT 1
      );

      CREATE TABLE organisation_members (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        organisation_id bigint NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        user_id bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        role text NOT NULL CHECK (role IN ('OWNER','ADMIN','MEMBER','VIEWER')),
        kubernetes_role text NOT NULL CHECK (kubernetes_role IN ('CLUSTER_ADMIN','EDIT','VIEW','NONE')),
        joined_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (organisation_id, user_id)
      );
      CREATE INDEX organisation_members_user_idx ON organisation_members (user_id);

      CREATE TABLE audit_events (
        id bigserial PRIMARY KEY,
        type text NOT NULL,
        actor_id bigint,
        actor_username text NOT NULL,
        organisation_id bigint,
        organisation_slug text,
        environment_id bigint,
        environment_slug text,
        cluster_id bigint,
        cluster_slug text,
        cluster_node_pool_id bigint,
        cluster_node_pool_name text,
        cloud_account_name text,
        referenced_entity_identity text,
        details jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX audit_events_org_idx ON audit_events (organisation_id, created_at DESC, id DESC);
      CREATE INDEX audit_events_cluster_idx ON audit_events (cluster_id, created_at DESC, id DESC);

      CREATE TABLE activity_events (
        id bigserial PRIMARY KEY,
        organisation_id bigint NOT NULL,
        type text NOT NULL,
        message text NOT NULL,
        actor_identity uuid,
        actor_username text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX activity_events_org_idx ON activity_events (organisation_id, created_at DESC, id DESC);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE activity_events, audit_events, organisation_members, organisations, personal_access_tokens, users`);
  }
}
