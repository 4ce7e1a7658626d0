import autocannon from 'autocannon';
import { Client } from 'pg';
import { databaseCpuDelta, databaseCpuMs, postmasterPid as findPostmaster, processCpuMs } from './process-cpu';
import type { SeedResult } from './seed';

/**
 * The usage ledger's part of `npm run bench` (issue 41: the ledger's writes add no more than 5 % to the cluster PATCH
 * and the node-pool PUT): each of the two through the whole service, with the ledger's triggers (`metering_*` on
 * `clusters` and `cluster_node_pools`) enabled and disabled, the two sides alternated ROUNDS times with the side that
 * goes first alternating too (ROUNDS is even, so each side goes first as often), each run after WARM_REQUESTS unmeasured
 * requests. The overhead is the median over the rounds of each round's own ratio: the two sides of a round run back to
 * back, so the machine's slower and faster minutes fall on both (the best of each side, counted before, let one lucky
 * run decide). The PATCH runs no ledger code since ADR 0209 (its trigger's WHEN passes over an unpriced change), so its
 * figure is the measure's own noise, reported beside the PUT's.
 * - PATCH changes the cluster's description: an unpriced change, which the ledger's row trigger (its WHEN) passes over.
 * - PUT resizes a node pool (minSize 2 and 3 in turn): a priced change, which the ledger records every time (one row in
 *   usage_pool_resizes since ADR 0210; before, the pool's open interval ended and another opened).
 * Throughput at CONNECTIONS connections on one cluster measures the writes serialised on the cluster's row lock, where
 * the machine's other work moves a 5 s figure by more than the 5 % sought. So a cost pass follows: COST_REQUESTS
 * requests of each operation at one connection per side, the sides alternated COST_ROUNDS times, reporting the mean
 * latency and the CPU per request of the service and of the database (the postmaster and its children, /proc: the
 * triggers' work, the WAL and the vacuuming that the ledger's rows cause). CPU time is what the ledger adds to a
 * request and the figure the machine's other work disturbs least; the medians of the rounds are reported.
 */

const ROUNDS = Number(process.env.BENCH_LEDGER_ROUNDS ?? 6);
/** Requests of each operation run, unmeasured, after the triggers are switched (ALTER TABLE makes every session plan again). */
const WARM_REQUESTS = Number(process.env.BENCH_LEDGER_WARM_REQUESTS ?? 200);
const TARGET_OVERHEAD = 0.05;
const COST_REQUESTS = Number(process.env.BENCH_LEDGER_COST_REQUESTS ?? 1000);
const COST_ROUNDS = Number(process.env.BENCH_LEDGER_COST_ROUNDS ?? 5);

export interface LedgerBenchContext {
  databaseUrl: string;
  serviceBase: string;
  token: string;
  seed: SeedResult;
  durationSeconds: number;
  connections: number;
  /** The service's process, for its CPU time (the cost pass). */
  servicePid?: number;
}

type Side = 'withLedger' | 'withoutLedger';
type Operation = 'patchCluster' | 'putNodePool';

/** Enables or disables the ledger's triggers (only those: the generation and notify triggers stay). */
async function setLedgerTriggers(db: Client, enabled: boolean): Promise<void> {
  const { rows } = await db.query<{ table: string; name: string }>(
    `SELECT c.relname AS table, t.tgname AS name FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
      WHERE NOT t.tgisinternal AND t.tgname LIKE 'metering\\_%' AND c.relname IN ('clusters', 'cluster_node_pools')`,
  );
  if (rows.length === 0) throw new Error('no metering_* triggers found on clusters and cluster_node_pools');
  for (const r of rows) await db.query(`ALTER TABLE ${r.table} ${enabled ? 'ENABLE' : 'DISABLE'} TRIGGER ${r.name}`);
}

/** The middle value; the mean of the two middle ones for an even count (the rounds are even). */
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const h = Math.floor(s.length / 2);
  return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
};
/** The median of each round's own ratio with / without the ledger: a round's two sides ran back to back. */
const pairedRatio = (pairs: [number, number][]) => median(pairs.map(([w, wo]) => w / wo));

function run(ctx: LedgerBenchContext, operation: Operation, pool: { identity: string; nodeSize: string }, tag: string, load: { connections: number; duration?: number; amount?: number }) {
  const { organisationSlug: org, environmentSlug: env, clusterSlugs } = ctx.seed;
  const cluster = `${ctx.serviceBase}/api/v1/orgs/${org}/clusters/${env}/${clusterSlugs[13]}`;
  let n = 0;
  return autocannon({
    url: operation === 'patchCluster' ? cluster : `${cluster}/pools/${pool.identity}`,
    ...load,
    headers: { 'content-type': 'application/json', authorization: `Token ${ctx.token}` },
    requests: [
      operation === 'patchCluster'
        ? { method: 'PATCH', setupRequest: (req) => ({ ...req, method: 'PATCH', body: JSON.stringify({ description: `${tag}-${n++}` }) }) }
        : { method: 'PUT', setupRequest: (req) => ({ ...req, method: 'PUT', body: JSON.stringify({ nodeSize: pool.nodeSize, minSize: 2 + (n++ % 2), maxSize: 5 }) }) },
    ],
  });
}

