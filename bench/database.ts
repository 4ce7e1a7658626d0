import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres';

/** A throwaway embedded PostgreSQL with an empty `bench` database; `stop` removes it. */
export async function startBenchDatabase(prefix: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const pg = await startEmbeddedPostgres(dir);
  const admin = new Client({ connectionString: pg.url });
  await admin.connect();
  await admin.query('CREATE DATABASE bench');
  await admin.end();
  const u = new URL(pg.url);
  u.pathname = '/bench';
  return {
    url: u.toString(),
    stop: async () => {
      await pg.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
