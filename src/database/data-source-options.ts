import * as path from 'path';
import { types } from 'pg';
import { setTimeout as sleep } from 'timers/promises';
import { DataSource, DataSourceOptions } from 'typeorm';
import { BigintIdSubscriber } from './bigint-id.subscriber';
import { budgetedPg } from './database-wait-budget';
import { PinnedIdentitySubscriber } from '../common/pinned-identities';
import { SnakeNamingStrategy } from './snake-naming.strategy';

// bigint ids stay below 2^53; numbers are what the API exposes as int64.
types.setTypeParser(20, (v: string) => Number(v));
types.setTypeParser(1700, (v: string) => Number(v));

export interface DatabaseTuning {
  poolSize?: number;
  timeoutMs?: number;
  /** What pg_stat_activity shows for the pool's sessions (default: the request pool's name). */
  applicationName?: string;
  /**
   * No statement timeout (server or client side) and no idle-in-transaction timeout: for the migrations, which may
   * rewrite a table or build an index for longer than any request may wait. The connection wait stays bounded.
   */
  unboundedStatements?: boolean;
}

/** `application_name` of the request pool's sessions. */
export const APPLICATION_NAME = 'cluster-management-service';

/** `application_name` of the migration sessions (`node dist/scripts/migrate.js`, or a process with MIGRATE_AT_START). */
export const MIGRATION_APPLICATION_NAME = 'cluster-management-service-migrate';

/** One definition of the connection, shared by the app, the migration CLI (ormconfig.ts) and tests. */
export function buildDataSourceOptions(url: string, tuning: DatabaseTuning = {}): DataSourceOptions {
  const timeoutMs = tuning.timeoutMs ?? 5000;
  const statementTimeoutMs = tuning.unboundedStatements ? undefined : timeoutMs;
  const srcRoot = path.resolve(__dirname, '..');
  return {
    type: 'postgres',
    url,
    // Inside a request, connection waits and statements share one budget of timeoutMs (database-wait-budget.ts).
    driver: budgetedPg,
    namingStrategy: new SnakeNamingStrategy(),
    entities: [path.join(srcRoot, '**', '*.entity.{ts,js}')],
    migrations: [path.join(__dirname, 'migrations', '*.{ts,js}')],
    subscribers: [BigintIdSubscriber, PinnedIdentitySubscriber],
    migrationsTableName: 'schema_migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false, // failures surface through the exception filter's structured log
    extra: {
      max: tuning.poolSize ?? 10,
      // Outside requests (background passes) each connection wait and each statement is bounded by timeoutMs;
      // inside a request they are bounded together by what is left of the request's budget of timeoutMs.
      connectionTimeoutMillis: timeoutMs,
      // A statement that hangs (a lock wait, or a server that stopped answering) is cut off within the timeout,
      // so the request answers 503 instead of holding the caller: server-side and client-side bounds.
      // (Unset: none; pg sends only the ones that are set.)
      statement_timeout: statementTimeoutMs,
      query_timeout: statementTimeoutMs,
      idle_in_transaction_session_timeout: statementTimeoutMs && statementTimeoutMs * 6,
      application_name: tuning.applicationName ?? APPLICATION_NAME,
      // TCP keepalive: a connection to a server that a network partition cut off without a reset is found dead
      // by the kernel instead of hanging until a statement's timeout (also on the LISTEN connections).
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    },
  };
}

/** The migrations' connection: two sessions (the lock's and the migrations'), no statement timeout. */
export function migrationDataSourceOptions(url: string): DataSourceOptions {
  return buildDataSourceOptions(url, { poolSize: 2, unboundedStatements: true, applicationName: MIGRATION_APPLICATION_NAME });
}

export interface MigrationLockOptions {
  /** How often the lock is tried while another process holds it. */
  pollMs?: number;
  /** Stops waiting for the lock (a SIGTERM during start-up): the wait ends with the signal's reason. */
  signal?: AbortSignal;
  /** Called once when the lock is held by another process and this one starts waiting. */
  onWait?: () => void;
}

