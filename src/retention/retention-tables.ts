/** Tables the retention job deletes from (also the `table` label of cms_retention_deleted_rows_total). */
export const RETENTION_TABLES = ['audit_events', 'activity_events', 'tenant_alerts', 'webhook_events', 'webhook_deliveries', 'idempotency_keys'] as const;

/** Idempotency keys and their answers are kept this long (src/idempotency/idempotency-key.ts). */
export const IDEMPOTENCY_KEY_RETENTION_HOURS = 24;
export type RetentionTable = (typeof RETENTION_TABLES)[number];

/**
 * One batch of a table whose rows expire on their own: the oldest rows below the cutoff ($1), at most the
 * batch size ($2), read in the order of an index on the expiry column (so the statement stops after the
 * batch and costs nothing when nothing has expired). Rows another replica is deleting right now are locked
 * by it and skipped, so replicas running the job together share the work instead of waiting or conflicting.
 */
function expiringRowsBatch(table: string, column: string, filter = ''): string {
  // `id = ANY(ARRAY(subquery))`, not `id IN (subquery)`: the ids are collected first (an init plan) and the
  // rows found by primary key. With `IN` the planner may hash-join the batch against a sequential scan of the
  // whole table (it did at 200,000 rows; see docs/performance-history.md).
  return (
    `DELETE FROM ${table} WHERE id = ANY(ARRAY(` +
    `SELECT id FROM ${table} WHERE ${filter}${column} < $1 ORDER BY ${column} LIMIT $2 FOR UPDATE SKIP LOCKED))`
  );
}

/** The delete statement of one batch per table (bench/audit-explain.ts explains these very strings). */
export const RETENTION_SQL = {
  /** audit_events_created_idx */
  audit_events: expiringRowsBatch('audit_events', 'created_at'),
  /** activity_events_created_idx */
  activity_events: expiringRowsBatch('activity_events', 'created_at'),
  /** idempotency_keys_created_idx: a key and its stored answer expire 24 h after the request. */
  idempotency_keys: expiringRowsBatch('idempotency_keys', 'created_at'),
  /** tenant_alerts_resolved_ends_idx: resolved alerts expire by the time they ended (firing ones never). */
  tenant_alerts: expiringRowsBatch('tenant_alerts', 'ends_at', `status = 'resolved' AND `),
  /**
   * Webhook events below the cutoff none of whose deliveries is pending (webhook_events_created, and
   * webhook_deliveries_event for the check). Locked FOR UPDATE: a redelivery inserting a new delivery of
   * one of them (its foreign key takes a key-share lock on the event) either went first, and the event is
   * skipped, or waits for the batch.
   */
  webhook_events_pick:
    `SELECT e.id FROM webhook_events e WHERE e.created_at < $1 ` +
    `AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status = 'PENDING') ` +
    `ORDER BY e.created_at LIMIT $2 FOR UPDATE OF e SKIP LOCKED`,
  /** Their delivered and failed deliveries; a delivery that became pending meanwhile stays. */
  webhook_deliveries: `DELETE FROM webhook_deliveries WHERE event_id = ANY($1::bigint[]) AND status <> 'PENDING'`,
  /** The events themselves, unless a delivery is left (then the event stays with it). */
  webhook_events:
    `DELETE FROM webhook_events e WHERE e.id = ANY($1::bigint[]) ` +
    `AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)`,
} as const;
