import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres';

/**
 * A throwaway embedded PostgreSQL with an empty `bench` database; `stop` removes it. With `statements`, the server
 * is restarted once with `shared_preload_libraries = 'pg_stat_statements'` (the binaries ship the extension) and
 * the extension is created in `bench`, so the bench can count the statements each request runs
 * (bench/statements.ts); `statements` is false in the answer when that did not work.
 */
export async function startBenchDatabase(
  prefix: string,
  opts: { statements?: boolean } = {},
): Promise<{ url: string; statements: boolean; stop: () => Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  let pg = await startEmbeddedPostgres(dir);
  const admin = new Client({ connectionString: pg.url });
  await admin.connect();
  await admin.query('CREATE DATABASE bench');
  let statements = false;
  if (opts.statements) {
    await admin.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`);
    await admin.query(`ALTER SYSTEM SET pg_stat_statements.track_utility = on`);
    await admin.end();
    await pg.stop();
    pg = await startEmbeddedPostgres(dir); // same data directory: postgresql.auto.conf applies
  } else {
    await admin.end();
  }
  const u = new URL(pg.url);
  u.pathname = '/bench';
  if (opts.statements) {
    const db = new Client({ connectionString: u.toString() });
    await db.connect();
    try {
      await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      await db.query('SELECT pg_stat_statements_reset()');
      statements = true;
    } catch (e) {
      process.stderr.write(`pg_stat_statements is not available, statements per request are not counted: ${(e as Error).message}\n`);
    } finally {
      await db.end();
    }
  }
  const running = pg;
  return {
    url: u.toString(),
    statements,
    stop: async () => {
      await running.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
