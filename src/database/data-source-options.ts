import * as path from 'path';
import { types } from 'pg';
import type { DataSourceOptions } from 'typeorm';
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
}

/** `application_name` of the request pool's sessions. */
export const APPLICATION_NAME = 'cluster-management-service';

/** One definition of the connection, shared by the app, the migration CLI (ormconfig.ts) and tests. */
export function buildDataSourceOptions(url: string, tuning: DatabaseTuning = {}): DataSourceOptions {
  const timeoutMs = tuning.timeoutMs ?? 5000;
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
      statement_timeout: timeoutMs,
      query_timeout: timeoutMs,
      idle_in_transaction_session_timeout: timeoutMs * 6,
      application_name: tuning.applicationName ?? APPLICATION_NAME,
    },
  };
}

/**
 * Runs pending migrations under an advisory lock so replicas starting together apply each once. The lock is
 * polled (`pg_try_advisory_lock`), not waited for in one statement: a waiting statement holds a snapshot, which
 * a migration building an index CONCURRENTLY must wait for while the waiter waits for its lock (PostgreSQL
 * ends that with "deadlock detected"), and it would also hit the statement timeout behind a long migration.
 */
export async function runMigrationsLocked(ds: import('typeorm').DataSource, pollMs = 250): Promise<void> {
  const runner = ds.createQueryRunner();
  await runner.connect();
  try {
    for (;;) {
      const [{ locked }] = (await runner.query('SELECT pg_try_advisory_lock(724001) AS locked')) as { locked: boolean }[];
      if (locked) break;
      await new Promise((r) => setTimeout(r, pollMs));
    }
    await ds.runMigrations({ transaction: 'each' });
  } finally {
    await runner.query('SELECT pg_advisory_unlock(724001)').catch(() => undefined);
    await runner.release();
  }
}
