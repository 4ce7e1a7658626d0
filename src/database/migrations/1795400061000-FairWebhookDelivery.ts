import { MigrationInterface, QueryRunner } from 'typeorm';
import { buildIndexConcurrently } from '../concurrent-index';

/**
 * Indexes for fair webhook delivery (src/webhooks/webhook-delivery-claims.ts):
 * - `webhook_deliveries_pending_head`: each subscription's oldest due delivery is one index probe, so every
 *   organisation's first delivery is found however large another organisation's backlog is;
 * - `webhook_deliveries_leased`: the deliveries in flight (leased), counted per organisation and subscription
 *   at every claim; a recorded attempt clears its lease, so this index stays small.
 * Built CONCURRENTLY (no transaction), so deliveries go on while a large table is indexed.
 */
export class FairWebhookDelivery1795400061000 implements MigrationInterface {
  name = 'FairWebhookDelivery1795400061000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await buildIndexConcurrently(q, 'webhook_deliveries_pending_head', `webhook_deliveries (subscription_id, next_attempt_at, id) WHERE status = 'PENDING'`);
    await buildIndexConcurrently(
      q,
      'webhook_deliveries_leased',
      `webhook_deliveries (lease_until, subscription_id) WHERE status = 'PENDING' AND lease_until IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS webhook_deliveries_leased`);
    await q.query(`DROP INDEX IF EXISTS webhook_deliveries_pending_head`);
  }
}
