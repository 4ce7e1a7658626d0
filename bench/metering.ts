import 'reflect-metadata';
import * as fs from 'fs';
import { ClsService } from 'nestjs-cls';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import { Readable, Writable } from 'stream';
import { pipeline } from 'stream/promises';
import { Clock } from '../src/common/clock';
import type { OrganisationEntity } from '../src/identity/organisation.entity';
import { StatementsService } from '../src/metering/statements.service';
import { ledgerIntervalsCte } from '../src/metering/usage-sql';
import { UsageExportService } from '../src/metering/usage-export.service';
import { UsageService } from '../src/metering/usage.service';
import { startInProcessService } from './in-process-service';
import { seedClusters } from './seed';

/**
 * npm run bench:metering — the usage query and the FOCUS export of an organisation with 10,000 clusters over a month.
 *
 * A fresh embedded PostgreSQL, the application booted in-process (with the service's young-generation bound,
 * package.json config.nodeFlags, and a larger old generation), BENCH_CLUSTERS clusters (two node pools each)
 * seeded in SQL (bench/seed.ts; the ledger's triggers record them), their usage reaching back over the whole month
 * (each workers pool at 3 nodes for the first half, then 2: two intervals per pool) and a price book with a price
 * change mid-month. Measured, each the median of BENCH_REPEAT runs: the usage query grouped by cluster and by day,
 * the open statement, and the FOCUS export (CSV and JSON) read to the end as the HTTP reply reads it: time, rows per
 * second, the peak RSS above the RSS before it and the peak of V8's heap and external memory above theirs (sampled
 * every 20 ms). Then the ledger's cost on writes (measureWriteOverhead): each
 * statement shape of clusters and node pools timed with the ledger's triggers and, in the same run on the same
 * database, with them disabled, as a ratio. Writes bench/results/metering.json (BENCH_OUT) with the machine's load.
 */
const ROOT = path.resolve(__dirname, '..');
const CLUSTERS = Number(process.env.BENCH_CLUSTERS ?? 10_000);
/** BENCH_ONLY=export: only the FOCUS export (and the write overhead only with BENCH_WRITES=1; BENCH_WRITES=0 skips it). */
const ONLY_EXPORT = process.env.BENCH_ONLY === 'export';
/** BENCH_FORMATS: the export formats measured, in order (default focus-csv,focus-json). */
const FORMATS = (process.env.BENCH_FORMATS ?? 'focus-csv,focus-json').split(',') as ('focus-csv' | 'focus-json')[];
const REPEAT = Number(process.env.BENCH_REPEAT ?? 3);
const MONTH_START = new Date('2026-10-01T00:00:00Z');
const MONTH_END = new Date('2026-11-01T00:00:00Z');
const NOW = new Date('2026-11-01T00:30:00Z'); // the month is over, not yet closed: everything computed from the ledger

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function measure<T>(fn: () => Promise<T>): Promise<{ ms: number; peakRssMb: number; peakHeapMb: number; result: T }> {
  const before = process.memoryUsage();
  let peak = before.rss;
  let peakHeap = before.heapUsed + before.external;
  const sample = () => {
    const m = process.memoryUsage();
    peak = Math.max(peak, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed + m.external);
  };
  const timer = setInterval(sample, 20);
  const t0 = process.hrtime.bigint();
  const result = await fn();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  clearInterval(timer);
  sample();
  const mb = (bytes: number) => +(bytes / 1048576).toFixed(1);
  return { ms: +ms.toFixed(1), peakRssMb: mb(peak - before.rss), peakHeapMb: mb(peakHeap - before.heapUsed - before.external), result };
}

/**
 * Reads an export to the end as the HTTP reply does (Fastify pipes the stream into the response), counting bytes and
 * lines. Not with for await, which no reply uses: read that way, the chunks outlived the young generation in
 * measurements where a piped read of the same stream did not (ADR 0204).
 */