async function rps(ctx: LedgerBenchContext, operation: Operation, pool: { identity: string; nodeSize: string }, tag: string): Promise<number> {
  const result = await run(ctx, operation, pool, tag, { connections: ctx.connections, duration: ctx.durationSeconds });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${operation} answered ${result.non2xx} non-2xx responses and ${result.errors} errors`);
  return Math.round(result.requests.average);
}

interface Cost {
  latencyMeanMs: number;
  serviceCpuMsPerRequest: number | null;
  databaseCpuMsPerRequest: number | null;
  /** Service and database CPU together: what a request costs the machine, the least disturbed by its other work. */
  cpuMsPerRequest: number | null;
}

/** COST_REQUESTS requests at one connection: mean latency, the service's CPU and the database's time per request. */
async function cost(ctx: LedgerBenchContext, postmasterPid: number | null, operation: Operation, pool: { identity: string; nodeSize: string }, tag: string): Promise<Cost> {
  const cpu0 = ctx.servicePid ? processCpuMs(ctx.servicePid) : 0;
  const db0 = postmasterPid ? databaseCpuMs(postmasterPid) : null;
  const result = await run(ctx, operation, pool, tag, { connections: 1, amount: COST_REQUESTS });
  const cpu = ctx.servicePid ? processCpuMs(ctx.servicePid) - cpu0 : null;
  const db = postmasterPid && db0 ? databaseCpuDelta(db0, databaseCpuMs(postmasterPid)) : null;
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${operation} answered ${result.non2xx} non-2xx responses and ${result.errors} errors`);
  const per = (ms: number | null) => (ms === null ? null : +(ms / COST_REQUESTS).toFixed(3));
  return {
    latencyMeanMs: +result.latency.mean.toFixed(3),
    serviceCpuMsPerRequest: per(cpu),
    databaseCpuMsPerRequest: per(db),
    cpuMsPerRequest: cpu === null || db === null ? null : per(cpu + db),
  };
}

/**
 * The time the database spends inside the ledger's trigger functions per request, from its own function statistics
 * (`track_functions`, turned on for the measure and back off): COST_REQUESTS requests of each operation at one
 * connection, with the ledger on. A direct measure of the ledger's work, untouched by the machine's other load; what it
 * leaves out is the trigger's firing and the WAL and vacuuming of the rows it writes, which the cost pass includes.
 */
async function timeInLedgerFunctions(db: Client, drive: (op: Operation) => Promise<unknown>) {
  const snapshot = async () =>
    (
      await db.query<{ calls: string; ms: number }>(
        `SELECT coalesce(sum(calls), 0)::text AS calls, coalesce(sum(total_time), 0)::float8 AS ms FROM pg_stat_user_functions
          WHERE funcname IN ('metering_cluster_updated', 'metering_node_pool_updated', 'metering_clusters_inserted', 'metering_node_pools_inserted', 'metering_node_pools_deleted')`,
      )
    ).rows[0];
  // An idle session flushes its statistics after 10 s (PostgreSQL 15 and later), a busy one at most once a second.
  const settle = () => new Promise((r) => setTimeout(r, 11_000));
  await db.query(`ALTER SYSTEM SET track_functions = 'pl'`);
  await db.query(`SELECT pg_reload_conf()`);
  try {
    await settle();
    const out: Partial<Record<Operation, { calls: number; msPerRequest: number }>> = {};
    for (const op of ['patchCluster', 'putNodePool'] as Operation[]) {
      const a = await snapshot();
      await drive(op);
      await settle();
      const b = await snapshot();
      out[op] = { calls: Number(b.calls) - Number(a.calls), msPerRequest: +((b.ms - a.ms) / COST_REQUESTS).toFixed(3) };
    }
    return out as Record<Operation, { calls: number; msPerRequest: number }>;
  } finally {
    await db.query(`ALTER SYSTEM RESET track_functions`);
    await db.query(`SELECT pg_reload_conf()`);
  }
}

