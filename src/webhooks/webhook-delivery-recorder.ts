import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { AuditService } from '../audit/audit.service';
import { SYSTEM_ACTOR } from '../identity/principal';
import { Clock } from '../common/clock';
import { MetricsService } from '../metrics/metrics.service';
import type { ClaimedDelivery } from './webhook-delivery-claims';
import { DELIVERY_WINDOW_MS, DISABLE_AFTER_FAILING_MS, MAX_ATTEMPTS, retryDelayMs } from './webhook-retry-policy';
import type { AttemptOutcome } from './webhook-sender';

/**
 * Records an attempt in one short transaction, only while the lease is still this claim's: DELIVERED, or the
 * next retry (or FAILED when the retries are used up); a subscription failing for DISABLE_AFTER_FAILING_MS is
 * switched off.
 */
@Injectable()
export class WebhookDeliveryRecorder {
  private readonly logger = new Logger('Webhooks');

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly cls: ClsService,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
  ) {}

  async record(row: ClaimedDelivery, outcome: AttemptOutcome): Promise<void> {
    await this.cls.run(() =>
      this.txHost.withTransaction(async () => {
        const tx = this.txHost.tx;
        const now = this.clock.now();
        if (outcome.ok) {
          const [, n] = (await tx.query(
            `UPDATE webhook_deliveries SET status = 'DELIVERED', delivered_at = $2, last_response_code = $3, last_error = NULL, lease_until = NULL,
                    next_attempt_at = NULL
              WHERE id = $1 AND status = 'PENDING' AND lease_until = $4`,
            [row.id, now, outcome.responseCode, row.lease_until],
          )) as [unknown, number];
          if (!n) return;
          await tx.query(`UPDATE webhook_subscriptions SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL`, [row.subscription_id]);
          this.metrics.webhookDeliveries.inc({ outcome: 'delivered' });
          return;
        }
        const next = new Date(now.getTime() + retryDelayMs(row.attempts));
        const giveUp = row.attempts >= MAX_ATTEMPTS || next.getTime() > new Date(row.created_at).getTime() + DELIVERY_WINDOW_MS;
        const [, n] = (await tx.query(
          `UPDATE webhook_deliveries SET status = $2, next_attempt_at = $3, last_response_code = $4, last_error = $5, lease_until = NULL
            WHERE id = $1 AND status = 'PENDING' AND lease_until = $6`,
          [row.id, giveUp ? 'FAILED' : 'PENDING', giveUp ? null : next, outcome.responseCode, outcome.error, row.lease_until],
        )) as [unknown, number];
        if (!n) return;
        this.metrics.webhookDeliveries.inc({ outcome: giveUp ? 'failed' : 'retrying' });
        this.logger.warn(
          { delivery: row.identity, webhook: row.subscription_identity, organisation: row.org_slug, attempts: row.attempts, error: outcome.error, giveUp },
          giveUp ? 'Webhook delivery failed for good' : 'Webhook delivery failed; will retry',
        );
        const [subs] = (await tx.query(
          `UPDATE webhook_subscriptions SET failing_since = COALESCE(failing_since, $2) WHERE id = $1 RETURNING failing_since, enabled`,
          [row.subscription_id, now],
        )) as [{ failing_since: Date; enabled: boolean }[], number];
        const sub = subs[0];
        if (sub?.enabled && now.getTime() - new Date(sub.failing_since).getTime() >= DISABLE_AFTER_FAILING_MS) await this.disable(row, now, outcome);
      }),
    );
  }

  /** Three days of failures without a success: the subscription is switched off (audited, in the activity feed). */
  private async disable(row: ClaimedDelivery, now: Date, outcome: AttemptOutcome): Promise<void> {
    const reason = `Deliveries failed for 3 days (last: ${outcome.error ?? 'unknown error'}); enable the webhook again once the receiver works.`;
    await this.txHost.tx.query(
      `UPDATE webhook_subscriptions SET enabled = false, disabled_reason = $2, modified_at = $3 WHERE id = $1`,
      [row.subscription_id, reason, now],
    );
    await this.audit.write(
      {
        type: 'WEBHOOK_DISABLED',
        organisation: { id: Number(row.organisation_id), slug: row.org_slug },
        referencedEntityIdentity: row.subscription_identity,
        details: { enabled: { old: true, new: false }, disabledReason: { old: null, new: reason } },
        message: `system disabled webhook ${row.url}: deliveries failed for 3 days`,
      },
      SYSTEM_ACTOR,
    );
  }
}
