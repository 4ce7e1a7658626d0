import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { InjectBackgroundDataSource } from '../database/background-pool';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { DELIVERY_WINDOW_MS } from './webhook-retry-policy';

/** Key of the transaction-scoped advisory lock under which replicas take turns claiming deliveries. */
const CLAIM_LOCK = 724004;

/** A delivery this replica holds the lease on (until `lease_until`), with what sending it needs. */
export interface ClaimedDelivery {
  id: string;
  identity: string;
  attempts: number;
  created_at: Date;
  lease_until: Date;
  subscription_id: string;
  subscription_identity: string;
  organisation_id: string;
  org_slug: string;
  url: string;
  /** The whole URL, sealed, when it carries credentials (`url` is then redacted). */
  url_ciphertext: string | null;
  secret_ciphertext: string;
  previous_secret_ciphertext: string | null;
  previous_secret_expires_at: Date | null;
  event_identity: string;
  type: string;
  source: string;
  subject: string | null;
  data: unknown;
  event_time: Date;
}

/**
 * The claim side of the outbox: due deliveries are leased in one short statement (FOR UPDATE SKIP LOCKED, so
 * a delivery is attempted by one replica at a time), fairly between subscriptions and organisations (see
 * `claim`), and deliveries left PENDING past the delivery window are given up.
 */
@Injectable()
export class WebhookDeliveryClaims {
  private lastExpiry = 0;

  constructor(
    private readonly config: AppConfig,
    // A loop's own SQL runs on the background pool (background-pool.ts).
    @InjectBackgroundDataSource() private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * Deliveries still PENDING after the delivery window (a subscription disabled meanwhile is never claimed)
   * become FAILED, at most once a minute, so no event waits forever and retention can remove it.
   */
  async expireStale(): Promise<void> {
    const now = this.clock.now();
    if (now.getTime() - this.lastExpiry < 60_000 && now.getTime() >= this.lastExpiry) return;
    this.lastExpiry = now.getTime();
    const [, n] = (await this.dataSource.query(
      `UPDATE webhook_deliveries SET status = 'FAILED', next_attempt_at = NULL, lease_until = NULL,
              last_error = COALESCE(last_error || '; ', '') || 'not delivered within 24 hours'
        WHERE status = 'PENDING' AND created_at < $1 AND (lease_until IS NULL OR lease_until <= $2)`,
      [new Date(now.getTime() - DELIVERY_WINDOW_MS), now],
    )) as [unknown, number];
    if (n) this.metrics.webhookDeliveries.inc({ outcome: 'failed' }, n);
  }

  /**
   * Up to `limit` due deliveries, none of the subscriptions in `saturated`, served fairly:
   * - one attempt in flight per subscription over all replicas (its oldest due delivery: events go out in order
   *   while its receiver keeps up), so a slow receiver holds one slot;
   * - at most WEBHOOK_DELIVERY_PER_ORGANISATION attempts in flight per organisation over all replicas (counted
   *   from the leases in the database), so one organisation's slow receivers cannot fill every slot;
   * - organisations round-robin: each organisation's oldest due delivery first, the organisation with the fewest
   *   attempts in flight first, then each one's second, and so on. Each subscription's head is an index probe, so
   *   an organisation's first delivery is found however large another organisation's backlog is.
   * Claims of all replicas take turns (a transaction-scoped advisory lock, held for the one short statement), so
   * the per-organisation count a claim reads includes every lease taken before it.
   */
  async claim(limit: number, saturated: string[]): Promise<ClaimedDelivery[]> {
    const now = this.clock.now();
    const leaseUntil = new Date(now.getTime() + this.config.WEBHOOK_TIMEOUT_MS + 30_000);
    return this.dataSource.transaction(async (em) => {
      await em.query(`SELECT pg_advisory_xact_lock(${CLAIM_LOCK})`);
      const [rows] = (await em.query(
        `WITH leased AS (
           SELECT l.subscription_id FROM webhook_deliveries l
            WHERE l.status = 'PENDING' AND l.lease_until IS NOT NULL AND l.lease_until > $1
         ), busy AS (
           SELECT bs.organisation_id, count(*)::int AS n
             FROM leased JOIN webhook_subscriptions bs ON bs.id = leased.subscription_id GROUP BY bs.organisation_id
         ), heads AS (
           SELECT ss.organisation_id, h.id, h.next_attempt_at
             FROM webhook_subscriptions ss
             CROSS JOIN LATERAL (
               SELECT dd.id, dd.next_attempt_at FROM webhook_deliveries dd
                WHERE dd.subscription_id = ss.id AND dd.status = 'PENDING' AND dd.next_attempt_at <= $1
                ORDER BY dd.next_attempt_at, dd.id LIMIT 1
             ) h
            WHERE ss.enabled AND NOT (ss.id = ANY($4::bigint[]))
              AND NOT EXISTS (SELECT 1 FROM leased WHERE leased.subscription_id = ss.id)
         ), turns AS (
           SELECT heads.id, heads.next_attempt_at,
                  COALESCE(busy.n, 0) + row_number() OVER (PARTITION BY heads.organisation_id ORDER BY heads.next_attempt_at, heads.id) AS turn
             FROM heads LEFT JOIN busy ON busy.organisation_id = heads.organisation_id
         ), firsts AS (
           SELECT id FROM turns WHERE turn <= $5 ORDER BY turn, next_attempt_at, id LIMIT $3
         ), claimed AS MATERIALIZED (
           SELECT id FROM webhook_deliveries
            WHERE id IN (SELECT id FROM firsts) AND status = 'PENDING' AND (lease_until IS NULL OR lease_until <= $1)
            FOR UPDATE SKIP LOCKED
         )
         UPDATE webhook_deliveries d
            SET lease_until = $2, attempts = d.attempts + 1, last_attempt_at = $1
           FROM claimed c, webhook_subscriptions s, webhook_events e, organisations o
          WHERE d.id = c.id AND s.id = d.subscription_id AND e.id = d.event_id AND o.id = s.organisation_id
         RETURNING d.id, d.identity, d.attempts, d.created_at, d.lease_until, s.id AS subscription_id,
                   s.identity AS subscription_identity, s.organisation_id, o.slug AS org_slug, s.url, s.url_ciphertext, s.secret_ciphertext,
                   s.previous_secret_ciphertext, s.previous_secret_expires_at, e.identity AS event_identity, e.type, e.source,
                   e.subject, e.data, e.created_at AS event_time`,
        [now, leaseUntil, limit, saturated, this.config.WEBHOOK_DELIVERY_PER_ORGANISATION],
      )) as [ClaimedDelivery[], number];
      return rows;
    });
  }
}
