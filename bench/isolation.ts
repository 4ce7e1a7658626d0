import autocannon from 'autocannon';
import type { ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { Client } from 'pg';
import { freePort } from '../src/common/free-port';
import { hashToken } from '../src/tokens/tokens.service';
import { startBenchDatabase } from './database';
import { seedClusters } from './seed';
import { spawnServer } from './server-process';
import { BENCH_TOKEN, requestBenchServiceEnv, SERVICE_NODE_FLAGS } from './service-flags';

/**
 * npm run bench:isolation: one organisation (a VIEWER) runs worst-case cluster policy dry-runs, 20 at a time, while
 * `/health` and another organisation's cluster GET are measured; their p99 is compared with the unloaded p99 of the
 * same run (target: within 2x). The dry-runs alternate the audit's expression (27 doublings of the cluster name:
 * refused when checked) and the costliest expression the write-time estimate accepts, evaluated on a page of 500
 * clusters. Each of the 20 attacker loops sends its next dry-run as soon as the last one answers, and waits the
 * Retry-After of a 429 first (as the per-user rate limit would make it: a client that floods regardless is the rate
 * limit's to stop, not this benchmark's subject). The probes are open-loop: a request every 1000/BENCH_PROBE_RATE ms
 * whatever the answers, timed with a sub-millisecond clock. Each repetition measures unloaded, then loaded (the
 * load running throughout); the median ratio of the repetitions is the figure. Writes
 * bench/results/isolation-<date>.json.
 *
 * BENCH_ISOLATION_SECONDS (default 8) per measurement, BENCH_ISOLATION_REPETITIONS (3), BENCH_ISOLATION_CONNECTIONS
 * (20, the attacker's dry-runs at once), BENCH_PROBE_RATE (50 requests per second, each probe).
 */

const ROOT = path.resolve(__dirname, '..');
const RESULTS = path.join(ROOT, 'bench', 'results');
const SECONDS = Number(process.env.BENCH_ISOLATION_SECONDS ?? 6);
const REPETITIONS = Number(process.env.BENCH_ISOLATION_REPETITIONS ?? 5);
const ATTACK_CONNECTIONS = Number(process.env.BENCH_ISOLATION_CONNECTIONS ?? 20);
const PROBE_RATE = Number(process.env.BENCH_PROBE_RATE ?? 50);
const TARGET_RATIO = 2;
const NOISY_TOKEN = 'cms_bench_noisy_viewer_token_0123456789abcdef';

const AUDIT = `[object.name]${'.map(a, a + a)'.repeat(27)}[0].size() > 0`;
/** About 80,000 units of real work per cluster whatever the cluster holds (the estimate's limit is 100,000). */
const HEAVIEST = `cel.bind(h, [${Array.from({ length: 100 }, (_, i) => i).join(', ')}], h.all(i, h.all(j, i + j >= 0)))`;

interface Probe {
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** Every latency, ms. */
  samples: number[];
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** Open-loop: a request every 1000/PROBE_RATE ms for SECONDS, each timed from when it was due to its answer. */
async function probe(url: string, headers: Record<string, string>): Promise<Probe> {
  const times: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const pending: Promise<void>[] = [];
  const start = performance.now();
  const total = SECONDS * PROBE_RATE;
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / PROBE_RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    pending.push(
      fetch(url, { headers })
        .then(async (res) => {
          await res.arrayBuffer();
          if (res.status < 200 || res.status > 299) non2xx++;
          times.push(performance.now() - due);
        })
        .catch(() => void errors++),
    );
  }
  await Promise.all(pending);
  const sorted = times.sort((a, b) => a - b);
  return { p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), non2xx, errors, samples: sorted };
}

const round = (x: number) => Math.round(x * 100) / 100;

