import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { UsageLedgerPerStatement1795400320100 } from '../../src/database/migrations/1795400320100-UsageLedgerPerStatement';
import { UsageLedgerRowUpdates1795400330100 } from '../../src/database/migrations/1795400330100-UsageLedgerRowUpdates';
import { UsageLedgerPoolResizes1795400340100 } from '../../src/database/migrations/1795400340100-UsageLedgerPoolResizes';
import { ledgerIntervalsCte } from '../../src/metering/usage-sql';
import { createTestDatabase } from '../support/test-app';
import { seededRandom } from '../support/seeded-random';

/**
 * The ledger's triggers as they are (statement triggers for inserts and deletes, docs/adr/0203; row triggers for priced
 * updates with a short path for a resize, docs/adr/0209) write the same ledger as the row triggers of UsageLedger
 * they replaced, row for row. Two databases from the migrated template, one taken back to those row triggers by the
 * migrations' down(), take the same pseudo-random statements (seeded, so a failure repeats):
 * multi-row inserts, updates and deletes of clusters and node pools, several pools of one cluster in one statement,
 * cascades, clocks that go back or stand still, unpriced changes, several statements in one transaction and
 * transactions that roll back; after each step their ledgers must be equal.
 */
const T0 = Date.parse('2026-05-01T00:00:00Z');
const STEPS = 400;

const uuid = (kind: number, n: number) => `00000000-0000-4000-8000-${kind.toString(16).padStart(4, '0')}${n.toString(16).padStart(8, '0')}`;

async function fixture(db: Client): Promise<{ org: string; env: string; account: string }> {
  await db.query(
    `INSERT INTO cloud_providers (slug, type, name, private_cluster_setting) VALUES ('platform-1', 'platform_1', 'Platform 1', 'UNAVAILABLE') ON CONFLICT DO NOTHING`,
  );
  const [profile] = (
    await db.query(
      `INSERT INTO cloud_profiles (identity, slug, display_name, type) VALUES ('00000000-0000-4000-8000-000000000001', 'ledger-diff', 'ledger diff', 'platform_1') RETURNING id`,
    )
  ).rows;
  const [org] = (
    await db.query(
      `INSERT INTO organisations (slug, name, type, clusters_per_customer, accepted_terms, created_at, modified_at)
       VALUES ('ledger-diff', 'ledger diff', 'ENTERPRISE', 1000000, true, now(), now()) RETURNING id`,
    )
  ).rows;
  const [env] = (
    await db.query(
      `INSERT INTO environments (organisation_id, slug, name, type, created_at, modified_at) VALUES ($1, 'production', 'production', 'production', now(), now()) RETURNING id`,
      [org.id],
    )
  ).rows;
  const [account] = (
    await db.query(
      `INSERT INTO cloud_accounts (organisation_id, cloud_profile_id, cloud_provider_type, display_name, created_at, modified_at)
       VALUES ($1, $2, 'platform_1', 'account', now(), now()) RETURNING id`,
      [org.id, profile.id],
    )
  ).rows;
  return { org: org.id, env: env.id, account: account.id };
}

/** A running cluster c1 (from 2026-05-01) with one node pool p1 of one node, on the fixture's organisation. */
async function runningClusterWithPool(db: Client): Promise<void> {
  const f = await fixture(db);
  await db.query(
    `INSERT INTO clusters (organisation_id, environment_id, cloud_account_id, identity, slug, name, region, cloud_provider, version, status,
                           highly_available, created_at, modified_at)
     VALUES (${f.org}, ${f.env}, ${f.account}, '${uuid(1, 1)}', 'c1', 'c1', 'r1', 'platform_1', '1.31', 'started', false, '2026-05-01Z', '2026-05-01Z')`,
  );
  await db.query(
    `INSERT INTO cluster_node_pools (cluster_id, identity, name, node_size, min_size, max_size, created_at, modified_at)
     SELECT id, '${uuid(2, 1)}', 'p1', 'small', 1, 5, '2026-05-01Z', '2026-05-01Z' FROM clusters WHERE slug = 'c1'`,
  );
}

