import 'reflect-metadata';
import { Client } from 'pg';
import { loadConfig } from '../src/config/app-config';
import { migrateDatabase } from '../src/database/data-source-options';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres';

/**
 * The migration command: `node dist/scripts/migrate.js` (production dependencies only: the image and the migration Job
 * run it), or `npm run migration:run` from a checkout. Applies pending migrations to DATABASE_URL, or to the embedded
 * database under DATA_DIR when DATABASE_URL is unset, under the advisory lock the service takes too, with no statement
 * timeout (a migration may run for longer than any request). SIGTERM or SIGINT while it waits for the lock exits 1 at
 * once with nothing applied; during a migration, the migration (one transaction each) is rolled back by PostgreSQL.
 */
async function main(): Promise<void> {
  const stopping = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping.signal.aborted) return;
    process.stderr.write(`${signal} received: stopping the migrations\n`);
    stopping.abort(new Error(`${signal} received`));
    // A migration statement under way is not cut off by the signal; the process exit ends its session.
    setTimeout(() => process.exit(1), 1000).unref();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const config = loadConfig();
  let url = config.DATABASE_URL;
  let stop: (() => Promise<void>) | undefined;
  if (!url) {
    const embedded = await startEmbeddedPostgres(config.DATA_DIR);
    stop = () => embedded.stop();
    const client = new Client({ connectionString: embedded.url });
    await client.connect();
    const { rowCount } = await client.query(`SELECT 1 FROM pg_database WHERE datname = 'cluster_management'`);
    if (!rowCount) await client.query('CREATE DATABASE cluster_management');
    await client.end();
    const u = new URL(embedded.url);
    u.pathname = '/cluster_management';
    url = u.toString();
  }
  try {
    const applied = await migrateDatabase(url, {
      signal: stopping.signal,
      onWait: () => process.stdout.write('Waiting for the migration lock (another process is migrating)...\n'),
    });
    process.stdout.write(applied ? 'Migrations applied.\n' : 'No pending migrations.\n');
  } finally {
    if (stop) await stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`Migration failed: ${(e as Error).message}\n`);
  process.exit(1);
});
