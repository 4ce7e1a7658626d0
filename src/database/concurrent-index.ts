import type { QueryRunner } from 'typeorm';

/** Index builds may take minutes on a large table: no statement timeout (server or client side) for them. */
const BUILD_TIMEOUT_MS = 6 * 3600 * 1000;

interface RawClient {
  query(config: { text: string; query_timeout?: number }): Promise<unknown>;
}

/**
 * Builds an index without blocking writers (CONCURRENTLY, so outside a transaction). A build interrupted
 * earlier leaves an invalid index of the same name behind: it is dropped first, so running this again is safe.
 */
export async function buildIndexConcurrently(q: QueryRunner, name: string, definition: string): Promise<void> {
  await q.connect();
  const client = (q as unknown as { databaseConnection: RawClient }).databaseConnection;
  const run = (text: string) => client.query({ text, query_timeout: BUILD_TIMEOUT_MS });
  await run(`SET statement_timeout = 0`);
  try {
    await run(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
    await run(`CREATE INDEX CONCURRENTLY ${name} ON ${definition}`);
  } finally {
    await run(`RESET statement_timeout`);
  }
}
