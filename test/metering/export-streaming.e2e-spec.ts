import { Readable } from 'stream';
import type { QueryRunner } from 'typeorm';
import { EXPORT_BATCH_ROWS, UsageExportService } from '../../src/metering/usage-export.service';
import type { OrganisationEntity } from '../../src/identity/organisation.entity';
import { createOrgFixture, OrgFixture } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';
import { parseFocusCsv, validateFocus } from './focus-validator';

/**
 * Issue 41 step 4, "streamed (no whole-month buffer in memory)" (ADR 0202, 0204): the FOCUS export reads its cursor
 * only as fast as its reader takes the lines. A reader that has taken the first chunk finds at most a few batches
 * fetched of a month many batches long (an export that read the month before writing, or read ahead of its reader,
 * fails here); read to the end, every line comes once, and the connection goes back to the pool; a reader that goes
 * away early ends the cursor's transaction and releases the connection. No clock is read: the test waits for the
 * stream's buffer to fill, not for time to pass.
 */
describe('the FOCUS export streams its cursor', () => {
  let t: TestApp;
  let f: OrgFixture;
  let org: OrganisationEntity;
  const BATCHES = 8;
  const LINES = EXPORT_BATCH_ROWS * BATCHES + 5;
  /** Rows the FETCHes of the export returned so far, and the query runners that declared its cursor. */
  let fetched: number;
  let runners: QueryRunner[];

  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
    // Rename the organisation so that the CSV has to quote a field (a comma and a quote in BillingAccountName).
    await t.db.query(`UPDATE organisations SET name = 'Acme, "the" org' WHERE id = $1`, [f.orgId]);
    [org] = await t.db.query(`SELECT * FROM organisations WHERE id = $1`, [f.orgId]);
    t.clock.set(new Date('2026-05-03T00:00:00Z'));
    // One control plane interval per (made-up) cluster, all of April: one line each.
    await t.db.query(
      `INSERT INTO usage_intervals (kind, organisation_id, environment_id, environment_slug, cluster_id, cluster_identity, cluster_slug, cluster_name,
                                    cloud_provider, region, highly_available, started_at, ended_at)
       SELECT 'CONTROL_PLANE', $1, $2, $3, 900000000 + g, gen_random_uuid(), 'c-' || g, 'c-' || g, 'platform_1', 'eu-central-1', false,
              '2026-04-01T00:00:00Z', '2026-04-20T00:00:00Z'
         FROM generate_series(1, $4::int) AS g`,
      [f.orgId, f.envId, f.envSlug, LINES],
    );
  });

  afterAll(async () => {
    await t?.close();
  });

  beforeEach(() => {
    fetched = 0;
    runners = [];
    const create = t.db.createQueryRunner.bind(t.db);
    jest.spyOn(t.db, 'createQueryRunner').mockImplementation((...args) => {
      const runner = create(...args);
      const query = runner.query.bind(runner);
      runner.query = (async (sql: string, ...rest: unknown[]) => {
        const result = await (query as (...a: unknown[]) => Promise<unknown>)(sql, ...rest);
        if (/^FETCH /.test(sql)) fetched += (result as unknown[]).length;
        return result;
      }) as QueryRunner['query'];
      const declare = runner.query;
      runner.query = ((sql: string, ...rest: unknown[]) => {
        if (/^DECLARE /.test(sql)) runners.push(runner);
        return (declare as (...a: unknown[]) => Promise<unknown>)(sql, ...rest);
      }) as QueryRunner['query'];
      return runner;
    });
  });

  afterEach(() => jest.restoreAllMocks());

  const open = async (format: 'focus-csv' | 'focus-json') =>
    (await t.get(UsageExportService).export(org, '2026-04', format)).getStream() as Readable;

  /** Resolves once the stream holds what its mark allows (it reads no further until read) or has read everything. */
  const settled = async (stream: Readable) => {
    while (stream.readableLength < stream.readableHighWaterMark && fetched < LINES && !stream.destroyed) {
      await new Promise((resolve) => setImmediate(resolve));
    }
  };

  /** The first chunk, the stream paused at once (in flowing mode the next ones would go to no listener). */
  const firstChunk = (stream: Readable) =>
    new Promise<unknown>((resolve) =>
      stream.once('data', (c) => {
        stream.pause();
        resolve(c);
      }),
    );

  const chunkText = (c: unknown) => (typeof c === 'string' ? c : (c as Buffer).toString('utf8'));

  it('fetches no more than it has been asked for: a reader holding back leaves the cursor a batch or two ahead', async () => {
    const stream = await open('focus-csv');
    const first = await firstChunk(stream);
    await settled(stream);
    expect(chunkText(first)).toMatch(/^BilledCost,BillingAccountId,/);
    expect(fetched).toBeGreaterThan(0);
    expect(fetched).toBeLessThanOrEqual(2 * EXPORT_BATCH_ROWS);
    expect(fetched).toBeLessThan(LINES);
    expect(runners).toHaveLength(1);
    expect(runners[0].isReleased).toBe(false);

    // Taking one more chunk lets it fetch at most one more batch.
    const before = fetched;
    let text = chunkText(first) + chunkText(stream.read());
    await settled(stream);
    expect(fetched).toBeLessThanOrEqual(before + EXPORT_BATCH_ROWS);

    // Read to the end: every line once, in a valid FOCUS file, and the connection released.
    for await (const c of stream) text += chunkText(c);
    const { columns, rows } = parseFocusCsv(text);
    expect(validateFocus(columns, rows)).toEqual([]);
    expect(rows).toHaveLength(LINES);
    expect(new Set(rows.map((r) => r.ResourceName)).size).toBe(LINES);
    expect(rows[0].BillingAccountName).toBe('Acme, "the" org');
    expect(fetched).toBe(LINES);
    expect(runners[0].isReleased).toBe(true);
  });

  it('writes the JSON form in the same batches, each line a FOCUS row', async () => {
    const stream = await open('focus-json');
    let text = '';
    let chunks = 0;
    for await (const c of stream) {
      text += chunkText(c);
      chunks++;
    }
    const parsed = JSON.parse(text) as Record<string, unknown>[];
    expect(parsed).toHaveLength(LINES);
    expect(validateFocus(Object.keys(parsed[0]), parsed as never)).toEqual([]);
    expect(parsed[0]).toMatchObject({ BillingAccountName: 'Acme, "the" org', ChargeClass: null, Tags: { 'cms/environment': f.envSlug, 'cms/cluster': 'c-1' } });
    // '[' , one chunk per batch, ']': the lines were written as they were fetched, not once at the end.
    expect(chunks).toBe(Math.ceil(LINES / EXPORT_BATCH_ROWS) + 2);
    expect(runners[0].isReleased).toBe(true);
  });

  it('ends the cursor and releases the connection when the reader goes away early', async () => {
    const stream = await open('focus-json');
    await firstChunk(stream);
    await settled(stream);
    expect(runners[0].isReleased).toBe(false);
    const closed = new Promise((resolve) => stream.once('close', resolve));
    stream.destroy();
    await closed;
    expect(runners[0].isReleased).toBe(true);
    expect(fetched).toBeLessThan(LINES);
    // The pool's connections are all usable: nothing is left inside the export's transaction.
    const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND datname = current_database()`);
    expect(n).toBe(0);
  });
});
