import autocannon from 'autocannon';
import type { ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import { startBenchDatabase } from './database';
import { seedClusters, SeedResult } from './seed';
import { freePort } from '../src/common/free-port';
import { benchWebhooks } from './webhooks';
import { spawnServer } from './server-process';
import { SERVICE_NODE_FLAGS } from './service-flags';

/**
 * npm run bench: the service against a minimal baseline (Fastify + pg, same SQL, same JSON, no Nest,
 * no auth) on the same data in one run, at 10,000 and then 100,000 clusters. Prints a table and writes
 * bench/results/latest.json.
 */

const ROOT = path.resolve(__dirname, '..');
const TOKEN = 'cms_bench_admin_token_0123456789abcdef';
const DURATION = Number(process.env.BENCH_DURATION_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const REPETITIONS = 3;
const SIZES = (process.env.BENCH_SIZES ?? '10000,100000').split(',').map(Number);
const PAGE = Number(process.env.BENCH_PAGE ?? 100);

interface Measure {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}


function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round((kb / 1024) * 10) / 10;
}

async function measure(opts: autocannon.Options): Promise<Measure> {
  const result = await autocannon({ connections: CONNECTIONS, duration: DURATION, ...opts });
  return {
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
  };
}

type Target = 'list' | 'get' | 'patch';

async function measureTargets(base: string, seed: SeedResult, auth: boolean, tag: string): Promise<Record<Target, Measure>> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (auth) headers.authorization = `Token ${TOKEN}`;
  const org = seed.organisationSlug;
  const env = seed.environmentSlug;
  const cluster = seed.clusterSlugs[7];
  let n = 0;
  const only = process.env.BENCH_TARGETS?.split(',');
  const skip: Measure = { rps: 0, p50: 0, p99: 0, errors: 0, non2xx: 0 };
  if (only && !only.includes('list') && !only.includes('patch')) {
    return { list: skip, get: await measure({ url: `${base}/api/v1/orgs/${org}/clusters/${env}/${seed.clusterSlugs[7]}`, headers }), patch: skip };
  }
  const list = await measure({ url: `${base}/api/v1/orgs/${org}/clusters?page=${PAGE}&size=50`, headers });
  const get = await measure({ url: `${base}/api/v1/orgs/${org}/clusters/${env}/${cluster}`, headers });
  const patch = await measure({
    url: `${base}/api/v1/orgs/${org}/clusters/${env}/${cluster}`,
    headers,
    requests: [
      {
        method: 'PATCH',
        setupRequest: (req) => ({ ...req, method: 'PATCH', body: JSON.stringify({ description: `${tag}-${n++}` }) }),
      },
    ],
  });
  return { list, get, patch };
}