async function drain(stream: Readable): Promise<{ bytes: number; lines: number }> {
  let bytes = 0;
  let lines = 0;
  const sink = new Writable({
    objectMode: true,
    write(chunk: string | Buffer, _encoding, callback) {
      const s = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
      bytes += Buffer.byteLength(s);
      for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) lines++;
      callback();
    },
  });
  await pipeline(stream, sink);
  return { bytes, lines };
}

interface WriteShape {
  name: string;
  /** 1 for a single-row statement, else the rows it writes. */
  rows: number;
  /** Run inside a transaction that is rolled back; returns the statement to time and its parameters. */
  prepare(db: Client, rep: number): Promise<[string, unknown[]]>;
}

/**
 * The ledger's cost on writes: each statement shape runs in a transaction that is rolled back (the database stays as
 * seeded), timed from the client (so a single-row statement includes its round trip, as an application's write does),
 * with the ledger's triggers (every trigger on clusters and cluster_node_pools whose function is a `metering_*` one)
 * enabled and disabled, the two sides interleaved run by run so both share the machine's other work (blocks of one
 * side and then the other measured the neighbours' bursts as much as the triggers). Every other trigger (generations,
 * counts, notifications) stays on both sides. Reports the median ms per statement and on ÷ off.
 */
async function measureWriteOverhead(db: Client, organisationId: string): Promise<Record<string, unknown>[]> {
  const singleReps = Number(process.env.BENCH_WRITE_SINGLE_REPS ?? 60);
  const bulkReps = Number(process.env.BENCH_WRITE_BULK_REPS ?? 12);
  const triggers = (
    await db.query(
      `SELECT t.tgname AS name, t.tgrelid::regclass::text AS tbl FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
        WHERE NOT t.tgisinternal AND p.proname LIKE 'metering\\_%' AND t.tgrelid IN ('clusters'::regclass, 'cluster_node_pools'::regclass)
        ORDER BY 2, 1`,
    )
  ).rows as { name: string; tbl: string }[];
  if (triggers.length === 0) throw new Error('no ledger triggers found');
  const setLedger = async (on: boolean) => {
    for (const t of triggers) await db.query(`ALTER TABLE ${t.tbl} ${on ? 'ENABLE' : 'DISABLE'} TRIGGER ${t.name}`);
  };
  const [tpl] = (
    await db.query(
      `SELECT c.environment_id, c.cloud_account_id, c.cloud_credentials_id, c.region, c.version, p.node_size
         FROM clusters c JOIN cluster_node_pools p ON p.cluster_id = c.id WHERE c.organisation_id = $1 ORDER BY c.id LIMIT 1`,
      [organisationId],
    )
  ).rows;
  const clusterIds = (await db.query(`SELECT id FROM clusters WHERE organisation_id = $1 AND deleted_at IS NULL ORDER BY id`, [organisationId])).rows.map(
    (r) => String(r.id),
  );
  const poolIds = (
    await db.query(`SELECT p.id FROM cluster_node_pools p JOIN clusters c ON c.id = p.cluster_id WHERE c.organisation_id = $1 AND p.name = 'workers' ORDER BY p.id`, [
      organisationId,
    ])
  ).rows.map((r) => String(r.id));
  // A different slice of the seeded rows for each repetition (a bulk statement takes 1,000 consecutive ones).
  const pick = (ids: string[], rep: number, n: number) => {
    const start = ((rep * 7919) % Math.max(1, ids.length - n)) | 0;
    return ids.slice(start, start + n);
  };
  let serial = 0;
  const insertClusters = (n: number) => [
    `INSERT INTO clusters (organisation_id, environment_id, cloud_account_id, cloud_credentials_id, slug, name, region, cloud_provider,
                           version, status, provision_status, created_at, modified_at)
     SELECT $1, $2, $3, $4, 'w-' || $7::text || '-' || g, 'w-' || g, $5, 'platform_1', $6, 'new', 'ACCEPTED', now(), now()
       FROM generate_series(1, ${n}) AS g`,
    [organisationId, tpl.environment_id, tpl.cloud_account_id, tpl.cloud_credentials_id, tpl.region, tpl.version, String(++serial)],
  ];
  const shapes: WriteShape[] = [
    { name: 'insert cluster, 1 row', rows: 1, prepare: async () => insertClusters(1) as [string, unknown[]] },
    { name: 'insert clusters, 1,000 rows', rows: 1000, prepare: async () => insertClusters(1000) as [string, unknown[]] },
    {
      name: 'insert node pool, 1 row',
      rows: 1,
      prepare: async (_db, rep) => [
        `INSERT INTO cluster_node_pools (cluster_id, name, node_size, min_size, max_size, provision_status, created_at, modified_at)
         VALUES ($1, 'extra', $2, 1, 3, 'ACCEPTED', now(), now())`,
        [pick(clusterIds, rep, 1)[0], tpl.node_size],
      ],
    },
    {
      name: 'insert node pools, 1,000 rows (1,000 clusters)',
      rows: 1000,
      prepare: async (_db, rep) => [
        `INSERT INTO cluster_node_pools (cluster_id, name, node_size, min_size, max_size, provision_status, created_at, modified_at)
         SELECT id, 'extra', $2, 1, 3, 'ACCEPTED', now(), now() FROM unnest($1::bigint[]) AS id`,
        [pick(clusterIds, rep, 1000), tpl.node_size],
      ],
    },
    {
      name: 'resize node pool (min_size), 1 row',
      rows: 1,
      prepare: async (_db, rep) => [`UPDATE cluster_node_pools SET min_size = min_size + 1, modified_at = now() WHERE id = $1`, [pick(poolIds, rep, 1)[0]]],
    },
    {
      name: 'resize node pools (min_size), 1,000 rows',
      rows: 1000,
      prepare: async (_db, rep) => [`UPDATE cluster_node_pools SET min_size = min_size + 1, modified_at = now() WHERE id = ANY($1::bigint[])`, [pick(poolIds, rep, 1000)]],
    },
    {
      name: 'update cluster, unpriced column (description), 1 row',
      rows: 1,
      prepare: async (_db, rep) => [`UPDATE clusters SET description = 'w' || $2::text, modified_at = now() WHERE id = $1`, [pick(clusterIds, rep, 1)[0], String(rep)]],
    },
    {
      name: 'update clusters, unpriced column (observed_at), 1,000 rows',
      rows: 1000,
      prepare: async (_db, rep) => [`UPDATE clusters SET observed_at = now() WHERE id = ANY($1::bigint[])`, [pick(clusterIds, rep, 1000)]],
    },
    {
      name: 'stop clusters (status), 1,000 rows',
      rows: 1000,
      prepare: async (_db, rep) => [`UPDATE clusters SET status = 'stopped', modified_at = now() WHERE id = ANY($1::bigint[])`, [pick(clusterIds, rep, 1000)]],
    },
    {
      name: 'delete node pool, 1 row',
      rows: 1,
      prepare: async (_db, rep) => [`DELETE FROM cluster_node_pools WHERE id = $1`, [pick(poolIds, rep, 1)[0]]],
    },
    {
      name: 'delete node pools, 1,000 rows',
      rows: 1000,
      prepare: async (_db, rep) => [`DELETE FROM cluster_node_pools WHERE id = ANY($1::bigint[])`, [pick(poolIds, rep, 1000)]],
    },
  ];
  const times = new Map<string, { on: number[]; off: number[] }>(shapes.map((s) => [s.name, { on: [], off: [] }]));
  let rep = 0;
  let ledgerOn = true;
  const run = async (shape: WriteShape): Promise<number> => {
    await db.query('BEGIN');
    try {
      const [sql, params] = await shape.prepare(db, ++rep);
      const t0 = process.hrtime.bigint();
      await db.query(sql, params);
      return Number(process.hrtime.bigint() - t0) / 1e6;
    } finally {
      await db.query('ROLLBACK');
    }
  };
  try {
    for (const shape of shapes) {
      const reps = shape.rows === 1 ? singleReps : bulkReps;
      for (let i = 0; i < reps; i++) {
        for (const on of i % 2 === 0 ? [true, false] : [false, true]) {
          if (on !== ledgerOn) {
            // ALTER TABLE invalidates the cached plans of both sides: one untimed run plans them again.
            await setLedger((ledgerOn = on));
            await run(shape);
          }
          times.get(shape.name)![on ? 'on' : 'off'].push(await run(shape));
        }
      }
    }
  } finally {
    await setLedger(true);
  }
  return shapes.map((s) => {
    const t = times.get(s.name)!;
    const on = median(t.on);
    const off = median(t.off);
    return { name: s.name, rows: s.rows, samples: t.on.length, ledgerMs: +on.toFixed(3), withoutLedgerMs: +off.toFixed(3), ratio: +(on / off).toFixed(2) };
  });
}