export async function benchLedgerWrites(ctx: LedgerBenchContext) {
  const db = new Client({ connectionString: ctx.databaseUrl });
  await db.connect();
  try {
    const { rows: [pool] } = await db.query<{ identity: string; nodeSize: string }>(
      `SELECT np.identity, np.node_size AS "nodeSize" FROM cluster_node_pools np JOIN clusters c ON c.id = np.cluster_id
         JOIN organisations o ON o.id = c.organisation_id
        WHERE o.slug = $1 AND c.slug = $2 AND np.name = 'workers'`,
      [ctx.seed.organisationSlug, ctx.seed.clusterSlugs[13]],
    );
    if (!pool) throw new Error('the seeded cluster has no node pool named workers');
    const rounds: Record<string, number>[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const order: Side[] = r % 2 === 0 ? ['withLedger', 'withoutLedger'] : ['withoutLedger', 'withLedger'];
      const round: Record<string, number> = {};
      for (const side of order) {
        await setLedgerTriggers(db, side === 'withLedger');
        for (const op of ['patchCluster', 'putNodePool'] as Operation[]) {
          await run(ctx, op, pool, `ledger-warm-${side}-${r}`, { connections: ctx.connections, amount: WARM_REQUESTS });
          round[`${op}.${side}`] = await rps(ctx, op, pool, `ledger-${side}-${r}`);
        }
      }
      rounds.push(round);
      process.stdout.write(`  ledger round ${r + 1}/${ROUNDS}: ${JSON.stringify(round)}\n`);
    }
    // The cost pass (one connection, a fixed number of requests); the database's CPU where it runs on this machine.
    const postmasterPid = await findPostmaster(ctx.databaseUrl).catch(() => {
      process.stderr.write('the database is not on this machine: its CPU is not measured\n');
      return null;
    });
    const costRounds: Record<string, Cost>[] = [];
    for (let r = 0; r < COST_ROUNDS; r++) {
      const order: Side[] = r % 2 === 0 ? ['withoutLedger', 'withLedger'] : ['withLedger', 'withoutLedger'];
      const round: Record<string, Cost> = {};
      for (const side of order) {
        await setLedgerTriggers(db, side === 'withLedger');
        await run(ctx, 'putNodePool', pool, `ledger-cost-warm-${side}-${r}`, { connections: 1, amount: 50 });
        for (const op of ['patchCluster', 'putNodePool'] as Operation[]) round[`${op}.${side}`] = await cost(ctx, postmasterPid, op, pool, `ledger-cost-${side}-${r}`);
      }
      costRounds.push(round);
      process.stdout.write(`  ledger cost round ${r + 1}/${COST_ROUNDS}: ${JSON.stringify(round)}\n`);
    }
    await setLedgerTriggers(db, true);
    // ALTER SYSTEM needs a superuser: an external database may refuse it, and then this measure is left out.
    const inFunctions = await timeInLedgerFunctions(db, (op) => run(ctx, op, pool, `ledger-functions-${op}`, { connections: 1, amount: COST_REQUESTS })).catch((e) => {
      process.stderr.write(`the time inside the ledger's functions is not measured: ${(e as Error).message}\n`);
      return null;
    });
    const costFigures = (op: Operation) => {
      const m = (side: Side, k: keyof Cost) => {
        const xs = costRounds.map((r) => r[`${op}.${side}`][k]).filter((x): x is number => x !== null);
        return xs.length ? median(xs) : null;
      };
      const paired = (k: keyof Cost) => {
        const pairs = costRounds
          .map((r) => [r[`${op}.withLedger`][k], r[`${op}.withoutLedger`][k]])
          .filter((x): x is [number, number] => x[0] !== null && x[1] !== null);
        return pairs.length ? +(pairedRatio(pairs) - 1).toFixed(3) : null;
      };
      const row = (k: keyof Cost) => {
        const w = m('withLedger', k);
        const wo = m('withoutLedger', k);
        return { withLedger: w, withoutLedger: wo, added: w === null || wo === null ? null : +(w - wo).toFixed(3), overhead: paired(k) };
      };
      return {
        latencyMeanMs: row('latencyMeanMs'),
        serviceCpuMsPerRequest: row('serviceCpuMsPerRequest'),
        databaseCpuMsPerRequest: row('databaseCpuMsPerRequest'),
        cpuMsPerRequest: row('cpuMsPerRequest'),
      };
    };
    const figures = (op: Operation) => {
      const ratio = +pairedRatio(rounds.map((r) => [r[`${op}.withLedger`], r[`${op}.withoutLedger`]])).toFixed(3);
      const side = (x: Side) => median(rounds.map((r) => r[`${op}.${x}`]));
      return { withLedgerRps: Math.round(side('withLedger')), withoutLedgerRps: Math.round(side('withoutLedger')), ratio, overhead: +(1 - ratio).toFixed(3), met: 1 - ratio <= TARGET_OVERHEAD };
    };
    return {
      rounds,
      patchCluster: figures('patchCluster'),
      putNodePool: figures('putNodePool'),
      targetOverhead: TARGET_OVERHEAD,
      cost: { requests: COST_REQUESTS, rounds: costRounds, patchCluster: costFigures('patchCluster'), putNodePool: costFigures('putNodePool') },
      inFunctions,
    };
  } finally {
    // Never leave the ledger off, whatever failed.
    await setLedgerTriggers(db, true).catch(() => undefined);
    await db.end();
  }
}