async function main(): Promise<void> {
  const { url, stop: stopDatabase } = await startBenchDatabase('cms-bench-');

  const servicePort = await freePort();
  const baselinePort = await freePort();
  const children: ChildProcess[] = [];
  const report: Record<string, unknown> = { startedAt: new Date().toISOString(), durationSeconds: DURATION, connections: CONNECTIONS, page: PAGE, runs: [] };
  try {
    const service = await spawnServer(
      'service',
      // BENCH_PROFILE=1 writes a V8 CPU profile of the service to bench/results/ (see docs/performance.md).
      [...SERVICE_NODE_FLAGS, ...(process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir=bench/results'] : []), 'dist/src/main.js'],
      {
        DATABASE_URL: url,
        PORT: String(servicePort),
        HOST: '127.0.0.1',
        BOOTSTRAP_ADMIN_TOKEN: TOKEN,
        CREDENTIALS_ENCRYPTION_KEY: '11'.repeat(32),
        BACKGROUND_JOBS_ENABLED: 'false',
        RATE_LIMIT_PER_MINUTE: '0',
        LOG_LEVEL: 'warn',
        DATABASE_POOL_SIZE: '10',
        NODE_ENV: 'production',
        OUTBOUND_ALLOWLIST: '127.0.0.1',
      },
      servicePort,
    );
    children.push(service);
    const baseline = await spawnServer(
      'baseline',
      ['-r', '@swc-node/register', 'bench/baseline-server.ts'],
      { DATABASE_URL: url, PORT: String(baselinePort) },
      baselinePort,
    );
    children.push(baseline);

    const runs: Record<string, unknown>[] = [];
    let lastSeed: SeedResult | undefined;
    for (const size of SIZES) {
      process.stdout.write(`Seeding ${size} clusters...\n`);
      const seed = await seedClusters(url, size);
      lastSeed = seed;
      const reps: { service: Record<Target, Measure>; baseline: Record<Target, Measure>; rssMb: number }[] = [];
      const rssBefore = rssMb(service.pid!);
      for (let r = 0; r < REPETITIONS; r++) {
        const s = await measureTargets(`http://127.0.0.1:${servicePort}`, seed, true, `s${size}r${r}`);
        const b = await measureTargets(`http://127.0.0.1:${baselinePort}`, seed, false, `b${size}r${r}`);
        reps.push({ service: s, baseline: b, rssMb: rssMb(service.pid!) });
        process.stdout.write(`  ${size} rep ${r + 1}: list ${s.list.rps}/${b.list.rps} get ${s.get.rps}/${b.get.rps} patch ${s.patch.rps}/${b.patch.rps} req/s (service/baseline), RSS ${reps[r].rssMb} MB\n`);
      }
      // The best repetition of each side is the figure (the first warms caches and the JIT).
      const best = (side: 'service' | 'baseline', t: Target) => reps.map((x) => x[side][t]).sort((a, b) => b.rps - a.rps)[0];
      const targets: Target[] = ['list', 'get', 'patch'];
      const results = Object.fromEntries(
        targets.map((t) => [t, { service: best('service', t), baseline: best('baseline', t), ratio: +(best('service', t).rps / best('baseline', t).rps).toFixed(3) }]),
      );
      runs.push({ clusters: size, results, rssBeforeMb: rssBefore, rssByRepetitionMb: reps.map((x) => x.rssMb), repetitions: reps });
    }
    report.runs = runs;
    if (process.env.BENCH_WEBHOOKS !== '0') {
      process.stdout.write('Webhooks...\n');
      report.webhooks = await benchWebhooks({
        databaseUrl: url,
        serviceBase: `http://127.0.0.1:${servicePort}`,
        token: TOKEN,
        encryptionKey: '11'.repeat(32),
        seed: lastSeed!,
        durationSeconds: DURATION,
        connections: CONNECTIONS,
      });
    }
    const [small, large] = runs as { clusters: number; results: Record<Target, { service: Measure; ratio: number }>; rssByRepetitionMb: number[] }[];
    if (small && large) {
      report.growth = Object.fromEntries(
        (['list', 'get', 'patch'] as Target[]).map((t) => [
          t,
          {
            costRatio: +(small.results[t].service.rps / large.results[t].service.rps).toFixed(3),
            p50Ratio: +(large.results[t].service.p50 / Math.max(small.results[t].service.p50, 0.01)).toFixed(3),
          },
        ]),
      );
    }
    const last = runs[runs.length - 1] as { rssByRepetitionMb: number[] };
    report.rssAfterMb = last.rssByRepetitionMb[last.rssByRepetitionMb.length - 1];
    report.rssGrowthRep2to3Mb = +(last.rssByRepetitionMb[2] - last.rssByRepetitionMb[1]).toFixed(1);
    report.targets = {
      listAndGetRatio: '>= 0.6',
      patchRatio: '>= 0.5',
      growth100kVs10k: '<= 1.3 (service time per request, list)',
      rssAfterMb: '<= 250, no growth between repetition 2 and 3',
    };
    fs.mkdirSync(path.join(ROOT, 'bench', 'results'), { recursive: true });
    fs.writeFileSync(path.join(ROOT, 'bench', 'results', 'latest.json'), JSON.stringify(report, null, 2) + '\n');
    printTable(report);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1500));
    await stopDatabase();
  }
}

function printTable(report: Record<string, any>): void {
  const lines: string[] = [];
  lines.push('');
  lines.push('clusters  target  service req/s  p50 ms  p99 ms | baseline req/s  p50 ms  p99 ms | ratio');
  for (const run of report.runs) {
    for (const t of ['list', 'get', 'patch']) {
      const r = run.results[t];
      lines.push(
        `${String(run.clusters).padStart(8)}  ${t.padEnd(6)}  ${String(r.service.rps).padStart(13)}  ${String(r.service.p50).padStart(6)}  ${String(r.service.p99).padStart(6)} | ${String(r.baseline.rps).padStart(14)}  ${String(r.baseline.p50).padStart(6)}  ${String(r.baseline.p99).padStart(6)} | ${r.ratio.toFixed(2)}`,
      );
    }
  }
  if (report.growth) {
    lines.push('');
    lines.push(`100k vs 10k service cost (10k req/s / 100k req/s): list ${report.growth.list.costRatio}, get ${report.growth.get.costRatio}, patch ${report.growth.patch.costRatio}`);
  }
  if (report.webhooks) {
    const w = report.webhooks;
    lines.push('');
    lines.push(`webhooks: PATCH with an active subscription ${w.patch.withSubscriptionRps} req/s vs ${w.patch.withoutRps} without: ratio ${w.patch.ratio} (target >= 0.9)`);
    lines.push(`webhooks: outbox throughput ${w.outbox.oneReplica.perSecond} deliveries/s with 1 replica, ${w.outbox.twoReplicas.perSecond} with 2 (x${w.outbox.scaling})`);
  }
  lines.push(`service RSS after the runs: ${report.rssAfterMb} MB; growth repetition 2 -> 3: ${report.rssGrowthRep2to3Mb} MB`);
  lines.push('results: bench/results/latest.json');
  process.stdout.write(lines.join('\n') + '\n');
}

main().catch((e) => {
  process.stderr.write(`bench failed: ${(e as Error).stack}\n`);
  process.exit(1);
});
