import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { SYSTEM_ACTOR } from '../auth/principal';
import { Clock } from '../common/clock';
import { OutboundPolicy, OutboundPolicyError } from '../common/outbound-policy';
import { SecretBox } from '../common/secret-box';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';

/**
 * Gap before retry n (after the n-th failed attempt), in seconds: 5 s, 1 min, 5 min, 30 min, 2 h, 5 h, 10 h.
 * With the first attempt that makes at most 8 attempts over about 18 h (21 h with the largest jitter); after
 * the 8th, or when a retry would fall more than DELIVERY_WINDOW_MS after the delivery was queued, it is FAILED.
 */
export const RETRY_DELAYS_SECONDS = [5, 60, 300, 1800, 7200, 18000, 36000];
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;
/** Deliveries are retried for up to 24 h after the event. */
export const DELIVERY_WINDOW_MS = 24 * 3600_000;
/** A subscription whose deliveries have failed without a success in between for this long is disabled. */
export const DISABLE_AFTER_FAILING_MS = 3 * 24 * 3600_000;
/** Each gap is spread by +-20 % so retries of many deliveries do not arrive together. */
export const RETRY_JITTER = 0.2;

/** Gap after the `attempts`-th failed attempt, with jitter (`random` in [0, 1)). */
export function retryDelayMs(attempts: number, random: number = Math.random()): number {
  const base = RETRY_DELAYS_SECONDS[Math.min(Math.max(attempts, 1), RETRY_DELAYS_SECONDS.length) - 1] * 1000;
  return Math.round(base * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random));
}

interface ClaimedDelivery {
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

export interface AttemptOutcome {
  ok: boolean;
  responseCode: number | null;
  error: string | null;
}

/** The CloudEvents 1.0 structured-mode JSON body of an event. */
export function cloudEventBody(e: { event_identity: string; source: string; type: string; subject: string | null; event_time: Date; data: unknown }): string {
  return JSON.stringify({
    specversion: '1.0',
    id: e.event_identity,
    source: e.source,
    type: e.type,
    ...(e.subject ? { subject: e.subject } : {}),
    time: new Date(e.event_time).toISOString(),
    datacontenttype: 'application/json',
    data: e.data,
  });
}

/**
 * Delivers the outbox. Due deliveries are claimed with a lease in a short statement
 * (FOR UPDATE SKIP LOCKED, so replicas share the work and a delivery is attempted by one replica at a
 * time); the POST runs outside any transaction with WEBHOOK_TIMEOUT_MS; the outcome is recorded in a
 * second short transaction, only while the lease is still ours. At most WEBHOOK_DELIVERY_CONCURRENCY
 * attempts run at once per replica and at most one per subscription, so a slow receiver holds one slot
 * and cannot starve the others, and a healthy subscription receives its events in order.
 */
@Injectable()
export class WebhookDeliveryWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Webhooks');
  private timer: NodeJS.Timeout | null = null;
  private active = 0;
  private readonly perSubscription = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private filling = false;
  private refill = false;
  private stopping = false;
  private looping = false;
  private lastExpiry = 0;