/** CPU ms (user + system) of the service: the whole process, and its main thread (the event loop's). */
function cpuMs(pid: number): { process: number; mainThread: number } {
  const read = (file: string) => {
    const stat = fs.readFileSync(file, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  };
  return { process: read(`/proc/${pid}/stat`), mainThread: read(`/proc/${pid}/task/${pid}/stat`) };
}

/** Both probes at once for one window, with the service's CPU over it (percent of one core). */
async function window(pid: number, targets: Record<'health' | 'otherGet', () => Promise<Probe>>) {
  const before = cpuMs(pid);
  const t0 = performance.now();
  const [health, otherGet] = await Promise.all([targets.health(), targets.otherGet()]);
  const ms = performance.now() - t0;
  const after = cpuMs(pid);
  const percent = (x: number) => Math.round((100 * x) / ms);
  return {
    health,
    otherGet,
    cpuPercent: { mainThread: percent(after.mainThread - before.mainThread), otherThreads: percent(after.process - before.process - (after.mainThread - before.mainThread)) },
  };
}

/** `connections` loops, each sending its next dry-run when the last answers (after its Retry-After on a 429). */
function attack(base: string, bodies: { path: string; headers: Record<string, string>; body: string }[], connections: number, ms: number) {
  const statuses: Record<string, number> = {};
  const until = performance.now() + ms;
  const loop = async (n: number) => {
    for (let i = n; performance.now() < until; i++) {
      const b = bodies[i % bodies.length];
      try {
        const res = await fetch(`${base}${b.path}`, { method: 'POST', headers: b.headers, body: b.body });
        await res.arrayBuffer();
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        if (res.status === 429) await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get('retry-after') ?? 1)));
      } catch {
        statuses.error = (statuses.error ?? 0) + 1;
      }
    }
  };
  return { statuses, done: Promise.all(Array.from({ length: connections }, (_, n) => loop(n))) };
}

/** A VIEWER of a second organisation with its own clusters (the attacker), straight in SQL. */
async function seedNoisyViewer(url: string): Promise<void> {
  await seedClusters(url, 500, 'noisy');
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    const [user] = (
      await db.query(
        `INSERT INTO users (username, email, can_create_organisations, platform_admin, created_at, modified_at)
         VALUES ('noisy-viewer', 'noisy-viewer@example.com', false, false, now(), now()) RETURNING id`,
      )
    ).rows;
    await db.query(
      `INSERT INTO personal_access_tokens (user_id, name, token_hash, type, expire_at, created_at)
       VALUES ($1, 'bench', $2, 'FULL_ACCESS', now() + interval '1 day', now())`,
      [user.id, hashToken(NOISY_TOKEN)],
    );
    await db.query(
      `INSERT INTO organisation_members (organisation_id, user_id, role, kubernetes_role, joined_at)
       SELECT id, $1, 'VIEWER', 'VIEW', now() FROM organisations WHERE slug = 'noisy'`,
      [user.id],
    );
  } finally {
    await db.end();
  }
}

