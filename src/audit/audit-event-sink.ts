import type { SqlPart } from '../common/sql-params';
import type { Actor } from '../identity/principal';
import type { AuditDetails } from './audit-event.entity';

/** The facts of an organisation's audit entry that leave the audit layer with it (redacted: never a secret). */
export interface AuditEventFacts {
  environment?: { slug: string } | null;
  cluster?: { slug: string } | null;
  nodePool?: { name: string } | null;
  cloudAccountName?: string | null;
  referencedEntityIdentity?: string | null;
  message?: string;
  details?: AuditDetails | Record<string, unknown>;
}

/**
 * A port of the audit layer: what else an organisation's audit entry writes in the statement of its audit row, so
 * that it happens exactly when the change commits. The webhook outbox implements it (src/webhooks/webhook-outbox.ts:
 * the webhook events and their deliveries; bound in src/app.module.ts); audit does not know webhooks.
 */
export abstract class AuditEventSink {
  /** The CTEs the entry adds to the statement that writes its audit row. */
  abstract auditEventCtes(organisation: { id: number; slug: string }, type: string, facts: AuditEventFacts, actor: Actor): SqlPart;
}
