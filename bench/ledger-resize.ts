import 'reflect-metadata';
import { execSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import { startInProcessService } from './in-process-service';
import { seedClusters } from './seed';

/**
 * node -r @swc-node/register bench/ledger-resize.ts — the database side of the ledger's cost on the node-pool PUT (resize), without HTTP:
 * BENCH_CLUSTERS clusters seeded (bench/seed.ts), then blocks of BENCH_RESIZES resizes of one node pool (min_size 2
 * and 3 in turn, as bench/ledger.ts's PUT does), each its own transaction, run inside PostgreSQL by one DO block
 * (no round trips) and timed with clock_timestamp(), with the ledger's triggers on and off, BENCH_ROUNDS times each,
 * the side that goes first alternating. The resized pool's history grows by BENCH_RESIZES rows per block with the
 * ledger on (recorded resizes, ADR 0210), as it does under the HTTP bench. Reports µs per resize per block, the
 * medians and on - off. Also writes the EXPLAIN (ANALYZE, BUFFERS) of the trigger's statements for one resize (auto_explain, nested) to
 * bench/results/ledger-resize-explain.txt when BENCH_EXPLAIN=1. Writes bench/results/ledger-resize.json (BENCH_OUT).
 */
const ROOT = path.resolve(__dirname, '..');
const CLUSTERS = Number(process.env.BENCH_CLUSTERS ?? 10_000);
const RESIZES = Number(process.env.BENCH_RESIZES ?? 2_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const service = await startInProcessService('ledger_resize');
  const db = new Client({ connectionString: service.url });
  await db.connect();
  try {
    process.stdout.write(`Seeding ${CLUSTERS} clusters...\n`);
    const seed = await seedClusters(service.url, CLUSTERS);
    const {
      rows: [pool],
    } = await db.query(
      `SELECT np.id FROM cluster_node_pools np JOIN clusters c ON c.id = np.cluster_id WHERE c.slug = $1 AND np.name = 'workers'`,
      [seed.clusterSlugs[13]],
    );
    const triggers = (
      await db.query(
        `SELECT t.tgname AS name, t.tgrelid::regclass::text AS tbl FROM pg_trigger t
          WHERE NOT t.tgisinternal AND t.tgname LIKE 'metering\\_%' AND t.tgrelid IN ('clusters'::regclass, 'cluster_node_pools'::regclass)`,
      )
    ).rows as { name: string; tbl: string }[];
    const setLedger = async (on: boolean) => {
      for (const t of triggers) await db.query(`ALTER TABLE ${t.tbl} ${on ? 'ENABLE' : 'DISABLE'} TRIGGER ${t.name}`);
    };
    // The backend's CPU time (user + system, from /proc: the database runs on this machine), which the machine's
    // other work disturbs far less than the elapsed time.
    const {
      rows: [{ pid }],
    } = await db.query(`SELECT pg_backend_pid() AS pid`);
    const ticks = Number(execSync('getconf CLK_TCK').toString().trim());
    const cpuUs = () => {
      const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return ((Number(f[11]) + Number(f[12])) * 1e6) / ticks;
    };
    // One block: RESIZES transactions, each one UPDATE as the PUT's (size, modified_at), committed.
    const block = async (n: number): Promise<{ us: number; cpu: number }> => {
      const c0 = cpuUs();
      await db.query(`DROP TABLE IF EXISTS pg_temp.t_elapsed`);
      await db.query(`CREATE TEMP TABLE t_elapsed (us double precision)`);
      await db.query(`
        DO $$
        DECLARE t0 timestamptz := clock_timestamp();
        BEGIN
          FOR i IN 1..${n} LOOP
            UPDATE cluster_node_pools SET min_size = 2 + (min_size - 1) % 2, modified_at = clock_timestamp() WHERE id = ${Number(pool.id)};
            COMMIT;
          END LOOP;
          INSERT INTO t_elapsed VALUES (extract(epoch FROM clock_timestamp() - t0) * 1e6 / ${n});
          COMMIT;
        END $$`);
      const cpu = (cpuUs() - c0) / n;
      const {
        rows: [{ us }],
      } = await db.query(`SELECT us FROM t_elapsed`);
      return { us: us as number, cpu };
    };
    await block(50); // warm up
    const on: number[] = [];
    const off: number[] = [];
    const onCpu: number[] = [];
    const offCpu: number[] = [];
    const blocks: { side: string; usPerResize: number; cpuUsPerResize: number; poolHistory: number }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      for (const side of r % 2 === 0 ? [true, false] : [false, true]) {
        await setLedger(side);
        await block(20); // plans made again after ALTER TABLE
        const { us, cpu } = await block(RESIZES);
        (side ? on : off).push(us);
        (side ? onCpu : offCpu).push(cpu);
        const {
          rows: [{ n }],
        } = await db.query(
          `SELECT ((SELECT count(*) FROM usage_intervals WHERE node_pool_id = $1) + (SELECT count(*) FROM usage_pool_resizes WHERE node_pool_id = $1))::int AS n`,
          [pool.id],
        );
        blocks.push({ side: side ? 'on' : 'off', usPerResize: +us.toFixed(1), cpuUsPerResize: +cpu.toFixed(1), poolHistory: n });
        process.stdout.write(`  ${side ? 'on ' : 'off'}: ${us.toFixed(1)} µs per resize, backend CPU ${cpu.toFixed(1)} µs (pool history ${n} rows)\n`);
      }
    }
    await setLedger(true);
    if (process.env.BENCH_EXPLAIN === '1') {
      await db.query(`LOAD 'auto_explain'`);
      await db.query(`SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on;
                      SET auto_explain.log_nested_statements = on; SET client_min_messages = log; SET auto_explain.log_level = notice`);
      const notices: string[] = [];
      db.on('notice', (m) => notices.push(m.message ?? ''));
      await db.query('BEGIN');
      await db.query(`UPDATE cluster_node_pools SET min_size = 2 + (min_size - 1) % 2, modified_at = clock_timestamp() WHERE id = $1`, [pool.id]);
      await db.query('ROLLBACK');
      fs.writeFileSync(path.join(ROOT, 'bench/results/ledger-resize-explain.txt'), notices.join('\n\n') + '\n');
    }
    const report = {
      startedAt: new Date().toISOString(),
      cpus: os.cpus().length,
      loadAverage: os.loadavg().map((x) => +x.toFixed(2)),
      clusters: CLUSTERS,
      resizesPerBlock: RESIZES,
      blocks,
      medianOnUs: +median(on).toFixed(1),
      medianOffUs: +median(off).toFixed(1),
      ledgerUsPerResize: +(median(on) - median(off)).toFixed(1),
      medianOnCpuUs: +median(onCpu).toFixed(1),
      medianOffCpuUs: +median(offCpu).toFixed(1),
      ledgerCpuUsPerResize: +(median(onCpu) - median(offCpu)).toFixed(1),
    };
    fs.writeFileSync(path.join(ROOT, 'bench/results', process.env.BENCH_OUT ?? 'ledger-resize.json'), JSON.stringify(report, null, 2) + '\n');
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await db.end();
    await service.stop();
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