async function main(): Promise<void> {
  fs.mkdirSync(RESULTS, { recursive: true });
  const { url, stop: stopDatabase } = await startBenchDatabase('cms-bench-isolation-');
  const port = await freePort();
  let service: ChildProcess | undefined;
  try {
    service = await spawnServer('service', [...SERVICE_NODE_FLAGS, 'dist/src/main.js'], requestBenchServiceEnv(url, port), port);
    const base = `http://127.0.0.1:${port}`;
    const other = await seedClusters(url, 1000);
    await seedNoisyViewer(url);
    const admin = { authorization: `Token ${BENCH_TOKEN}` };
    const targets = {
      health: () => probe(`${base}/health`, {}),
      otherGet: () => probe(`${base}/api/v1/orgs/${other.organisationSlug}/clusters/${other.environmentSlug}/${other.clusterSlugs[7]}`, admin),
    };
    const dryRun = (expression: string) => ({
      path: '/api/v1/orgs/noisy/cluster-policies/evaluate?size=500',
      headers: { 'content-type': 'application/json', authorization: `Token ${NOISY_TOKEN}` },
      body: JSON.stringify({ name: 'worst', expression, message: 'worst case', action: 'Deny' }),
    });
    // Warm: both probes, and one of each dry-run (the executor's threads start with the first task).
    for (const body of [dryRun(AUDIT), dryRun(HEAVIEST)]) {
      const res = await fetch(`${base}${body.path}`, { method: 'POST', headers: body.headers, body: body.body });
      process.stdout.write(`warm-up dry-run: ${res.status}\n`);
    }
    await autocannon({ url: `${base}/health`, connections: 2, duration: 2 });
    await autocannon({ url: `${base}/api/v1/orgs/${other.organisationSlug}/clusters/${other.environmentSlug}/${other.clusterSlugs[7]}`, headers: admin, connections: 2, duration: 2 });

    const repetitions: Record<string, unknown>[] = [];
    const pooled = { unloaded: { health: [] as number[], otherGet: [] as number[] }, loaded: { health: [] as number[], otherGet: [] as number[] } };
    const strip = ({ samples: _s, ...rest }: Probe) => rest;
    for (let r = 0; r < REPETITIONS; r++) {
      const unloaded = await window(service.pid!, targets);
      const load = attack(base, [dryRun(AUDIT), dryRun(HEAVIEST)], ATTACK_CONNECTIONS, (SECONDS + 2) * 1000);
      await new Promise((res) => setTimeout(res, 2000));
      const loaded = await window(service.pid!, targets);
      await load.done;
      for (const k of ['health', 'otherGet'] as const) {
        pooled.unloaded[k].push(...unloaded[k].samples);
        pooled.loaded[k].push(...loaded[k].samples);
      }
      const ratio = (k: 'health' | 'otherGet') => +(loaded[k].p99 / unloaded[k].p99).toFixed(2);
      const rep = {
        unloaded: { health: strip(unloaded.health), otherGet: strip(unloaded.otherGet), cpuPercent: unloaded.cpuPercent },
        loaded: { health: strip(loaded.health), otherGet: strip(loaded.otherGet), cpuPercent: loaded.cpuPercent },
        ratios: { healthP99: ratio('health'), otherGetP99: ratio('otherGet') },
        attack: { statuses: load.statuses },
      };
      repetitions.push(rep);
      process.stdout.write(
        `rep ${r + 1}: /health p99 ${unloaded.health.p99} -> ${loaded.health.p99} ms (x${rep.ratios.healthP99}); other organisation's GET p99 ` +
          `${unloaded.otherGet.p99} -> ${loaded.otherGet.p99} ms (x${rep.ratios.otherGetP99}); service CPU % main/other threads ` +
          `${unloaded.cpuPercent.mainThread}/${unloaded.cpuPercent.otherThreads} -> ${loaded.cpuPercent.mainThread}/${loaded.cpuPercent.otherThreads}; attack ${JSON.stringify(load.statuses)}\n`,
      );
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const p = (xs: number[], q: number) => round(percentile([...xs].sort((a, b) => a - b), q));
    const figures = (k: 'health' | 'otherGet') => ({
      unloaded: { p50: p(pooled.unloaded[k], 50), p99: p(pooled.unloaded[k], 99), samples: pooled.unloaded[k].length },
      loaded: { p50: p(pooled.loaded[k], 50), p99: p(pooled.loaded[k], 99), samples: pooled.loaded[k].length },
      p99Ratio: +(p(pooled.loaded[k], 99) / p(pooled.unloaded[k], 99)).toFixed(2),
    });
    const pooledFigures = { health: figures('health'), otherGet: figures('otherGet') };
    const ratios = (k: 'healthP99' | 'otherGetP99') => repetitions.map((x) => (x.ratios as Record<string, number>)[k]);
    const summary = {
      healthP99Ratio: pooledFigures.health.p99Ratio,
      otherGetP99Ratio: pooledFigures.otherGet.p99Ratio,
      medianOfRepetitions: { healthP99Ratio: median(ratios('healthP99')), otherGetP99Ratio: median(ratios('otherGetP99')) },
      target: TARGET_RATIO,
    };
    const metrics = await (await fetch(`${base}/metrics`, { headers: admin })).text();
    const executorTasks = metrics.split('\n').filter((l) => l.startsWith('cms_executor_tasks_total{') && !l.endsWith(' 0'));
    const report = {
      date: new Date().toISOString(),
      node: process.version,
      settings: { seconds: SECONDS, repetitions: REPETITIONS, attackConnections: ATTACK_CONNECTIONS, probeRatePerSecond: PROBE_RATE, page: 500 },
      expressions: { audit: AUDIT, heaviest: HEAVIEST },
      summary,
      pooled: pooledFigures,
      met: summary.healthP99Ratio <= TARGET_RATIO && summary.otherGetP99Ratio <= TARGET_RATIO,
      executorTasks,
      repetitions,
    };
    const file = path.join(RESULTS, `isolation-${report.date.slice(0, 10)}.json`);
    fs.writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
    process.stdout.write(
      `\n| Measure | p99 ratio, loaded / unloaded (all ${REPETITIONS} repetitions' samples) | median of the repetitions' ratios | Target |\n|---|---|---|---|\n` +
        `| /health | ${summary.healthP99Ratio} | ${summary.medianOfRepetitions.healthP99Ratio} | <= ${TARGET_RATIO} |\n` +
        `| another organisation's cluster GET | ${summary.otherGetP99Ratio} | ${summary.medianOfRepetitions.otherGetP99Ratio} | <= ${TARGET_RATIO} |\n` +
        `\n${report.met ? 'Targets met' : 'Targets NOT met'}; written to ${path.relative(ROOT, file)}\n${executorTasks.join('\n')}\n`,
    );
  } finally {
    service?.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1000));
    await stopDatabase();
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
