import 'reflect-metadata';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { loadConfig } from '../src/config/app-config';
import { buildDataSourceOptions, runMigrationsLocked } from '../src/database/data-source-options';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres';

/**
 * `npm run migration:run`: applies pending migrations to DATABASE_URL (through ormconfig.ts's
 * options), or to the embedded database under DATA_DIR when DATABASE_URL is unset.
 */
async function main(): Promise<void> {
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
    const ds = await new DataSource(buildDataSourceOptions(url)).initialize();
    const pending = await ds.showMigrations();
    await runMigrationsLocked(ds);
    process.stdout.write(pending ? 'Migrations applied.\n' : 'No pending migrations.\n');
    await ds.destroy();
  } finally {
    if (stop) await stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`Migration failed: ${(e as Error).message}\n`);
  process.exit(1);
});