async function main(): Promise<void> {
  // The queries are timed, not bounded: on a busy shared machine the usage by day (3.3 s on a quiet one) can pass the
  // service's 5 s database budget, and a run that dies there measures nothing.
  const service = await startInProcessService('metering', { DATABASE_TIMEOUT_MS: '120000' });
  const { url, running } = service;
  const db = new Client({ connectionString: url });
  await db.connect();
  const report: Record<string, unknown> = {
    startedAt: new Date().toISOString(),
    node: process.version,
    // The service's young-generation bound (package.json config.nodeFlags, as `npm start` and the image run it): the
    // export's peak memory is mostly young garbage, whose room it bounds. The old generation is larger than the
    // service's 192 MB, since this process also holds the bench (the whole open statement of 50,000 lines, before
    // its lines were paged, took about 67 MB of heap at once and ran it out of 192 MB).
    nodeFlags: process.execArgv.filter((a) => a.startsWith('--max-')),
    cpus: os.cpus().length,
    loadAverageAtStart: os.loadavg().map((x) => +x.toFixed(2)),
    clusters: CLUSTERS,
    repeat: REPEAT,
  };
  try {
    const app = running.app;
    process.stdout.write(`Seeding ${CLUSTERS} clusters...\n`);
    const seeded = await measure(() => seedClusters(url, CLUSTERS));
    report.seedSeconds = +(seeded.ms / 1000).toFixed(1);
    // A month of usage: every interval reaches back to the month's start, the workers pools at 3 nodes for the first
    // half and resized to their size at mid-month, as the ledger records a resize of a running pool (one row in
    // usage_pool_resizes, which readers cut the interval at: ADR 0210), so the reads pay for 10,000 cuts.
    const mid = new Date('2026-10-16T00:00:00Z');
    await db.query(
      `INSERT INTO usage_pool_resizes (node_pool_id, resized_at, node_count)
       SELECT node_pool_id, $1, node_count FROM usage_intervals WHERE node_pool_name = 'workers' AND ended_at IS NULL`,
      [mid],
    );
    await db.query(`UPDATE usage_intervals SET node_count = 3 WHERE node_pool_name = 'workers' AND ended_at IS NULL`);
    await db.query(`UPDATE usage_intervals SET started_at = $1`, [MONTH_START]);
    const [{ type: nodeType, region }] = (await db.query(`SELECT node_type AS type, region FROM usage_intervals WHERE kind = 'NODES' LIMIT 1`)).rows;
    for (const [kind, nt, ha, price, from] of [
      ['CONTROL_PLANE', null, false, '0.10', MONTH_START],
      ['CONTROL_PLANE', null, true, '0.30', MONTH_START],
      ['NODE', nodeType, null, '0.096', MONTH_START],
      ['NODE', nodeType, null, '0.12', mid],
    ] as const) {
      await db.query(
        `INSERT INTO price_book_entries (kind, cloud_provider, region, node_type, highly_available, currency, list_price_per_hour,
                                         organisation_type_prices, effective_from, created_at, modified_at)
         VALUES ($1, 'platform_1', $2, $3, $4, 'EUR', $5::numeric, '{"ENTERPRISE": "0.09"}', $6, now(), now())`,
        [kind, region, nt, ha, price, from],
      );
    }
    await db.query('ANALYZE');
    // The ledger's intervals as its readers see them: usage_intervals cut at the recorded resizes.
    const [{ n: intervals }] = (await db.query(`WITH ${ledgerIntervalsCte('true')} SELECT count(*)::int AS n FROM ledger`)).rows;
    report.intervals = intervals;

    app.get(Clock).set(NOW);
    const cls = app.get(ClsService);
    const [org] = (await db.query(`SELECT id, slug, type, name, identity FROM organisations WHERE slug = 'bench'`)).rows as OrganisationEntity[];
    const usage = app.get(UsageService);
    const statements = app.get(StatementsService);
    const exports = app.get(UsageExportService);
    const query = { from: MONTH_START.toISOString(), to: MONTH_END.toISOString() };

    const runs: Record<string, { ms: number[]; peakRssMb: number[]; peakHeapMb: number[]; rows: number }> = {};
    const record = (name: string, m: { ms: number; peakRssMb: number; peakHeapMb: number }, rows: number) => {
      runs[name] ??= { ms: [], peakRssMb: [], peakHeapMb: [], rows };
      runs[name].peakHeapMb.push(m.peakHeapMb);
      runs[name].ms.push(m.ms);
      runs[name].peakRssMb.push(m.peakRssMb);
    };
    for (let i = 0; i < REPEAT; i++) {
      process.stdout.write(`Run ${i + 1} of ${REPEAT}...\n`);
      if (!ONLY_EXPORT) {
        const byCluster = await measure(() => cls.run(() => usage.usage(org, { ...query, groupBy: 'cluster' })));
        record('usage by cluster', byCluster, byCluster.result.groups.length);
        const byDay = await measure(() => cls.run(() => usage.usage(org, { ...query, groupBy: 'day' })));
        record('usage by day', byDay, byDay.result.groups.length);
        // The statement answers a page of lines (the largest, 500, by default); its totals cover all 50,000.
        const statement = await measure(() => cls.run(() => statements.get(org, '2026-10')));
        record('statement (open, first page of lines)', statement, statement.result.lines.length);
        report.statementLineCount = statement.result.lineCount;
      }
      for (const format of FORMATS) {
        const out = await measure(async () => drain((await exports.export(org, '2026-10', format)).getStream() as Readable));
        record(`FOCUS export ${format}`, out, format === 'focus-csv' ? out.result.lines - 1 : out.result.lines - 2);
        report[`${format} bytes`] = out.result.bytes;
      }
    }
    report.results = Object.entries(runs).map(([name, r]) => ({
      name,
      rows: r.rows,
      medianMs: median(r.ms),
      rowsPerSecond: Math.round(r.rows / (median(r.ms) / 1000)),
      peakRssAboveStartMb: Math.max(...r.peakRssMb),
      peakHeapAboveStartMb: Math.max(...r.peakHeapMb),
    }));
    if (process.env.BENCH_WRITES === '1' || (!ONLY_EXPORT && process.env.BENCH_WRITES !== '0')) {
      process.stdout.write(`Write overhead of the ledger's triggers...\n`);
      report.writeOverhead = await measureWriteOverhead(db, org.id as unknown as string);
    }
    report.loadAverageAtEnd = os.loadavg().map((x) => +x.toFixed(2));
    const file = path.join(ROOT, 'bench/results', process.env.BENCH_OUT ?? 'metering.json');
    fs.writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
    process.stdout.write(`${JSON.stringify({ results: report.results, writeOverhead: report.writeOverhead }, null, 2)}\nWrote ${path.relative(ROOT, file)}\n`);
  } finally {
    await db.end();
    await service.stop();
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