  constructor(
    private readonly config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly cls: ClsService,
    private readonly clock: Clock,
    private readonly secrets: SecretBox,
    private readonly outbound: OutboundPolicy,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.BACKGROUND_JOBS_ENABLED) return;
    this.looping = true;
    this.timer = setInterval(() => this.kick(), this.config.WEBHOOK_POLL_INTERVAL_MS);
    this.timer.unref();
  }

  /** Stops claiming, and waits for the attempts in flight (their outcome is recorded before the pool closes). */
  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    this.looping = false;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.allSettled([...this.inFlight]);
  }

  /** Looks for due deliveries now (the poll timer, and the outbox after a commit, call this). */
  kick(): void {
    this.fill().catch((e) => {
      this.metrics.backgroundErrors.inc({ job: 'webhooks' });
      this.logger.error({ err: e }, 'Webhook delivery pass failed');
    });
  }

  /** Claims deliveries into the free slots and starts them. Returns how many were started. */
  private async fill(): Promise<number> {
    if (this.stopping) return 0;
    if (this.filling) {
      this.refill = true;
      return 0;
    }
    this.filling = true;
    let started = 0;
    try {
      await this.expireStale();
      do {
        this.refill = false;
        const free = this.config.WEBHOOK_DELIVERY_CONCURRENCY - this.active;
        if (free <= 0) break;
        const saturated = [...this.perSubscription.keys()];
        const rows = await this.claim(free, saturated);
        for (const row of rows) this.start(row);
        started += rows.length;
        if (rows.length === free) this.refill = true; // there may be more
      } while (this.refill && !this.stopping);
    } finally {
      this.filling = false;
    }
    return started;
  }

  private start(row: ClaimedDelivery): void {
    this.active++;
    this.perSubscription.set(row.subscription_id, (this.perSubscription.get(row.subscription_id) ?? 0) + 1);
    const p: Promise<void> = this.deliver(row)
      .catch((e) => {
        this.metrics.backgroundErrors.inc({ job: 'webhooks' });
        this.logger.error({ err: e, delivery: row.identity }, 'Webhook delivery could not be recorded');
      })
      .finally(() => {
        this.active--;
        const n = (this.perSubscription.get(row.subscription_id) ?? 1) - 1;
        if (n <= 0) this.perSubscription.delete(row.subscription_id);
        else this.perSubscription.set(row.subscription_id, n);
        this.inFlight.delete(p);
        if (this.looping) this.kick();
      });
    this.inFlight.add(p);
  }

  /**
   * Delivers everything that is due now and waits until nothing is in flight (tests and benchmarks drive
   * the worker with this when the background loop is off). Returns the number of attempts made.
   */
  async drain(): Promise<number> {
    let attempts = 0;
    for (;;) {
      // A claim made while attempts were in flight may have left out their subscriptions: only a claim
      // made with nothing in flight that finds nothing means the outbox is drained.
      const idleBefore = this.inFlight.size === 0;
      const started = await this.fill();
      attempts += started;
      if (started === 0 && this.inFlight.size === 0) {
        if (idleBefore) return attempts;
        continue;
      }
      if (started === 0 || this.active >= this.config.WEBHOOK_DELIVERY_CONCURRENCY) await Promise.race(this.inFlight);
    }
  }

  /**
   * Deliveries still PENDING after the delivery window (a subscription disabled meanwhile is never claimed)
   * become FAILED, at most once a minute, so no event waits forever and retention can remove it.
   */
  private async expireStale(): Promise<void> {
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

  private async claim(limit: number, saturated: string[]): Promise<ClaimedDelivery[]> {
    const now = this.clock.now();
    const leaseUntil = new Date(now.getTime() + this.config.WEBHOOK_TIMEOUT_MS + 30_000);
    // Oldest due deliveries first, at most one per subscription (so a subscription's events go out in
    // order while its receiver keeps up), none of a subscription this replica is already delivering to.
    const [rows] = (await this.dataSource.query(
      `WITH due AS (
         SELECT dd.id, dd.subscription_id, dd.next_attempt_at
           FROM webhook_deliveries dd JOIN webhook_subscriptions ss ON ss.id = dd.subscription_id
          WHERE dd.status = 'PENDING' AND dd.next_attempt_at <= $1 AND (dd.lease_until IS NULL OR dd.lease_until <= $1)
            AND ss.enabled AND NOT (dd.subscription_id = ANY($4::bigint[]))
          ORDER BY dd.next_attempt_at, dd.id
          LIMIT 1000
       ), firsts AS (
         SELECT id FROM (
           SELECT id, next_attempt_at, row_number() OVER (PARTITION BY subscription_id ORDER BY next_attempt_at, id) AS n FROM due
         ) ranked WHERE n = 1 ORDER BY next_attempt_at, id LIMIT $3
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
                 s.identity AS subscription_identity, s.organisation_id, o.slug AS org_slug, s.url, s.secret_ciphertext,
                 s.previous_secret_ciphertext, s.previous_secret_expires_at, e.identity AS event_identity, e.type, e.source,
                 e.subject, e.data, e.created_at AS event_time`,
      [now, leaseUntil, limit, saturated],
    )) as [ClaimedDelivery[], number];
    return rows;
  }

  /** The `webhook-signature` header: one `v1,<base64>` per valid secret (the previous one during rotation). */
  signature(row: Pick<ClaimedDelivery, 'subscription_identity' | 'secret_ciphertext' | 'previous_secret_ciphertext' | 'previous_secret_expires_at'>, msgId: string, timestamp: Date, body: string): string {
    const keys = [this.secrets.open(row.secret_ciphertext, row.subscription_identity)];
    if (row.previous_secret_ciphertext && row.previous_secret_expires_at && row.previous_secret_expires_at.getTime() > this.clock.now().getTime()) {
      keys.push(this.secrets.open(row.previous_secret_ciphertext, row.subscription_identity));
    }
    return keys.map((k) => new Webhook(k).sign(msgId, timestamp, body)).join(' ');
  }

  private async attempt(row: ClaimedDelivery): Promise<AttemptOutcome> {
    const body = cloudEventBody(row);
    // The timestamp is the real time of sending: receivers compare it with their own clock.
    const timestamp = new Date();
    let signature: string;
    try {
      signature = this.signature(row, row.event_identity, timestamp, body);
    } catch {
      return { ok: false, responseCode: null, error: 'The signing secret could not be decrypted; rotate the secret' };
    }
    try {
      const res = await this.outbound.request(row.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/cloudevents+json; charset=utf-8',
          'webhook-id': row.event_identity,
          'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
          'webhook-signature': signature,
        },
        body,
        timeoutMs: this.config.WEBHOOK_TIMEOUT_MS,
        maxBytes: 64 * 1024,
      });
      if (res.status >= 200 && res.status < 300) return { ok: true, responseCode: res.status, error: null };
      return { ok: false, responseCode: res.status, error: `The receiver answered HTTP ${res.status}` };
    } catch (e) {
      if (e instanceof OutboundPolicyError) {
        const refused = ['ADDRESS', 'SCHEME', 'USERINFO', 'SYNTAX'].includes(e.code);
        return { ok: false, responseCode: null, error: refused ? `Refused by the outbound policy: the URL ${e.message}` : `The receiver could not be reached: ${e.message}` };
      }
      return { ok: false, responseCode: null, error: `The receiver could not be reached: ${(e as Error).message}` };
    }
  }

  private async deliver(row: ClaimedDelivery): Promise<void> {
    const outcome = await this.attempt(row);
    await this.record(row, outcome);
  }

  private async record(row: ClaimedDelivery, outcome: AttemptOutcome): Promise<void> {
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
