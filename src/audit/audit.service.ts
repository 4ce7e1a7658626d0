import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { activitySentence, ActivityService } from '../activity/activity.service';
import type { Actor } from '../identity/principal';
import { Clock } from '../common/clock';
import { redactForRecord } from '../common/secret-fields';
import { SqlPart, sqlParams } from '../common/sql-params';
import type { AuditDetails } from './audit-event.entity';
import { AuditEventSink } from './audit-event-sink';
import { AuditEntry, AuditRecorder } from './audit-recorder';

/**
 * Writes audit rows, the matching activity event and what the event sink adds (the webhook outbox rows), all in the caller's
 * transaction (so an event is delivered exactly when its change committed).
 */
@Injectable()
export class AuditService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly activity: ActivityService,
    private readonly events: AuditEventSink,
    private readonly recorder: AuditRecorder,
  ) {}

  async write(entry: AuditEntry, actor: Actor): Promise<void> {
    const rows = this.rows(entry, actor);
    if (!rows) return;
    const { values, bind } = sqlParams();
    await this.txHost.tx.query(`WITH ${rows(bind)} SELECT 1`, values);
  }

  /**
   * The rows of an entry as CTEs for a statement the change itself runs (e.g. `WITH <these> UPDATE clusters ...`): the
   * entry is recorded as written, so the transaction that ends the request does not write it again. Null when the
   * entry writes nothing (an update that changed nothing). Call it inside the change's transaction, and only when
   * that statement will run.
   */
  inStatement(entry: AuditEntry): SqlPart | null {
    const rows = this.rows(entry, this.recorder.actor());
    this.recorder.recordWritten(entry);
    return rows;
  }

  /** The audit row, the activity event and the webhook events of an entry, as CTEs of one statement. */
  private rows(entry: AuditEntry, actor: Actor): SqlPart | null {
    // An update that changed nothing (e.g. a PATCH repeating the current values) leaves no trace.
    if (entry.type.endsWith('_UPDATED') && entry.details && Object.keys(entry.details).length === 0) return null;
    // Records never hold a secret: declared and secret-looking properties, and URL credentials, are redacted here once
    // for the audit row, the activity sentence and the webhook event built from them.
    const details = redactForRecord(entry.details ?? {}) as AuditDetails;
    const subject = entry.subject === undefined ? undefined : (redactForRecord(entry.subject) as string);
    const values = [
      entry.type,
      actor.id,
      actor.username,
      entry.organisation?.id ?? null,
      entry.organisation?.slug ?? null,
      entry.environment?.id ?? null,
      entry.environment?.slug ?? null,
      entry.cluster?.id ?? null,
      entry.cluster?.slug ?? null,
      entry.nodePool?.id ?? null,
      entry.nodePool?.name ?? null,
      entry.cloudAccountName ?? null,
      entry.referencedEntityIdentity ?? null,
      JSON.stringify(details),
      this.clock.now(),
    ];
    // Plain SQL: TypeORM's insert builder costs more CPU than the row, and every mutating request writes one.
    const auditRow: SqlPart = (bind) =>
      `audit_row AS (INSERT INTO audit_events (type, actor_id, actor_username, organisation_id, organisation_slug, environment_id, environment_slug,
         cluster_id, cluster_slug, cluster_node_pool_id, cluster_node_pool_name, cloud_account_name, referenced_entity_identity, details, created_at)
       VALUES (${values.map(bind).join(', ')}))`;
    if (!entry.organisation) return auditRow;
    // The audit row, its activity event and its webhook events in one statement: one round trip inside the change's
    // transaction (a PATCH holds its cluster's row lock until COMMIT) instead of three or more.
    const message = redactForRecord(entry.message ?? activitySentence(entry.type, actor.username, subject)) as string;
    const activity = this.activity.insert(entry.organisation.id, entry.type, message, actor);
    const events = this.events.auditEventCtes(
      entry.organisation,
      entry.type,
      {
        environment: entry.environment ? { slug: entry.environment.slug } : null,
        cluster: entry.cluster ? { slug: entry.cluster.slug } : null,
        nodePool: entry.nodePool ? { name: entry.nodePool.name } : null,
        cloudAccountName: entry.cloudAccountName ?? null,
        referencedEntityIdentity: entry.referencedEntityIdentity ?? null,
        message,
        details,
      },
      actor,
    );
    return (bind) => `${auditRow(bind)}, activity_row AS (${activity(bind)}), ${events(bind)}`;
  }
}
