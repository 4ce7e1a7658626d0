import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { AuditDetails } from '../audit/audit-event.entity';
import { AuditEventFacts, AuditEventSink } from '../audit/audit-event-sink';
import { ORGANISATION_AUDIT_EVENT_TYPES } from '../audit/audit-event-types';
import type { Actor } from '../identity/principal';
import { Clock } from '../common/clock';
import { redactForRecord } from '../common/secret-fields';
import { SqlPart, sqlParams } from '../common/sql-params';

/** Events that exist for webhooks only, beside every audit event type of the organisation. */
export const WEBHOOK_ONLY_EVENT_TYPES = [
  'SCHEDULED_CLUSTER_UPGRADE_ANNOUNCED',
  'CLUSTER_STATUS_CHANGED',
  'ALERT_FIRING',
  'ALERT_RESOLVED',
  'WEBHOOK_PING',
] as const;

/** Every event type a subscription may name (besides `*`), sorted. */
export const WEBHOOK_EVENT_TYPES: readonly string[] = [...new Set<string>([...ORGANISATION_AUDIT_EVENT_TYPES, ...WEBHOOK_ONLY_EVENT_TYPES])].sort();

/** What an event says: the organisation-scoped facts of its audit row or activity, never a secret. */
export interface WebhookEventData extends AuditEventFacts {
  organisation: { slug: string };
  actor?: { identity: string | null; username: string } | null;
}

export interface OutboxEvent {
  organisationId: number;
  type: string;
  /** CloudEvents `subject`: the resource inside the source, e.g. `clusters/production/web`. */
  subject?: string | null;
  data: WebhookEventData;
}

/** CloudEvents `source` of an organisation's events: the organisation's API path. */
export const eventSource = (organisationSlug: string) => `/api/v1/orgs/${organisationSlug}`;

/** `clusters/<env>/<cluster>`, `environments/<env>`, or the referenced entity: what the event is about. */
export function eventSubject(data: WebhookEventData): string | null {
  if (data.cluster && data.environment) {
    const base = `clusters/${data.environment.slug}/${data.cluster.slug}`;
    return data.nodePool ? `${base}/pools/${data.nodePool.name}` : base;
  }
  if (data.environment) return `environments/${data.environment.slug}`;
  return data.referencedEntityIdentity ?? null;
}

/**
 * The write side of the transactional outbox. `enqueue` runs in the caller's transaction (the request's
 * or a background job's): one statement that inserts the event and a delivery per enabled subscription
 * of the organisation whose `eventTypes` match, and nothing at all when none match. A rolled-back change
 * therefore emits nothing and a committed one cannot lose its event.
 */
@Injectable()
export class WebhookOutbox implements AuditEventSink {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
  ) {}

  /** Whether an enabled subscription of the organisation wants any of these event types (one indexed statement). */
  async subscribed(organisationId: number, types: string[]): Promise<boolean> {
    const [row] = await this.txHost.tx.query(
      `SELECT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE organisation_id = $1 AND enabled AND event_types && ($2::text[] || '*'::text)) AS any`,
      [organisationId, types],
    );
    return row.any === true;
  }

  /**
   * One event on its own statement (an audit entry's events are written with its audit row instead: auditEventCtes).
   * Answers the number of deliveries created.
   */
  async enqueue(event: OutboxEvent, onlySubscriptionId?: number): Promise<number> {
    const { values, bind } = sqlParams();
    const [row] = (await this.txHost.tx.query(
      `WITH ${this.eventCtes(event, 'e0', onlySubscriptionId)(bind)} SELECT count(*)::int AS deliveries FROM e0_deliveries`,
      values,
    )) as { deliveries: number }[];
    return row.deliveries;
  }

  /**
   * The CTEs (`<key>_subs`, `<key>_event`, `<key>_deliveries`) of one event, for a statement built from parts: the
   * event and a delivery per enabled subscription of the organisation whose `eventTypes` match (or only
   * `onlySubscriptionId`), and nothing at all when none match. `key` names them uniquely within the statement; `after`
   * (another event's key in the same statement) makes that event's row be inserted first, so ids keep the events' order.
   */
  eventCtes(event: OutboxEvent, key: string, onlySubscriptionId?: number, after?: string): SqlPart {
    return (bind) => {
      const org = bind(event.organisationId);
      const type = bind(event.type);
      const now = bind(this.clock.now());
      const only = bind(onlySubscriptionId ?? null);
      const source = bind(eventSource(event.data.organisation.slug));
      const subject = bind(event.subject ?? eventSubject(event.data));
      // An event body is a record: no secret-named property, whoever enqueues it (audit events come redacted in full,
      // URLs included; relayed alert annotations keep their links).
      const data = bind(JSON.stringify(redactForRecord(event.data, { urls: false })));
      return `${key}_subs AS (
         SELECT id FROM webhook_subscriptions
          WHERE organisation_id = ${org} AND enabled
            AND (${only}::bigint IS NULL AND event_types && ARRAY[${type}, '*']::text[] OR id = ${only}::bigint)
       ), ${key}_event AS (
         INSERT INTO webhook_events (organisation_id, type, source, subject, data, created_at)
         SELECT ${org}, ${type}, ${source}, ${subject}, ${data}::jsonb, ${now}
          WHERE EXISTS (SELECT 1 FROM ${key}_subs)${after ? ` AND (SELECT count(*) FROM ${after}_event) >= 0` : ''}
         RETURNING id
       ), ${key}_deliveries AS (
         INSERT INTO webhook_deliveries (subscription_id, event_id, status, next_attempt_at, created_at)
         SELECT s.id, ev.id, 'PENDING', ${now}, ${now} FROM ${key}_subs s, ${key}_event ev
         RETURNING id
       )`;
    };
  }

  /**
   * The events an audit entry produces, as CTEs for the statement that writes the audit row: its own type, and the
   * derived ones subscribers ask for by name (an upgrade announcement, a cluster status change).
   */
  auditEventCtes(
    organisation: { id: number; slug: string },
    type: string,
    data: AuditEventFacts,
    actor: Actor,
  ): SqlPart {
    const full: WebhookEventData = { organisation: { slug: organisation.slug }, actor: { identity: actor.identity, username: actor.username }, ...data };
    const events: OutboxEvent[] = [{ organisationId: organisation.id, type, data: full }];
    if (type === 'SCHEDULED_CLUSTER_UPGRADE_SCHEDULED_NOTIFIED') {
      events.push({ organisationId: organisation.id, type: 'SCHEDULED_CLUSTER_UPGRADE_ANNOUNCED', data: full });
    }
    const status = (data.details as AuditDetails | undefined)?.status;
    if (data.cluster && status && status.old != null && status.old !== status.new && !data.nodePool && !type.startsWith('SCHEDULED_CLUSTER_UPGRADE')) {
      events.push({ organisationId: organisation.id, type: 'CLUSTER_STATUS_CHANGED', data: { ...full, details: { status } } });
    }
    return (bind) => events.map((e, i) => this.eventCtes(e, `e${i}`, undefined, i ? `e${i - 1}` : undefined)(bind)).join(', ');
  }
}
