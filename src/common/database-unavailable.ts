/**
 * Which errors mean "the database cannot be used right now" (a lost, refused or read-only connection, a wait that
 * ran out), told apart from the server faults and client mistakes: the one classification the exception filter
 * (errors.ts), the read retry (src/database/read-retry.ts) and the outage log use. node-postgres, pg-pool and TypeORM
 * report these in several shapes: an SQLSTATE in `code`, a Node.js socket error code, a bare message, an error
 * wrapped in TypeORM's `driverError`, or an AggregateError of the addresses tried.
 */

/** What went wrong, in the words the error body and the log use. */
export type DatabaseUnavailableCause =
  /** The connection was refused or could not be made (server down, starting, too many connections). */
  | 'connection-refused'
  /** An established connection was closed or reset (backend terminated, server shut down, network). */
  | 'connection-lost'
  /** The server accepts only reads: a standby, or a primary restarted read-only during a failover (SQLSTATE 25006). */
  | 'read-only'
  /** No connection or no answer within the request's database budget (DATABASE_TIMEOUT_MS). */
  | 'timeout';

export interface DatabaseUnavailable {
  cause: DatabaseUnavailableCause;
  /** The SQLSTATE or the socket error code when the error carries one, else the error's class name. */
  code: string;
}

const BY_CODE: Record<string, DatabaseUnavailableCause> = {
  ECONNREFUSED: 'connection-refused',
  ENOTFOUND: 'connection-refused',
  '57P03': 'connection-refused', // cannot_connect_now (starting up, shutting down, recovery)
  '53300': 'connection-refused', // too_many_connections
  ECONNRESET: 'connection-lost',
  EPIPE: 'connection-lost',
  '57P01': 'connection-lost', // admin_shutdown, also pg_terminate_backend
  '57P02': 'connection-lost', // crash_shutdown
  '57P05': 'connection-lost', // idle_session_timeout
  '25006': 'read-only', // read_only_sql_transaction
  ETIMEDOUT: 'timeout',
  '57014': 'timeout', // query_canceled (statement_timeout)
};

const BY_MESSAGE: [RegExp, DatabaseUnavailableCause, string][] = [
  [/timeout exceeded when trying to connect|Connection terminated due to connection timeout/i, 'timeout', 'pool-timeout'],
  [/Query read timeout/i, 'timeout', 'ETIMEDOUT'],
  [/connect ECONNREFUSED|the database system is (starting up|shutting down|in recovery mode)/i, 'connection-refused', 'ECONNREFUSED'],
  [/Connection terminated|Client has encountered a connection error|Client was closed and is not queryable|Connection is not established|terminating connection/i, 'connection-lost', 'connection-terminated'],
  [/cannot execute .* in a read-only transaction/i, 'read-only', '25006'],
];

/** What makes `err` a database that cannot be used now, or null when it is something else. */
export function databaseUnavailable(err: unknown, depth = 0): DatabaseUnavailable | null {
  if (!err || typeof err !== 'object' || depth > 4) return null;
  const e = err as { code?: unknown; message?: unknown; name?: unknown; driverError?: unknown; errors?: unknown; cause?: unknown };
  const code = typeof e.code === 'string' ? e.code : undefined;
  if (code && BY_CODE[code]) return { cause: BY_CODE[code], code };
  // Class 08: connection exception (08000, 08003, 08006, 08001, 08004, 08P01).
  if (code && /^08[0-9A-Z]{3}$/.test(code)) return { cause: code === '08001' || code === '08004' ? 'connection-refused' : 'connection-lost', code };
  // TypeORM refuses every statement on a query runner (or an entity manager's) released after its connection failed.
  for (const released of ['QueryRunnerAlreadyReleasedError', 'QueryRunnerProviderAlreadyReleasedError'])
    if (e.name === released || err.constructor?.name === released) return { cause: 'connection-lost', code: released };
  const message = typeof e.message === 'string' ? e.message : '';
  for (const [pattern, cause, named] of BY_MESSAGE) if (pattern.test(message)) return { cause, code: code ?? named };
  for (const inner of [e.driverError, e.cause]) {
    const found = databaseUnavailable(inner, depth + 1);
    if (found) return found;
  }
  // Node's connect tries every address of a name (localhost: ::1 and 127.0.0.1) and reports them together.
  if (Array.isArray(e.errors)) for (const inner of e.errors) {
    const found = databaseUnavailable(inner, depth + 1);
    if (found) return found;
  }
  return null;
}

/** True when `err` means the database cannot be used now (databaseUnavailable). */
export function isDatabaseUnavailable(err: unknown): boolean {
  return databaseUnavailable(err) !== null;
}

/** Seconds a client is asked to wait before it retries (Retry-After): a failover takes a few seconds. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

const CAUSE_TEXT: Record<DatabaseUnavailableCause, string> = {
  'connection-refused': 'the database refused the connection',
  'connection-lost': 'the connection to the database was lost',
  'read-only': 'the database accepts only reads (a failover is under way)',
  timeout: 'the database did not answer in time',
};

/** The sentence of the error body: the cause and its code, and when to retry. */
export function databaseUnavailableMessage(found: DatabaseUnavailable, retryAfterSeconds = DATABASE_RETRY_AFTER_SECONDS): string {
  const text = CAUSE_TEXT[found.cause];
  return `The database is unavailable: ${text} (${found.code}); retry in ${retryAfterSeconds} s.`;
}
