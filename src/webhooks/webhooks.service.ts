import { TransactionHost } from '@nestjs-cls/transactional';
import { isUuid } from '../common/uuid';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable, Logger, NotFoundException, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { randomBytes } from 'crypto';
import { newIdentity } from '../common/pinned-identities';
import { auditDiff } from '../audit/audit-diff';
import { AuditRecorder } from '../audit/audit-recorder';
import { Clock } from '../common/clock';
import { OutboundPolicy } from '../common/outbound-policy';
import { orderBySql, Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import { SecretBox } from '../common/secret-box';
import { keepStoredSecret, REDACTED, SECRET_PLACEHOLDER } from '../common/secret-fields';
import { redactUrlSecrets, urlHasSecrets } from '../common/secret-text';
import { ValidationFailedException } from '../common/errors';
import { TooManyRequestsException } from '../auth/request-rate-limits';
import type { OrganisationEntity } from '../identity/organisation.entity';
import {
  CreateWebhookRequest,
  MAX_PINGS_PER_SUBSCRIPTION,
  MAX_WEBHOOKS_PER_ORGANISATION,
  PING_WINDOW_SECONDS,
  UpdateWebhookRequest,
  WebhookDeliveryResponse,
  WebhookResponse,
  WEBHOOK_URL_SECRET,
  WebhookWithSecretResponse,
} from './dto/webhook.dto';
import { WebhookOutbox } from './webhook-outbox';

/** The previous signing secret keeps signing (beside the new one) this long after a rotation. */
export const SECRET_OVERLAP_MS = 24 * 3600_000;

interface SubscriptionRow {
  id: string;
  identity: string;
  organisation_id: string;
  /** The URL, or with its credentials redacted when it has any (then the whole URL is in url_ciphertext). */
  url: string;
  url_ciphertext: string | null;
  description: string;
  event_types: string[];
  enabled: boolean;
  secret_ciphertext: string;
  previous_secret_expires_at: Date | null;
  secret_rotated_at: Date | null;
  failing_since: Date | null;
  disabled_reason: string | null;
  created_by: string;
  created_at: Date;
  modified_at: Date;
}

interface DeliveryRow {
  id: string;
  identity: string;
  event_id: string;
  event_identity: string;
  event_type: string;
  status: string;
  attempts: number;
  last_response_code: number | null;
  last_error: string | null;
  last_attempt_at: Date | null;
  next_attempt_at: Date | null;
  delivered_at: Date | null;
  created_at: Date;
}

const DELIVERY_SORTABLE: Record<string, string> = { createdAt: 'd.created_at', status: 'd.status', eventType: 'e.type', attempts: 'd.attempts' };
const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

/** A fresh signing secret in the Standard Webhooks format: `whsec_` + base64 of 32 random bytes. */
export const newSigningSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/** SecretBox context of a subscription's URL (when it carries credentials). */
export const webhookUrlContext = (identity: string) => `webhook-url:${identity}`;

/** Webhook subscriptions of an organisation (ADMIN; audited) and their deliveries. */
@Injectable()
export class WebhooksService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Webhooks');

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
    private readonly secrets: SecretBox,
    private readonly outbound: OutboundPolicy,
    private readonly outbox: WebhookOutbox,
    private readonly dataSource: DataSource,
  ) {}

  /** How a URL is stored: in clear when it has no credentials, else redacted with the whole URL sealed. */
  private storedUrl(identity: string, url: string): { url: string; ciphertext: string | null } {
    return urlHasSecrets(url) ? { url: redactUrlSecrets(url, REDACTED), ciphertext: this.secrets.seal(url, webhookUrlContext(identity)) } : { url, ciphertext: null };
  }

  /** The whole URL of a subscription. */
  private fullUrl(r: Pick<SubscriptionRow, 'identity' | 'url' | 'url_ciphertext'>): string {
    return r.url_ciphertext ? this.secrets.open(r.url_ciphertext, webhookUrlContext(r.identity)) : r.url;
  }

  /**
   * Subscriptions stored before URL credentials were sealed hold them in `url`: they are sealed once at start
   * (idempotent: a row whose `url` changed meanwhile is left to the next start).
   */
  async onApplicationBootstrap(): Promise<void> {
    const rows: { id: string; identity: string; url: string }[] = await this.dataSource.query(
      `SELECT id, identity, url FROM webhook_subscriptions WHERE url_ciphertext IS NULL AND url ~ '[?#@]'`,
    );
    let sealed = 0;
    for (const row of rows) {
      if (!urlHasSecrets(row.url)) continue;
      const stored = this.storedUrl(row.identity, row.url);
      const [, n] = (await this.dataSource.query(
        `UPDATE webhook_subscriptions SET url = $3, url_ciphertext = $4 WHERE id = $1 AND url = $2 AND url_ciphertext IS NULL`,
        [row.id, row.url, stored.url, stored.ciphertext],
      )) as [unknown, number];
      sealed += n;
    }
    if (sealed) this.logger.log(`Sealed the URL credentials of ${sealed} webhook subscriptions stored in clear`);
  }

  async list(org: OrganisationEntity): Promise<WebhookResponse[]> {
    const rows: SubscriptionRow[] = await this.txHost.tx.query(
      `SELECT * FROM webhook_subscriptions WHERE organisation_id = $1 ORDER BY created_at, id`,
      [org.id],
    );
    return rows.map((r) => this.toResponse(r));
  }

  async get(org: OrganisationEntity, identity: string): Promise<WebhookResponse> {
    return this.toResponse(await this.find(org, identity));
  }

  /**
   * `checkAddress: false` (the demo organisation's disabled webhook, src/demo) checks the URL's form only, not where its
   * host resolves; every delivery checks the address anyway (OutboundPolicy.request), and a disabled webhook sends nothing.
   */
  async create(
    org: OrganisationEntity,
    req: CreateWebhookRequest,
    createdBy: string,
    options: { checkAddress?: boolean } = {},
  ): Promise<WebhookWithSecretResponse> {
    if (options.checkAddress === false && req.enabled === false) this.outbound.assertWellFormed('url', req.url);
    else await this.outbound.assertAllowedWhenSaved('url', req.url);
    // Serialises creates of one organisation so the limit holds under concurrency.
    await this.txHost.tx.query(`SELECT id FROM organisations WHERE id = $1 FOR UPDATE`, [org.id]);
    const [{ n }] = await this.txHost.tx.query(`SELECT count(*)::int AS n FROM webhook_subscriptions WHERE organisation_id = $1`, [org.id]);
    if (n >= MAX_WEBHOOKS_PER_ORGANISATION) {
      throw new ConflictException(`Organisation '${org.slug}' already has ${MAX_WEBHOOKS_PER_ORGANISATION} webhooks; delete one first.`);
    }
    const now = this.clock.now();
    const secret = newSigningSecret();
    const identity = newIdentity('webhook_subscriptions'); // known before the insert: the sealed secret and URL are bound to it
    const url = this.storedUrl(identity, req.url);
    const [row]: SubscriptionRow[] = await this.txHost.tx.query(
      `INSERT INTO webhook_subscriptions (identity, organisation_id, url, url_ciphertext, description, event_types, enabled, secret_ciphertext, created_by, created_at, modified_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) RETURNING *`,
      [identity, org.id, url.url, url.ciphertext, req.description ?? '', req.eventTypes, req.enabled ?? true, this.secrets.seal(secret, identity), createdBy, now],
    );
    this.record('WEBHOOK_CREATED', org, row, auditDiff(null, this.audited(row)));
    return { ...this.toResponse(row), secret };
  }

  async update(org: OrganisationEntity, identity: string, req: UpdateWebhookRequest): Promise<WebhookResponse> {
    const before = await this.find(org, identity, true);
    const beforeUrl = this.fullUrl(before);
    let url = beforeUrl;
    if (req.url !== undefined) {
      // The URL as shown redacted, sent back, keeps the stored one.
      const kept = keepStoredSecret(WEBHOOK_URL_SECRET, 'url', req.url, beforeUrl);
      if (kept.missing.length) {
        throw ValidationFailedException.forField('url', `url holds ${SECRET_PLACEHOLDER} but is not the stored URL as shown redacted; send the whole URL`);
      }
      url = kept.value;
      if (url !== beforeUrl) await this.outbound.assertAllowedWhenSaved('url', url);
    }
    const next = {
      url,
      description: req.description ?? before.description,
      eventTypes: req.eventTypes ?? before.event_types,
      enabled: req.enabled ?? before.enabled,
    };
    const details = auditDiff(this.audited(before), next);
    if (Object.keys(details).length === 0) {
      this.record('WEBHOOK_UPDATED', org, before, {}); // a no-op update leaves no audit row
      return this.toResponse(before);
    }
    const stored = next.url === beforeUrl ? { url: before.url, ciphertext: before.url_ciphertext } : this.storedUrl(before.identity, next.url);
    const [[row]]: [SubscriptionRow[], number] = await this.txHost.tx.query(
      `UPDATE webhook_subscriptions
          SET url = $2, url_ciphertext = $7, description = $3, event_types = $4, enabled = $5,
              disabled_reason = CASE WHEN $5 THEN NULL ELSE disabled_reason END,
              failing_since = CASE WHEN $5 AND NOT enabled THEN NULL ELSE failing_since END,
              modified_at = $6
        WHERE id = $1 RETURNING *`,
      [before.id, stored.url, next.description, next.eventTypes, next.enabled, this.clock.now(), stored.ciphertext],
    );
    this.record('WEBHOOK_UPDATED', org, row, details);
    return this.toResponse(row);
  }

  async remove(org: OrganisationEntity, identity: string): Promise<void> {
    const row = await this.find(org, identity, true);
    await this.txHost.tx.query(`DELETE FROM webhook_subscriptions WHERE id = $1`, [row.id]);
    this.record('WEBHOOK_DELETED', org, row, auditDiff(this.audited(row), null));
  }

  /** A new secret; the previous one keeps signing beside it for SECRET_OVERLAP_MS. */
  async rotateSecret(org: OrganisationEntity, identity: string): Promise<WebhookWithSecretResponse> {
    const before = await this.find(org, identity, true);
    const now = this.clock.now();
    const secret = newSigningSecret();
    const [[row]]: [SubscriptionRow[], number] = await this.txHost.tx.query(
      `UPDATE webhook_subscriptions
          SET previous_secret_ciphertext = secret_ciphertext, previous_secret_expires_at = $3,
              secret_ciphertext = $2, secret_rotated_at = $4, modified_at = $4
        WHERE id = $1 RETURNING *`,
      [before.id, this.secrets.seal(secret, before.identity), new Date(now.getTime() + SECRET_OVERLAP_MS), now],
    );
    this.record('WEBHOOK_SECRET_ROTATED', org, row, {
      secret: { old: '[redacted]', new: '[redacted]' },
      previousSecretExpiresAt: { old: iso(before.previous_secret_expires_at), new: iso(row.previous_secret_expires_at) },
    });
    return { ...this.toResponse(row), secret };
  }

  /**
   * Queues a WEBHOOK_PING event for this subscription only; audited WEBHOOK_PINGED (it makes the service call the
   * receiver). At most MAX_PINGS_PER_SUBSCRIPTION per PING_WINDOW_SECONDS per subscription, counted from the ping
   * events in the database (so over all replicas); pings of one subscription take turns on its row lock.
   */
  async ping(org: OrganisationEntity, identity: string, actor: string): Promise<WebhookDeliveryResponse> {
    const row = await this.find(org, identity, true);
    if (!row.enabled) throw new ConflictException(`Webhook '${identity}' is disabled; enable it before sending a ping.`);
    const now = this.clock.now();
    const subject = `webhooks/${row.identity}`;
    const recent: { created_at: Date }[] = await this.txHost.tx.query(
      `SELECT created_at FROM webhook_events
        WHERE organisation_id = $1 AND type = 'WEBHOOK_PING' AND subject = $2 AND created_at > $3 AND created_at <= $4
        ORDER BY created_at`,
      [org.id, subject, new Date(now.getTime() - PING_WINDOW_SECONDS * 1000), now],
    );
    if (recent.length >= MAX_PINGS_PER_SUBSCRIPTION) {
      const retryAfterMs = new Date(recent[recent.length - MAX_PINGS_PER_SUBSCRIPTION].created_at).getTime() + PING_WINDOW_SECONDS * 1000 - now.getTime();
      throw new TooManyRequestsException(
        `Webhook '${identity}' was pinged ${MAX_PINGS_PER_SUBSCRIPTION} times in the last ${PING_WINDOW_SECONDS} s, the most allowed; ` +
          `retry in ${Math.max(1, Math.ceil(retryAfterMs / 1000))} s.`,
        retryAfterMs,
      );
    }
    await this.outbox.enqueue(
      {
        organisationId: org.id,
        type: 'WEBHOOK_PING',
        subject,
        data: { organisation: { slug: org.slug }, actor: { identity: null, username: actor }, message: `${actor} sent a ping to webhook ${row.url}` },
      },
      Number(row.id),
    );
    const [delivery] = await this.deliveryRows(`d.subscription_id = $1`, [row.id], 'd.id DESC', 1);
    this.record('WEBHOOK_PINGED', org, row, { delivery: { old: null, new: delivery.identity }, eventId: { old: null, new: delivery.event_identity } });
    return this.toDelivery(delivery);
  }

  async deliveries(org: OrganisationEntity, identity: string, query: PageQueryDto): Promise<Page<WebhookDeliveryResponse>> {
    const row = await this.find(org, identity);
    const req = toPageRequest(query, DELIVERY_SORTABLE, [{ property: 'createdAt', direction: 'DESC' }]);
    const [{ n }] = await this.txHost.tx.query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE subscription_id = $1`, [row.id]);
    const rows = await this.deliveryRows(`d.subscription_id = $1`, [row.id], orderBySql(req, DELIVERY_SORTABLE, 'd.id'), req.size, req.offset);
    return toPage(rows.map((d) => this.toDelivery(d)), n, req, 'A');
  }

  /** A new delivery of the same event (same `webhook-id`) to this subscription, due now. */
  async redeliver(org: OrganisationEntity, identity: string, deliveryId: string): Promise<WebhookDeliveryResponse> {
    const row = await this.find(org, identity);
    const [delivery] = isUuid(deliveryId) ? await this.deliveryRows(`d.subscription_id = $1 AND d.identity = $2`, [row.id, deliveryId], 'd.id', 1) : [];
    if (!delivery) throw new NotFoundException(`Delivery '${deliveryId}' was not found for webhook '${identity}'.`);
    if (!row.enabled) throw new ConflictException(`Webhook '${identity}' is disabled; enable it before redelivering.`);
    if (delivery.status === 'PENDING') throw new ConflictException(`Delivery '${deliveryId}' is still pending; it will be attempted again by itself.`);
    const now = this.clock.now();
    const [created] = await this.txHost.tx.query(
      `INSERT INTO webhook_deliveries (subscription_id, event_id, status, next_attempt_at, created_at)
       VALUES ($1, $2, 'PENDING', $3, $3) RETURNING identity`,
      [row.id, delivery.event_id, now],
    );
    this.record('WEBHOOK_DELIVERY_REDELIVERED', org, row, {
      delivery: { old: delivery.identity, new: created.identity },
      eventType: { old: null, new: delivery.event_type },
    });
    const [fresh] = await this.deliveryRows(`d.identity = $1`, [created.identity], 'd.id', 1);
    return this.toDelivery(fresh);
  }

  private async deliveryRows(where: string, params: unknown[], orderBy: string, limit: number, offset = 0): Promise<DeliveryRow[]> {
    return this.txHost.tx.query(
      `SELECT d.*, e.identity AS event_identity, e.type AS event_type
         FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
        WHERE ${where} ORDER BY ${orderBy} LIMIT ${Number(limit)} OFFSET ${Number(offset)}`,
      params,
    );
  }

  private async find(org: OrganisationEntity, identity: string, lock = false): Promise<SubscriptionRow> {
    const [row]: SubscriptionRow[] = isUuid(identity)
      ? await this.txHost.tx.query(
          `SELECT * FROM webhook_subscriptions WHERE identity = $1 AND organisation_id = $2 ${lock ? 'FOR UPDATE' : ''}`,
          [identity, org.id],
        )
      : [];
    if (!row) throw new NotFoundException(`Webhook '${identity}' was not found in organisation '${org.slug}'.`);
    return row;
  }

  /** What the audit compares (the audit service redacts the URL's credentials, as its declaration says). */
  private audited(r: SubscriptionRow): Record<string, unknown> {
    return { url: this.fullUrl(r), description: r.description, eventTypes: r.event_types, enabled: r.enabled };
  }

  private record(type: string, org: OrganisationEntity, row: SubscriptionRow, details: ReturnType<typeof auditDiff>): void {
    this.audit.record({
      type,
      organisation: { id: org.id, slug: org.slug },
      referencedEntityIdentity: row.identity,
      subject: row.url, // stored redacted when it has credentials
      details,
    });
  }

  private toResponse(r: SubscriptionRow): WebhookResponse {
    return {
      identity: r.identity,
      // Whole; SecretResponseInterceptor redacts its credentials for callers below ADMIN and READ_ONLY tokens.
      url: this.fullUrl(r),
      description: r.description,
      eventTypes: r.event_types,
      enabled: r.enabled,
      disabledReason: r.disabled_reason,
      failingSince: iso(r.failing_since),
      secretRotatedAt: iso(r.secret_rotated_at),
      previousSecretExpiresAt: iso(r.previous_secret_expires_at),
      createdBy: r.created_by,
      createdAt: iso(r.created_at)!,
      modifiedAt: iso(r.modified_at)!,
    };
  }

  private toDelivery(d: DeliveryRow): WebhookDeliveryResponse {
    return {
      identity: d.identity,
      eventId: d.event_identity,
      eventType: d.event_type,
      status: d.status,
      attempts: d.attempts,
      lastResponseCode: d.last_response_code,
      lastError: d.last_error,
      lastAttemptAt: iso(d.last_attempt_at),
      nextAttemptAt: iso(d.next_attempt_at),
      deliveredAt: iso(d.delivered_at),
      createdAt: iso(d.created_at)!,
    };
  }
}
