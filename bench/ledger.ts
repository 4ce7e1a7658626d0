import autocannon from 'autocannon';
import { Client } from 'pg';
import type { SeedResult } from './seed';

/**
 * The usage ledger's part of `npm run bench` (issue 41: the ledger's writes add no more than 5 % to the cluster PATCH
 * and the node-pool PUT): each of the two through the whole service, with the ledger's triggers (`metering_*` on
 * `clusters` and `cluster_node_pools`) enabled and disabled, the two sides alternated ROUNDS times with the side that
 * goes first alternating too; the best of each side counts, as for the other operations.
 * - PATCH changes the cluster's description: an unpriced change, which the statement triggers see and pass over.
 * - PUT resizes a node pool (minSize 2 and 3 in turn): a priced change, which ends the pool's open interval and opens
 *   another every time.
 */

const ROUNDS = Number(process.env.BENCH_LEDGER_ROUNDS ?? 3);
const TARGET_OVERHEAD = 0.05;

export interface LedgerBenchContext {
  databaseUrl: string;
  serviceBase: string;
  token: string;
  seed: SeedResult;
  durationSeconds: number;
  connections: number;
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

async function rps(ctx: LedgerBenchContext, operation: Operation, pool: { identity: string; nodeSize: string }, tag: string): Promise<number> {
  const { organisationSlug: org, environmentSlug: env, clusterSlugs } = ctx.seed;
  const cluster = `${ctx.serviceBase}/api/v1/orgs/${org}/clusters/${env}/${clusterSlugs[13]}`;
  let n = 0;
  const result = await autocannon({
    url: operation === 'patchCluster' ? cluster : `${cluster}/pools/${pool.identity}`,
    connections: ctx.connections,
    duration: ctx.durationSeconds,
    headers: { 'content-type': 'application/json', authorization: `Token ${ctx.token}` },
    requests: [
      operation === 'patchCluster'
        ? { method: 'PATCH', setupRequest: (req) => ({ ...req, method: 'PATCH', body: JSON.stringify({ description: `${tag}-${n++}` }) }) }
        : { method: 'PUT', setupRequest: (req) => ({ ...req, method: 'PUT', body: JSON.stringify({ nodeSize: pool.nodeSize, minSize: 2 + (n++ % 2), maxSize: 5 }) }) },
    ],
  });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${operation} answered ${result.non2xx} non-2xx responses and ${result.errors} errors`);
  return Math.round(result.requests.average);
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
    const best: Record<Operation, Record<Side, number>> = { patchCluster: { withLedger: 0, withoutLedger: 0 }, putNodePool: { withLedger: 0, withoutLedger: 0 } };
    const rounds: Record<string, number>[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const order: Side[] = r % 2 === 0 ? ['withLedger', 'withoutLedger'] : ['withoutLedger', 'withLedger'];
      const round: Record<string, number> = {};
      for (const side of order) {
        await setLedgerTriggers(db, side === 'withLedger');
        for (const op of ['patchCluster', 'putNodePool'] as Operation[]) {
          const v = await rps(ctx, op, pool, `ledger-${side}-${r}`);
          round[`${op}.${side}`] = v;
          best[op][side] = Math.max(best[op][side], v);
        }
      }
      rounds.push(round);
      process.stdout.write(`  ledger round ${r + 1}/${ROUNDS}: ${JSON.stringify(round)}\n`);
    }
    await setLedgerTriggers(db, true);
    const figures = (op: Operation) => {
      const ratio = +(best[op].withLedger / best[op].withoutLedger).toFixed(3);
      return { withLedgerRps: best[op].withLedger, withoutLedgerRps: best[op].withoutLedger, ratio, overhead: +(1 - ratio).toFixed(3), met: 1 - ratio <= TARGET_OVERHEAD };
    };
    return { rounds, patchCluster: figures('patchCluster'), putNodePool: figures('putNodePool'), targetOverhead: TARGET_OVERHEAD };
  } finally {
    // Never leave the ledger off, whatever failed.
    await setLedgerTriggers(db, true).catch(() => undefined);
    await db.end();
  }
}
