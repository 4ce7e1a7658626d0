import 'reflect-metadata';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { buildDataSourceOptions, runMigrationsLocked } from '../../src/database/data-source-options';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres';

/**
 * Starts one PostgreSQL for the whole run (embedded unless DATABASE_URL names a server), migrates a
 * template database once, and tells the test files where it is through the environment.
 */
export default async function globalSetup(): Promise<void> {
  let serverUrl = process.env.DATABASE_URL;
  const state: Record<string, string> = {};
  if (!serverUrl) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cms-test-pg-'));
    // A throwaway data directory: fsync off for speed (the service's default is on).
    const embedded = await startEmbeddedPostgres(dir, undefined, { fsync: false });
    (globalThis as Record<string, unknown>).__CMS_EMBEDDED__ = embedded;
    serverUrl = embedded.url;
    state.dir = dir;
  }
  const template = `cms_template_${process.pid}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template}`);
  await admin.query(`CREATE DATABASE ${template}`);
  await admin.end();
  const templateUrl = withDatabase(serverUrl, template);
  const ds = await new DataSource(buildDataSourceOptions(templateUrl)).initialize();
  await runMigrationsLocked(ds);
  await ds.destroy();
  process.env.CMS_TEST_SERVER_URL = serverUrl;
  process.env.CMS_TEST_TEMPLATE_DB = template;
  (globalThis as Record<string, unknown>).__CMS_TEST_STATE__ = { ...state, serverUrl, template };
}

export function withDatabase(serverUrl: string, db: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${db}`;
  return url.toString();
}