/** Pseudo-random transactions of one to three statements, as SQL text (the same text runs on both databases). */
function workload(f: { org: string; env: string; account: string }, seed: number): { sql: string[]; rollback: boolean }[] {
  const rnd = seededRandom(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)];
  const some = <T>(xs: T[], max: number): T[] => {
    const n = 1 + Math.floor(rnd() * Math.min(max, xs.length));
    return [...new Set(Array.from({ length: n }, () => pick(xs)))];
  };
  const statuses = ['new', 'provisioning', 'started', 'starting', 'stopping', 'stopped', 'deleting', 'deleted', 'unknown'];
  const clusters: number[] = [];
  const pools = new Map<number, number>(); // pool number -> cluster number
  let nextCluster = 1;
  let nextPool = 1;
  let clock = T0;
  const ts = () => `'${new Date(clock).toISOString()}'::timestamptz`;
  const cid = (n: number) => `(SELECT id FROM clusters WHERE identity = '${uuid(1, n)}')`;
  const pid = (n: number) => `(SELECT id FROM cluster_node_pools WHERE identity = '${uuid(2, n)}')`;
  const steps: { sql: string[]; rollback: boolean }[] = [];

  for (let step = 0; step < STEPS; step++) {
    const sql: string[] = [];
    const statements = 1 + Math.floor(rnd() * (rnd() < 0.8 ? 1 : 3));
    for (let s = 0; s < statements; s++) {
      // The clock mostly moves on, sometimes stands still or goes back (a lagging replica).
      const move = rnd();
      clock += move < 0.15 ? 0 : move < 0.25 ? -Math.floor(rnd() * 20) * 60_000 : Math.floor(1 + rnd() * 90) * 60_000;
      const op = clusters.length === 0 ? 0 : Math.floor(rnd() * 10);
      if (op === 0) {
        const rows = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => {
          const n = nextCluster++;
          clusters.push(n);
          const status = pick(['new', 'new', 'started', 'stopped', 'deleting', 'unknown']);
          const before = status === 'unknown' ? pick(["'started'", "'stopped'", "'deleting'", 'NULL']) : 'NULL';
          return `(${f.org}, ${f.env}, ${f.account}, '${uuid(1, n)}', 'c${n}', 'c${n}', '${pick(['r1', 'r2'])}', 'platform_1', '1.31',
                  '${status}', ${before}, ${rnd() < 0.3}, ${ts()}, ${ts()})`;
        });
        sql.push(`INSERT INTO clusters (organisation_id, environment_id, cloud_account_id, identity, slug, name, region, cloud_provider, version,
                                        status, status_before_fault, highly_available, created_at, modified_at) VALUES ${rows.join(', ')}`);
      } else if (op === 1 || op === 2) {
        // Pools of one or more clusters, several of one cluster in one statement at different times (the first row's decides).
        const rows = some(clusters, 3).flatMap((c) =>
          Array.from({ length: 1 + Math.floor(rnd() * 2) }, (_, i) => {
            const n = nextPool++;
            pools.set(n, c);
            const at = new Date(clock + i * (rnd() < 0.5 ? 60_000 : -60_000)).toISOString();
            return `(${cid(c)}, '${uuid(2, n)}', 'p${n}', '${pick(['small', 'large'])}', ${Math.floor(rnd() * 4)}, 5, '${at}', '${at}')`;
          }),
        );
        sql.push(`INSERT INTO cluster_node_pools (cluster_id, identity, name, node_size, min_size, max_size, created_at, modified_at) VALUES ${rows.join(', ')}`);
      } else if ((op === 3 || op === 4) && pools.size > 0) {
        const chosen = some([...pools.keys()], 4);
        const set = pick([
          `min_size = (min_size + 1) % 4`,
          `node_size = CASE WHEN node_size = 'small' THEN 'large' ELSE 'small' END`,
          `max_size = max_size + 1`, // not priced
          `min_size = min_size`, // changes nothing
        ]);
        sql.push(`UPDATE cluster_node_pools SET ${set}, modified_at = ${ts()} WHERE identity IN (${chosen.map((p) => `'${uuid(2, p)}'`).join(', ')})`);
      } else if (op === 5 || op === 6) {
        const chosen = some(clusters, 4);
        const set = pick([
          `status = '${pick(statuses)}', status_before_fault = NULL`,
          `status = 'unknown', status_before_fault = '${pick(statuses.filter((x) => x !== 'unknown'))}'`,
          `status = CASE WHEN status = 'unknown' THEN COALESCE(status_before_fault, 'started') ELSE status END, status_before_fault = NULL`,
          `highly_available = NOT highly_available`,
          `region = CASE WHEN region = 'r1' THEN 'r2' ELSE 'r1' END`,
          `deleted_at = ${ts()}`,
          `description = 'not priced'`,
        ]);
        sql.push(`UPDATE clusters SET ${set}, modified_at = ${ts()} WHERE identity IN (${chosen.map((c) => `'${uuid(1, c)}'`).join(', ')})`);
      } else if (op === 7 && pools.size > 0) {
        // As the node-pool service does: touch the pools, then delete them; or delete them as they are. (Several pools
        // of one cluster deleted as they are, at different times, end its intervals at the time of the row the
        // statement meets first: the table's order, which two databases need not share; so not here.)
        const chosen = some([...pools.keys()], 3);
        const list = chosen.map((p) => `'${uuid(2, p)}'`).join(', ');
        const oneEach = new Set(chosen.map((p) => pools.get(p))).size === chosen.length;
        if (rnd() < 0.7 || !oneEach) sql.push(`UPDATE cluster_node_pools SET modified_at = ${ts()} WHERE identity IN (${list})`);
        sql.push(`DELETE FROM cluster_node_pools WHERE identity IN (${list})`);
        chosen.forEach((p) => pools.delete(p));
      } else if (op === 8) {
        // A cluster row removed (retention): its pools go by the cascade.
        const c = pick(clusters);
        sql.push(`UPDATE cluster_node_pools SET modified_at = ${ts()} WHERE cluster_id = ${cid(c)}`);
        sql.push(`DELETE FROM clusters WHERE identity = '${uuid(1, c)}'`);
        clusters.splice(clusters.indexOf(c), 1);
        [...pools].filter(([, pc]) => pc === c).forEach(([p]) => pools.delete(p));
      } else if (op === 9) {
        // Stopped, then started by a writer whose clock lags: the pools open again when they stopped, not before.
        const list = some(clusters, 3).map((c) => `'${uuid(1, c)}'`).join(', ');
        sql.push(`UPDATE clusters SET status = 'stopped', status_before_fault = NULL, modified_at = ${ts()} WHERE identity IN (${list})`);
        clock -= Math.floor(1 + rnd() * 30) * 60_000;
        sql.push(`UPDATE clusters SET status = 'started', modified_at = ${ts()} WHERE identity IN (${list})`);
      } else {
        sql.push(`UPDATE cluster_node_pools SET min_size = min_size + 1, modified_at = ${ts()} WHERE id = ${pid(pick([...pools.keys(), 0]))}`);
      }
    }
    if (rnd() < 0.05 && clusters.length > 0) {
      // A transaction that rolls back leaves both ledgers as they were.
      steps.push({ sql: [`UPDATE clusters SET status = 'stopped', modified_at = ${ts()} WHERE identity = '${uuid(1, pick(clusters))}'`], rollback: true });
    }
    steps.push({ sql, rollback: false });
  }
  return steps;
}

