import * as fs from 'fs';
import { Client } from 'pg';
import type { EmbeddedDatabase } from '../../src/database/embedded-postgres';

export default async function globalTeardown(): Promise<void> {
  const g = globalThis as Record<string, unknown>;
  const state = g.__CMS_TEST_STATE__ as { dir?: string; serverUrl: string; template: string } | undefined;
  const embedded = g.__CMS_EMBEDDED__ as EmbeddedDatabase | undefined;
  if (embedded) {
    await embedded.stop();
    if (state?.dir) fs.rmSync(state.dir, { recursive: true, force: true });
    return;
  }
  if (state) {
    // External server: remove what this run created.
    const client = new Client({ connectionString: state.serverUrl });
    await client.connect();
    const { rows } = await client.query(`SELECT datname FROM pg_database WHERE datname LIKE $1 OR datname = $2`, [
      `cms_t_${process.pid}_%`,
      state.template,
    ]);
    for (const r of rows) await client.query(`DROP DATABASE IF EXISTS ${r.datname} WITH (FORCE)`).catch(() => undefined);
    await client.end();
  }
}
