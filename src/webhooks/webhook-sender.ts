import { Injectable } from '@nestjs/common';
import { Webhook } from 'standardwebhooks';
import { Clock } from '../common/clock';
import { OutboundPolicy, OutboundPolicyError } from '../common/outbound-policy';
import { SecretBox } from '../common/secret-box';
import { AppConfig } from '../config/app-config';
import type { ClaimedDelivery } from './webhook-delivery-claims';
import { webhookUrlContext } from './webhooks.service';

/** What one attempt came to. */
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
 * One attempt at a delivery: the CloudEvents body signed per Standard Webhooks and POSTed through the outbound
 * policy with WEBHOOK_TIMEOUT_MS, outside any transaction. Answers the outcome; never throws for the receiver's sake.
 */
@Injectable()
export class WebhookSender {
  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly secrets: SecretBox,
    private readonly outbound: OutboundPolicy,
  ) {}

  /** The `webhook-signature` header: one `v1,<base64>` per valid secret (the previous one during rotation). */
  signature(row: Pick<ClaimedDelivery, 'subscription_identity' | 'secret_ciphertext' | 'previous_secret_ciphertext' | 'previous_secret_expires_at'>, msgId: string, timestamp: Date, body: string): string {
    const keys = [this.secrets.open(row.secret_ciphertext, row.subscription_identity)];
    if (row.previous_secret_ciphertext && row.previous_secret_expires_at && row.previous_secret_expires_at.getTime() > this.clock.now().getTime()) {
      keys.push(this.secrets.open(row.previous_secret_ciphertext, row.subscription_identity));
    }
    return keys.map((k) => new Webhook(k).sign(msgId, timestamp, body)).join(' ');
  }

  async attempt(row: ClaimedDelivery): Promise<AttemptOutcome> {
    const body = cloudEventBody(row);
    // The timestamp is the real time of sending: receivers compare it with their own clock.
    const timestamp = new Date();
    let signature: string;
    try {
      signature = this.signature(row, row.event_identity, timestamp, body);
    } catch {
      return { ok: false, responseCode: null, error: 'The signing secret could not be decrypted; rotate the secret' };
    }
    let url: string;
    try {
      url = row.url_ciphertext ? this.secrets.open(row.url_ciphertext, webhookUrlContext(row.subscription_identity)) : row.url;
    } catch {
      return { ok: false, responseCode: null, error: 'The webhook URL could not be decrypted; set it again' };
    }
    try {
      const res = await this.outbound.request(url, {
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
}
