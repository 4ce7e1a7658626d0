import * as path from 'path';
import { Client } from 'pg';
import { corpusFiles, latestRelease, QueryCorpus, readCorpus, replayCorpus, TOLERATED_SQLSTATES } from '../../scripts/release/query-corpus';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * The expand/contract rule (docs/operations.md#expand-and-contract), held for every migration from now on: the SQL the
 * previous release issues, captured when it was cut (`npm run release:capture-queries`, committed under
 * test/operations/fixtures/release-queries/), still runs on a database migrated to this build's newest migration and
 * holding the demo data this build writes. Each statement runs once with the parameters it was captured with, inside
 * a transaction that is rolled back; only the data errors of TOLERATED_SQLSTATES are accepted.
 */
describe('The previous release runs on the current schema (expand/contract)', () => {
  const files = corpusFiles();
  const previous: QueryCorpus | undefined = files.length ? readCorpus(files[files.length - 1]) : undefined;
  let t: TestApp;
  let client: Client;

  beforeAll(async () => {
    t = await startTestApp({ DEMO_DATA: 'true' });
    client = new Client({ connectionString: t.databaseUrl });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await t?.close();
  });

  const corpus = (): QueryCorpus => {
    if (!previous) throw new Error('No corpus under test/operations/fixtures/release-queries: run npm run release:capture-queries');
    return previous;
  };

  it("the newest corpus is the CHANGELOG's newest release, captured on a schema this build contains, and covers the service", () => {
    // A release cut without capturing its corpus would leave the rule unchecked for the next one.
    expect(files.map((f) => path.basename(f))).toContain(`${latestRelease()}.json`);
    expect(path.basename(files[files.length - 1])).toBe(`${corpus().release}.json`);
    // Migrations are never removed, so the previous release's newest one is among this build's.
    expect(t.db.migrations.map((m) => m.name)).toContain(corpus().schema);
    // Breadth: the reads of the API, the writes, and a pass of every background loop.
    const sources = new Set(corpus().queries.flatMap((q) => q.sources));
    const readOperations = [...sources].filter((s) => s.startsWith('GET /api/v1/') || s.startsWith('GET /admin/v1/'));
    expect(readOperations.length).toBeGreaterThan(50);
    for (const kind of ['POST ', 'PATCH ', 'PUT ', 'DELETE ']) expect([...sources].some((s) => s.startsWith(kind))).toBe(true);
    for (const loop of ['reconciler', 'scheduler', 'webhooks', 'statements', 'budgets', 'retention']) expect(sources).toContain(`pass ${loop}`);
    expect(corpus().queries.length).toBeGreaterThan(300);
  });

  it("runs every statement of the previous release's corpus without an error about the schema", async () => {
    const report = await replayCorpus(client, corpus().queries);
    // One line per failure: its SQLSTATE, message, what issued it and the statement's start, so a red run says which
    // migration broke what.
    expect(report.failures.map((f) => `${f.code} ${f.message} [${f.sources.join('; ')}] ${f.sql.replace(/\s+/g, ' ').slice(0, 160)}`)).toEqual([]);
    expect(report.ran).toBe(corpus().queries.length);
    for (const code of Object.keys(report.tolerated)) expect(Object.keys(TOLERATED_SQLSTATES)).toContain(code);
  });

  it('reports the statements a contracting migration breaks: a renamed column the previous release reads', async () => {
    const report = await replayCorpus(client, corpus().queries, { before: ['ALTER TABLE clusters RENAME COLUMN slug TO name_in_url'] });
    expect(report.failures.length).toBeGreaterThan(10);
    expect(new Set(report.failures.map((f) => f.code))).toEqual(new Set(['42703'])); // undefined_column
    const clusterRead = report.failures.find((f) => f.sources.includes('GET /api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}'));
    expect(clusterRead?.message).toMatch(/column .*slug does not exist/);
    // The background loops' reads are held too (the scheduler's plan joins the cluster's slug).
    expect(report.failures.some((f) => f.sources.some((s) => s.startsWith('pass ')))).toBe(true);
    // The change was rolled back with the replay: the schema is as migrated.
    const { rows } = await client.query(`SELECT column_name FROM information_schema.columns WHERE table_name = 'clusters' AND column_name IN ('slug', 'name_in_url')`);
    expect(rows).toEqual([{ column_name: 'slug' }]);
  });

  it('reports a dropped table, and a column added NOT NULL without a default that the previous release does not write', async () => {
    const dropped = await replayCorpus(client, corpus().queries, { before: ['DROP TABLE alert_silences'] });
    expect(dropped.failures.length).toBeGreaterThan(2);
    expect(dropped.failures.every((f) => f.code === '42P01' && /relation "alert_silences" does not exist/.test(f.message))).toBe(true); // undefined_table

    const required = await replayCorpus(client, corpus().queries, {
      before: ["ALTER TABLE environments ADD COLUMN tier text NOT NULL DEFAULT 'gold'", 'ALTER TABLE environments ALTER COLUMN tier DROP DEFAULT'],
    });
    const inserts = required.failures.filter((f) => /INSERT INTO "?environments"?/i.test(f.sql));
    expect(inserts.length).toBeGreaterThan(0);
    expect(inserts.every((f) => f.code === '23502' && /"tier"/.test(f.message))).toBe(true);
  });
});
