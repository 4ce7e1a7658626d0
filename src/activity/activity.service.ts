import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { Actor } from '../identity/principal';
import { Clock } from '../common/clock';
import { redactForRecord } from '../common/secret-fields';
import { SqlPart, sqlParams } from '../common/sql-params';

const ACTIONS: Record<string, string> = {
  CREATED: 'created',
  UPDATED: 'updated',
  DELETED: 'deleted',
  ADDED: 'added',
  REMOVED: 'removed',
  REVOKED: 'revoked',
  PROVISIONED: 'provisioned',
  CANCELLED: 'cancelled',
  STARTED: 'started',
  STOPPED: 'stopped',
  REPLACED: 'replaced',
  VALIDATED: 'validated',
  RECEIVED: 'received',
  PINGED: 'pinged',
};

/** "CLUSTER_CREATED" + subject "production/web" -> "alice created cluster production/web". */
export function activitySentence(type: string, actor: string, subject?: string): string {
  const parts = type.split('_');
  const last = parts[parts.length - 1];
  const action = ACTIONS[last];
  const resource = (action ? parts.slice(0, -1) : parts).join(' ').toLowerCase();
  const verb = action ?? last.toLowerCase();
  return `${actor} ${verb} ${resource}${subject ? ` ${subject}` : ''}`.trim();
}

@Injectable()
export class ActivityService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
  ) {}

  /** Writes one event in the current transaction (the request's, or a job's); URL credentials in the sentence are redacted. */
  async write(organisationId: number, type: string, message: string, actor: Actor): Promise<void> {
    const { values, bind } = sqlParams();
    await this.txHost.tx.query(this.insert(organisationId, type, message, actor)(bind), values);
  }

  /**
   * The INSERT of one event (as `write` makes it), for a statement that writes it together with other rows (the audit
   * row and its webhook event: AuditService), so that they cost one round trip. A plain statement: TypeORM's insert
   * builder costs more CPU than the row.
   */
  insert(organisationId: number, type: string, message: string, actor: Actor): SqlPart {
    const values = [organisationId, type, redactForRecord(message) as string, actor.identity, actor.username, this.clock.now()];
    return (bind) =>
      `INSERT INTO activity_events (organisation_id, type, message, actor_identity, actor_username, created_at) VALUES (${values.map(bind).join(', ')})`;
  }
}