/**
 * Runs pending migrations under an advisory lock so replicas starting together apply each once. The lock is
 * polled (`pg_try_advisory_lock`), not waited for in one statement: a waiting statement holds a snapshot, which
 * a migration building an index CONCURRENTLY must wait for while the waiter waits for its lock (PostgreSQL
 * ends that with "deadlock detected"), and it would also hit the statement timeout behind a long migration.
 * The wait ends at once when `signal` aborts; nothing is migrated then.
 */
export async function runMigrationsLocked(ds: import('typeorm').DataSource, options: MigrationLockOptions = {}): Promise<void> {
  const { pollMs = 250, signal, onWait } = options;
  signal?.throwIfAborted();
  const runner = ds.createQueryRunner();
  await runner.connect();
  let waiting = false;
  try {
    for (;;) {
      signal?.throwIfAborted();
      const [{ locked }] = (await runner.query('SELECT pg_try_advisory_lock(724001) AS locked')) as { locked: boolean }[];
      if (locked) break;
      if (!waiting) onWait?.();
      waiting = true;
      await sleep(pollMs, undefined, signal ? { signal } : undefined).catch(() => signal?.throwIfAborted());
    }
    signal?.throwIfAborted();
    await ds.runMigrations({ transaction: 'each' });
  } finally {
    await runner.query('SELECT pg_advisory_unlock(724001)').catch(() => undefined);
    await runner.release();
  }
}

/**
 * Applies the pending migrations to `url` on a connection of their own (migrationDataSourceOptions), under the
 * migration lock; true when there were any. The migration command and processes with MIGRATE_AT_START use it.
 */
export async function migrateDatabase(url: string, options: MigrationLockOptions = {}): Promise<boolean> {
  const ds = await new DataSource(migrationDataSourceOptions(url)).initialize();
  try {
    const pending = await ds.showMigrations();
    await runMigrationsLocked(ds, options);
    return pending;
  } finally {
    await ds.destroy();
  }
}

/** The migrations of this release that the database has not applied (none: the schema is current, or newer). */
export async function missingMigrations(ds: DataSource): Promise<string[]> {
  const release = ds.migrations.map((m) => m.name ?? m.constructor.name);
  const [{ present }] = (await ds.query(`SELECT to_regclass('schema_migrations') IS NOT NULL AS present`)) as { present: boolean }[];
  const applied = new Set(
    present ? ((await ds.query('SELECT name FROM schema_migrations')) as { name: string }[]).map((r) => r.name) : [],
  );
  return release.filter((name) => !applied.has(name));
}

export interface SchemaWaitOptions {
  pollMs?: number;
  /** Ends the wait with the signal's reason (a SIGTERM during start-up). */
  signal?: AbortSignal;
  /** Called when the schema lacks migrations, with why the process waits; again when what is missing changes. */
  onWait?: (reason: string) => void;
}

/**
 * Waits until the database has every migration of this release (the migration Job applies them; this process does
 * not). A schema newer than the release is fine: every migration is expand/contract (docs/operations.md).
 */
export async function waitForSchema(ds: DataSource, options: SchemaWaitOptions = {}): Promise<void> {
  const { pollMs = 2000, signal, onWait } = options;
  let reported = '';
  for (;;) {
    signal?.throwIfAborted();
    const missing = await missingMigrations(ds);
    if (!missing.length) return;
    const reason =
      `the database schema lacks ${missing.length} migration(s) of this release (newest: ${missing[missing.length - 1]}); ` +
      'waiting for the migration Job (node dist/scripts/migrate.js), or set MIGRATE_AT_START=true to apply them here';
    if (reason !== reported) onWait?.(reason);
    reported = reason;
    await sleep(pollMs, undefined, signal ? { signal } : undefined).catch(() => signal?.throwIfAborted());
  }
}