describe('usage ledger, statement triggers against the row triggers they replaced', () => {
  let statementDb: Client;
  let rowDb: Client;

  beforeEach(async () => {
    const [a, b] = [await createTestDatabase(), await createTestDatabase()];
    const ds = await new DataSource({ type: 'postgres', url: b }).initialize();
    const runner = ds.createQueryRunner();
    await new UsageLedgerPoolResizes1795400340100().down(runner);
    await new UsageLedgerRowUpdates1795400330100().down(runner);
    await new UsageLedgerPerStatement1795400320100().down(runner);
    await runner.release();
    await ds.destroy();
    statementDb = new Client({ connectionString: a });
    rowDb = new Client({ connectionString: b });
    await statementDb.connect();
    await rowDb.connect();
  });
  afterEach(async () => {
    await statementDb?.end();
    await rowDb?.end();
  });

  // One line per interval, so a difference reads as a diff of lines. By cluster, then by start, kind and pool, then by id:
  // ids order nothing the service reads, and two writers may number the same intervals differently (a statement that
  // writes several clusters takes them in the order of their rows in the table, which the two databases need not
  // share; the row triggers of an update of several pools of one cluster fire in the order its rows were written).
  // The ledger as today's readers take it (usage_intervals cut at the resizes recorded in them, ADR 0210); the row
  // triggers' database has no recorded resizes, and its usage_intervals is the whole ledger.
  const ledger = async (db: Client) =>
    (
      await db.query(
        `WITH ${db === statementDb ? ledgerIntervalsCte('true') : 'ledger AS (SELECT * FROM usage_intervals)'}
         SELECT concat_ws(' ', rank() OVER (PARTITION BY cluster_id ORDER BY started_at, kind, node_pool_id NULLS FIRST, id), kind, cluster_identity, cluster_slug, region, highly_available, node_pool_name, node_type, node_count,
                          started_at, ended_at, organisation_id, environment_id, environment_slug, cluster_id, cluster_name, cloud_provider,
                          node_pool_id, node_pool_identity) AS line
           FROM ledger ORDER BY cluster_id, started_at, kind, node_pool_id NULLS FIRST, id`,
      )
    ).rows.map((r) => r.line as string);
  const triggers = async (db: Client) =>
    (
      await db.query(
        `SELECT tgname, (tgtype & 1) = 1 AS per_row FROM pg_trigger WHERE tgrelid IN ('clusters'::regclass, 'cluster_node_pools'::regclass)
            AND tgname LIKE 'metering%' ORDER BY tgname`,
      )
    ).rows;

  it('runs row triggers on one database and statement triggers on the other', async () => {
    const names = ['metering_clusters_ins', 'metering_clusters_upd', 'metering_node_pools_del', 'metering_node_pools_ins', 'metering_node_pools_upd'];
    // Inserts and deletes per statement; updates per row, for a priced change only (UsageLedgerRowUpdates).
    expect(await triggers(statementDb)).toEqual(names.map((tgname) => ({ tgname, per_row: tgname.endsWith('_upd') })));
    expect(await triggers(rowDb)).toEqual(names.map((tgname) => ({ tgname, per_row: true })));
  });

  // docs/metering.md, ADR 0209 and ADR 0210: an unpriced update runs no ledger code; a resize of a running cluster's
  // pool runs only its trigger, which records it in one narrow row; the general way writes the recorded resizes out
  // first. The calls are PostgreSQL's own count for the transaction.
  it('runs no ledger code for an unpriced update, only the trigger for a resize, and writes resizes out on the general way', async () => {
    await runningClusterWithPool(statementDb);
    const functions = [
      'metering_cluster_updated()',
      'metering_node_pool_updated()',
      'metering_pool_resize_recorded(cluster_node_pools)',
      'metering_pool_resized(cluster_node_pools)',
      'metering_materialize_resizes(bigint[])',
      'metering_sync_clusters(bigint[], timestamptz[])',
      'metering_sync_intervals(bigint[], timestamptz[])',
    ];
    const calls = async () =>
      (
        await statementDb.query(`SELECT f, coalesce(pg_stat_get_xact_function_calls(f::regprocedure), 0)::int AS n FROM unnest($1::text[]) AS f`, [functions])
      ).rows.map((r) => `${r.f.split('(')[0]} ${r.n}`);
    const rows = async () =>
      (
        await statementDb.query(`SELECT (SELECT count(*) FROM usage_intervals)::int AS intervals, (SELECT count(*) FROM usage_pool_resizes)::int AS resizes`)
      ).rows[0];
    await statementDb.query(`BEGIN; SET LOCAL track_functions = 'pl'`);
    await statementDb.query(`UPDATE clusters SET description = 'not priced', generation = generation + 1, modified_at = '2026-05-02Z' WHERE slug = 'c1'`);
    await statementDb.query(`UPDATE cluster_node_pools SET max_size = 6, modified_at = '2026-05-02Z' WHERE name = 'p1'`);
    expect(await calls()).toEqual(functions.map((x) => `${x.split('(')[0]} 0`));
    await statementDb.query(`UPDATE cluster_node_pools SET min_size = 2, modified_at = '2026-05-03Z' WHERE name = 'p1'`);
    await statementDb.query(`UPDATE cluster_node_pools SET min_size = 3, modified_at = '2026-05-03T12:00Z' WHERE name = 'p1'`);
    expect(await calls()).toEqual([
      'metering_cluster_updated 0',
      'metering_node_pool_updated 2',
      'metering_pool_resize_recorded 2',
      'metering_pool_resized 0',
      'metering_materialize_resizes 0',
      'metering_sync_clusters 0',
      'metering_sync_intervals 0',
    ]);
    expect(await rows()).toEqual({ intervals: 2, resizes: 2 });
    await statementDb.query(`UPDATE clusters SET status = 'stopped', modified_at = '2026-05-04Z' WHERE slug = 'c1'`);
    expect(await calls()).toEqual([
      'metering_cluster_updated 1',
      'metering_node_pool_updated 2',
      'metering_pool_resize_recorded 2',
      'metering_pool_resized 0',
      'metering_materialize_resizes 1',
      'metering_sync_clusters 1',
      'metering_sync_intervals 1',
    ]);
    await statementDb.query('COMMIT');
    expect(await rows()).toEqual({ intervals: 4, resizes: 0 });
    const written = await statementDb.query(
      `SELECT kind, node_count::int AS n, to_char(started_at AT TIME ZONE 'UTC', 'DD HH24') AS "from", to_char(ended_at AT TIME ZONE 'UTC', 'DD HH24') AS "to"
         FROM usage_intervals ORDER BY kind, started_at`,
    );
    expect(written.rows).toEqual([
      { kind: 'CONTROL_PLANE', n: null, from: '01 00', to: '04 00' },
      { kind: 'NODES', n: 1, from: '01 00', to: '03 00' },
      { kind: 'NODES', n: 2, from: '03 00', to: '03 12' },
      { kind: 'NODES', n: 3, from: '03 12', to: '04 00' },
    ]);
  });

  // The recorded path's plan is made once per session and kept; one made while the statistics said usage_pool_resizes
  // was empty read the last resize by scanning and sorting the whole table, at a cost that grew with every resize.
  it('reads the last recorded resize through the index, however few rows the table held when the plan was made', async () => {
    await runningClusterWithPool(statementDb);
    const resize = (minute: number) =>
      statementDb.query(`UPDATE cluster_node_pools SET min_size = ${2 + (minute % 2)}, modified_at = $1 WHERE name = 'p1'`, [new Date(T0 + minute * 60_000)]);
    // Statistics that say the table is empty, as after an ANALYZE of the database at install or restore (bench/seed.ts).
    await statementDb.query(`ANALYZE usage_pool_resizes`);
    for (let minute = 1; minute <= 8; minute++) await resize(minute); // past the five custom plans: the generic one is kept
    await statementDb.query(`LOAD 'auto_explain'`);
    await statementDb.query(`SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on;
                             SET auto_explain.log_level = notice; SET client_min_messages = notice`);
    const plans: string[] = [];
    const collect = (m: { message?: string }) => plans.push(m.message ?? '');
    statementDb.on('notice', collect);
    try {
      await resize(9);
      expect((await statementDb.query(`SELECT count(*)::int AS n FROM usage_pool_resizes`)).rows[0].n).toBe(9);
      // The general way writes them out through the index too.
      await statementDb.query(`UPDATE clusters SET status = 'stopped', modified_at = $1 WHERE slug = 'c1'`, [new Date(T0 + 10 * 60_000)]);
    } finally {
      statementDb.off('notice', collect);
      await statementDb.query(`SET auto_explain.log_min_duration = -1; RESET client_min_messages`);
    }
    const recorded = plans.find((p) => p.includes('INSERT INTO usage_pool_resizes'));
    expect(recorded).toContain('Index Scan Backward using usage_pool_resizes_pkey');
    expect(recorded).not.toMatch(/Seq Scan on usage_pool_resizes|Sort Key: r\.resized_at/);
    const writtenOut = plans.find((p) => p.includes('DELETE FROM usage_pool_resizes'));
    expect(writtenOut).toMatch(/Index (Only )?Scan using usage_pool_resizes_pkey/);
    expect(writtenOut).not.toMatch(/Seq Scan on usage_pool_resizes/);
    expect((await statementDb.query(`SELECT count(*)::int AS n FROM usage_pool_resizes`)).rows[0].n).toBe(0);
    expect((await statementDb.query(`SELECT count(*)::int AS n FROM usage_intervals WHERE kind = 'NODES'`)).rows[0].n).toBe(10);
  });

  it('writes the same ledger for statements of hundreds of clusters (planned for their size), and leaves the session as it was', async () => {
    const f = await fixture(statementDb);
    expect(await fixture(rowDb)).toEqual(f);
    const at = (minutes: number) => `'${new Date(T0 + minutes * 60_000).toISOString()}'::timestamptz`;
    const statements = [
      `INSERT INTO clusters (organisation_id, environment_id, cloud_account_id, identity, slug, name, region, cloud_provider, version, status,
                             highly_available, created_at, modified_at)
       SELECT ${f.org}, ${f.env}, ${f.account}, ('00000000-0000-4000-8000-0001' || lpad(to_hex(g), 8, '0'))::uuid, 'b' || g, 'b' || g,
              CASE WHEN g % 3 = 0 THEN 'r2' ELSE 'r1' END, 'platform_1', '1.31', CASE WHEN g % 7 = 0 THEN 'stopped' ELSE 'new' END, g % 2 = 0, ${at(0)}, ${at(0)}
         FROM generate_series(1, 300) AS g`,
      `INSERT INTO cluster_node_pools (cluster_id, identity, name, node_size, min_size, max_size, created_at, modified_at)
       SELECT c.id, ('00000000-0000-4000-8000-0002' || lpad(to_hex(c.id::int * 2 + p), 8, '0'))::uuid, 'p' || p, 'small', p + 1, 5, ${at(1)}, ${at(1)}
         FROM clusters c CROSS JOIN generate_series(0, 1) AS p`,
      `UPDATE cluster_node_pools SET min_size = min_size + 1, modified_at = ${at(60)} WHERE name = 'p0'`,
      `UPDATE clusters SET status = 'started', modified_at = ${at(61)} WHERE status = 'new'`,
      `UPDATE clusters SET status = 'stopped', modified_at = ${at(120)} WHERE slug LIKE 'b1%'`,
      `UPDATE clusters SET highly_available = NOT highly_available, modified_at = ${at(120)}`,
      `UPDATE cluster_node_pools SET modified_at = ${at(180)} WHERE name = 'p1'`,
      `DELETE FROM cluster_node_pools WHERE name = 'p1'`,
      `UPDATE clusters SET status = 'started', modified_at = ${at(170)} WHERE slug LIKE 'b1%'`,
    ];
    for (const sql of statements) {
      await statementDb.query(sql);
      await rowDb.query(sql);
      expect(await ledger(statementDb)).toEqual(await ledger(rowDb));
    }
    expect((await statementDb.query(`SELECT count(*)::int AS n FROM usage_intervals`)).rows[0].n).toBeGreaterThan(1000);
    expect((await statementDb.query(`SHOW plan_cache_mode`)).rows[0].plan_cache_mode).toBe('auto');
  });

  // Priced updates fire row triggers, and a resize of a running cluster's pool ends and reopens that pool's interval
  // alone (migration UsageLedgerRowUpdates, docs/adr/0209); every other case goes the general way. Each branch of
  // both, against the original row triggers: a resize that ends the interval, one at the same time and one with the
  // clock gone back (general: changed in place), a node type change, names changed before a resize (the new interval
  // takes the current ones), pools of a stopped, faulted, deleting and never-started cluster, unpriced and unchanged
  // updates, and a ledger out of line with its rows.
  it('writes the same ledger for the single-row paths: each kind of resize and of cluster change', async () => {
    const f = await fixture(statementDb);
    expect(await fixture(rowDb)).toEqual(f);
    const at = (minutes: number) => `'${new Date(T0 + minutes * 60_000).toISOString()}'::timestamptz`;
    const cluster = (n: number, status: string, before: string | null, minutes: number) =>
      `INSERT INTO clusters (organisation_id, environment_id, cloud_account_id, identity, slug, name, region, cloud_provider, version, status,
                             status_before_fault, highly_available, created_at, modified_at)
       VALUES (${f.org}, ${f.env}, ${f.account}, '${uuid(1, n)}', 'c${n}', 'Cluster ${n}', 'r1', 'platform_1', '1.31', '${status}',
               ${before ? `'${before}'` : 'NULL'}, false, ${at(minutes)}, ${at(minutes)})`;
    const pools = (n: number, minutes: number) =>
      `INSERT INTO cluster_node_pools (cluster_id, identity, name, node_size, min_size, max_size, created_at, modified_at)
       SELECT id, ('00000000-0000-4000-8000-0002' || lpad(to_hex(${n} * 10 + p), 8, '0'))::uuid, 'p' || p, 'small', p + 1, 9, ${at(minutes)}, ${at(minutes)}
         FROM clusters, generate_series(0, 1) AS p WHERE slug = 'c${n}'`;
    const pool = (n: number, p: number, set: string, minutes: number) =>
      `UPDATE cluster_node_pools SET ${set}, modified_at = ${at(minutes)} WHERE identity = ('00000000-0000-4000-8000-0002' || lpad(to_hex(${n} * 10 + ${p}), 8, '0'))::uuid`;
    const update = (n: number, set: string, minutes: number) => `UPDATE clusters SET ${set}, modified_at = ${at(minutes)} WHERE slug = 'c${n}'`;
    const statements = [
      cluster(1, 'started', null, 0),
      pools(1, 1),
      pool(1, 0, 'min_size = 5', 10), // ends the interval, opens the next
      pool(1, 0, 'min_size = 6', 10), // the same time: changed in place
      pool(1, 0, 'min_size = 7', 5), // the clock went back: changed in place
      pool(1, 0, `node_size = 'large'`, 20),
      pool(1, 1, 'max_size = 12', 21), // not priced
      pool(1, 1, 'min_size = min_size', 22), // changes nothing
      update(1, `name = 'Renamed', slug = 'c1'`, 23), // not priced
      `UPDATE environments SET slug = 'prod' WHERE id = ${f.env}`,
      pool(1, 1, `name = 'renamed', min_size = 4`, 30), // the new interval takes the current names
      update(1, `status = 'stopped'`, 40),
      pool(1, 1, 'min_size = 3', 45), // stopped: nothing opens
      update(1, `status = 'started'`, 50),
      pool(1, 1, 'min_size = 2', 60),
      update(1, `region = 'r2'`, 61),
      pool(1, 0, 'min_size = 1', 62),
      update(1, `highly_available = true`, 63),
      update(1, `status = 'unknown', status_before_fault = 'started'`, 70),
      pool(1, 0, 'min_size = 0', 71), // faulted while running: still billed
      update(1, `status = 'deleting', status_before_fault = NULL`, 80),
      pool(1, 0, 'min_size = 3', 81), // deleting what ran: still billed
      update(1, `deleted_at = ${at(90)}`, 90),
      pool(1, 0, 'min_size = 4', 91),
      cluster(2, 'deleting', null, 100), // never ran
      pools(2, 100),
      pool(2, 0, 'min_size = 4', 101),
      cluster(3, 'unknown', 'stopped', 100),
      pools(3, 100),
      pool(3, 1, 'min_size = 4', 102),
      update(3, `status = 'started', status_before_fault = NULL`, 103),
      pool(3, 1, 'min_size = 5', 103), // at the time it started: changed in place
      `DELETE FROM cluster_node_pools WHERE identity = ('00000000-0000-4000-8000-0002' || lpad(to_hex(31), 8, '0'))::uuid`,
      // A ledger out of line with its rows (written with the triggers off): a resize goes the general way, which puts
      // the whole cluster in line, whenever the pool's interval would bill what no longer runs.
      cluster(4, 'started', null, 110),
      pools(4, 110),
      ...[`status = 'stopped'`, `status = 'deleted'`, `region = 'r3'`, `status = 'started', deleted_at = ${at(119)}`].flatMap((set, k) => [
        `SET session_replication_role = replica; ${update(4, set, 120 + k * 10)}; SET session_replication_role = DEFAULT`,
        pool(4, 0, `min_size = ${5 + k}`, 121 + k * 10),
        `SET session_replication_role = replica; ${update(4, `status = 'started', deleted_at = NULL, region = 'r1'`, 122 + k * 10)}; SET session_replication_role = DEFAULT`,
        update(4, `status = 'stopped'`, 123 + k * 10),
        update(4, `status = 'started'`, 124 + k * 10),
      ]),
      // The pool's row changed with the triggers off and changed back: its interval already matches, and stays.
      `SET session_replication_role = replica; ${pool(4, 1, 'min_size = min_size + 3', 160)}; SET session_replication_role = DEFAULT`,
      pool(4, 1, 'min_size = min_size - 3', 161),
      `SET session_replication_role = replica; ${update(4, `status = 'deleting'`, 170)};
       UPDATE usage_intervals SET ended_at = ${at(170)} WHERE cluster_slug = 'c4' AND kind = 'CONTROL_PLANE' AND ended_at IS NULL;
       SET session_replication_role = DEFAULT`,
      pool(4, 1, 'min_size = 1', 171),
      // Resizes recorded in an open interval (ADR 0210), and each way the general way meets them.
      cluster(5, 'started', null, 200),
      pools(5, 200),
      pool(5, 0, 'min_size = 3', 201), // recorded
      pool(5, 0, 'min_size = 4', 202), // recorded
      pool(5, 0, 'min_size = 5', 201), // the clock went back behind the last recorded one: written out, changed in place
      pool(5, 1, 'min_size = 6', 203), // recorded
      pool(5, 1, 'min_size = 7', 204), // recorded: two in one interval
      update(5, `name = 'Five'`, 205), // not priced
      pool(5, 1, 'min_size = 8', 206), // the names differ from the interval's: the general way, the next takes them
      pool(5, 1, 'min_size = 9', 207), // recorded again
      pool(5, 1, 'min_size = 8', 207), // at the time of the recorded one: written out, changed in place
      pool(5, 0, 'min_size = 2', 208), // the cluster's name differs from the interval's: the general way
      pool(5, 0, 'min_size = 3', 209), // recorded
      pool(5, 0, `node_size = 'large'`, 210), // a node type: written out, then the node-type path
      pool(5, 0, 'min_size = 4', 211), // recorded
      pool(5, 1, 'min_size = 7', 211), // recorded
      `SET session_replication_role = replica; ${pool(5, 0, 'min_size = 9', 212)}; SET session_replication_role = DEFAULT`,
      pool(5, 0, 'min_size = 4', 213), // back to the recorded count: written out, and the general way keeps the interval
      pool(5, 0, 'min_size = 5', 214), // recorded
      `SET session_replication_role = replica; ${pool(5, 0, `node_size = 'small'`, 214.5)}; SET session_replication_role = DEFAULT`,
      pool(5, 0, 'min_size = 6', 214.7), // the pool's node type is not the interval's: written out, the general way
      `UPDATE cluster_node_pools SET modified_at = ${at(215)} WHERE identity = ('00000000-0000-4000-8000-0002' || lpad(to_hex(51), 8, '0'))::uuid;
       DELETE FROM cluster_node_pools WHERE identity = ('00000000-0000-4000-8000-0002' || lpad(to_hex(51), 8, '0'))::uuid`, // written out, ended
      pool(5, 0, 'min_size = 7', 216), // recorded
      update(5, `region = 'r2'`, 217), // written out, ended, reopened
      pool(5, 0, 'min_size = 8', 218), // recorded
      update(5, `status = 'stopped'`, 219), // written out, ended
      update(5, `status = 'started'`, 220),
      pool(5, 0, 'min_size = 9', 221), // recorded
      `UPDATE cluster_node_pools SET modified_at = ${at(222)} WHERE cluster_id = (SELECT id FROM clusters WHERE slug = 'c5');
       DELETE FROM clusters WHERE slug = 'c5'`, // the cascade: written out, ended
    ];
    let recorded = 0;
    for (const [i, sql] of statements.entries()) {
      await statementDb.query(sql);
      await rowDb.query(sql);
      const [s, r] = [await ledger(statementDb), await ledger(rowDb)];
      if (s.join('\n') !== r.join('\n')) expect({ step: i, sql, ledger: s }).toEqual({ step: i, sql, ledger: r });
      recorded = Math.max(recorded, (await statementDb.query(`SELECT count(*)::int AS n FROM usage_pool_resizes`)).rows[0].n);
    }
    // Resizes were recorded, and every one was written out by the end (the last cluster went).
    expect(recorded).toBe(2);
    expect((await statementDb.query(`SELECT count(*)::int AS n FROM usage_pool_resizes`)).rows[0].n).toBe(0);
    // The statements did reach every branch: intervals changed in place, ended and reopened, with the current names.
    const lines = await ledger(statementDb);
    expect(lines.filter((l) => l.includes(' p0 ')).length).toBeGreaterThan(5);
    expect(lines.some((l) => l.includes(' renamed ') && l.includes(' Renamed') && l.includes(' prod '))).toBe(true);
  });

  it.each([1, 2, 3, 4])('writes the same ledger, row for row, through pseudo-random workload %i (400 transactions)', async (seed) => {
    const f = await fixture(statementDb);
    expect(await fixture(rowDb)).toEqual(f);
    let compared = 0;
    let [recorded, pending, writtenOut] = [0, 0, 0];
    for (const [i, step] of workload(f, seed).entries()) {
      for (const db of [statementDb, rowDb]) {
        await db.query('BEGIN');
        try {
          for (const sql of step.sql) await db.query(sql);
        } catch (e) {
          await db.query('ROLLBACK');
          throw new Error(`step ${i}: ${(e as Error).message}\n${step.sql.join(';\n')}`);
        }
        await db.query(step.rollback ? 'ROLLBACK' : 'COMMIT');
      }
      const [s, r] = [await ledger(statementDb), await ledger(rowDb)];
      if (s.join('\n') !== r.join('\n')) {
        // Received: the statement triggers' ledger; expected: the row triggers'.
        expect({ step: i, sql: step.sql, ledger: s }).toEqual({ step: i, sql: step.sql, ledger: r });
      }
      compared = s.length;
      const n = (await statementDb.query(`SELECT count(*)::int AS n FROM usage_pool_resizes`)).rows[0].n;
      if (n < pending) writtenOut++;
      recorded = Math.max(recorded, n);
      pending = n;
    }
    // Resizes were recorded in open intervals, and the general way wrote them out.
    expect(recorded).toBeGreaterThan(0);
    expect(writtenOut).toBeGreaterThan(0);
    // The workload did write a ledger worth comparing: open, closed, both kinds.
    const kinds = (await statementDb.query(`SELECT kind, ended_at IS NULL AS open, count(*)::int AS n FROM usage_intervals GROUP BY 1, 2 ORDER BY 1, 2`)).rows;
    expect(kinds.map((k) => `${k.kind}/${k.open}`)).toEqual(['CONTROL_PLANE/false', 'CONTROL_PLANE/true', 'NODES/false', 'NODES/true']);
    expect(compared).toBeGreaterThan(100);
  });
});
