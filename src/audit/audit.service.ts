import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { activitySentence, ActivityService } from '../activity/activity.service';
import type { Actor } from '../auth/principal';
import { Clock } from '../common/clock';
import { redactForRecord } from '../common/secret-fields';
import { SqlPart, sqlParams } from '../common/sql-params';
import type { AuditDetails } from './audit-event.entity';
import { WebhookOutbox } from '../webhooks/webhook-outbox';
import type { AuditEntry } from './audit-recorder';

/**
 * Writes audit rows, the matching activity event and the webhook outbox rows, all in the caller's
 * transaction (so an event is delivered exactly when its change committed).
 */
@Injectable()
export class AuditService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly activity: ActivityService,
    private readonly outbox: WebhookOutbox,
  ) {}

  async write(entry: AuditEntry, actor: Actor): Promise<void> {
    // An update that changed nothing (e.g. a PATCH repeating the current values) leaves no trace.
    if (entry.type.endsWith('_UPDATED') && entry.details && Object.keys(entry.details).length === 0) return;
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
      `INSERT INTO audit_events (type, actor_id, actor_username, organisation_id, organisation_slug, environment_id, environment_slug,
         cluster_id, cluster_slug, cluster_node_pool_id, cluster_node_pool_name, cloud_account_name, referenced_entity_identity, details, created_at)
       VALUES (${values.map(bind).join(', ')})`;
    if (!entry.organisation) {
      const { values: params, bind } = sqlParams();
      await this.txHost.tx.query(auditRow(bind), params);
      return;
    }
    // The audit row, its activity event and its webhook event in one statement: one round trip inside the change's
    // transaction (a PATCH holds its cluster's row lock until COMMIT) instead of three.
    const message = redactForRecord(entry.message ?? activitySentence(entry.type, actor.username, subject)) as string;
    await this.outbox.enqueueAudit(
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
      [auditRow, this.activity.insert(entry.organisation.id, entry.type, message, actor)],
    );
  }
}
