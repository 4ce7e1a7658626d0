import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhook subscriptions and the transactional outbox: an event row and one delivery row per matching
 * subscription are written in the transaction of the audit row they come from; the delivery worker
 * claims due deliveries with a lease (FOR UPDATE SKIP LOCKED) and posts them outside any transaction.
 */
export class Webhooks1764000032100 implements MigrationInterface {
  name = 'Webhooks1764000032100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhook_subscriptions (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        organisation_id bigint NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        url varchar(2048) NOT NULL,
        description varchar(255) NOT NULL DEFAULT '',
        event_types text[] NOT NULL,
        enabled boolean NOT NULL DEFAULT true,
        secret_ciphertext text NOT NULL,
        previous_secret_ciphertext text,
        previous_secret_expires_at timestamptz,
        secret_rotated_at timestamptz,
        failing_since timestamptz,
        disabled_reason text,
        created_by text NOT NULL,
        created_at timestamptz NOT NULL,
        modified_at timestamptz NOT NULL
      );
      CREATE INDEX webhook_subscriptions_org ON webhook_subscriptions (organisation_id) WHERE enabled;
      CREATE INDEX webhook_subscriptions_org_all ON webhook_subscriptions (organisation_id, created_at);

      CREATE TABLE webhook_events (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        organisation_id bigint NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
        type varchar(100) NOT NULL,
        source varchar(300) NOT NULL,
        subject varchar(500),
        data jsonb NOT NULL,
        created_at timestamptz NOT NULL
      );
      CREATE INDEX webhook_events_created ON webhook_events (created_at);

      CREATE TABLE webhook_deliveries (
        id bigserial PRIMARY KEY,
        identity uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
        subscription_id bigint NOT NULL REFERENCES webhook_subscriptions(id) ON DELETE CASCADE,
        event_id bigint NOT NULL REFERENCES webhook_events(id) ON DELETE CASCADE,
        status varchar(16) NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz,
        lease_until timestamptz,
        last_attempt_at timestamptz,
        last_response_code integer,
        last_error text,
        delivered_at timestamptz,
        created_at timestamptz NOT NULL
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, id) WHERE status = 'PENDING';
      CREATE INDEX webhook_deliveries_by_subscription ON webhook_deliveries (subscription_id, id DESC);
      CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE webhook_deliveries; DROP TABLE webhook_events; DROP TABLE webhook_subscriptions;`);
  }
}
