import autocannon from 'autocannon';
import type { ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { freePort } from '../src/common/free-port';
import { startBenchDatabase } from './database';
import { InspectorSession } from './profile';
import { seedClusters } from './seed';
import { spawnServer } from './server-process';
import { BENCH_TOKEN, requestBenchServiceEnv, SERVICE_NODE_FLAGS } from './service-flags';

/**
 * npm run bench:allocation: bytes allocated per request, service against baseline, for a list page and a single
 * cluster, from V8's sampling heap profiler (HeapProfiler.startSampling over the inspector, objects later collected
 * included), with the functions that allocate most. Allocation is what the young-generation collector pays for
 * (docs/adr/0066-larger-young-generation.md), and unlike throughput it barely depends on how
 * busy the machine is. 10,000 clusters; writes bench/results/allocation.md and allocation.json.
 */

const ROOT = path.resolve(__dirname, '..');
const RESULTS = path.join(ROOT, 'bench', 'results');
const TOKEN = BENCH_TOKEN;
const REQUESTS = Number(process.env.BENCH_ALLOCATION_REQUESTS ?? 500);
const TOP = 15;

interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingNode[];
}

interface Allocation {
  kbPerRequest: number;
  top: { kbPerRequest: number; frame: string }[];
}

const where = (url: string) => url.replace(/^.*node_modules\//, '').replace(/^.*\/(src|dist|bench)\//, '$1/');

async function sample(inspectPort: number, opts: autocannon.Options): Promise<Allocation> {
  await autocannon({ ...opts, amount: 300 }); // warm the path
  const session = await InspectorSession.connect(inspectPort);
  try {
    await session.send('HeapProfiler.enable');
    await session.send('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    let failure: unknown = null;
    try {
      await autocannon({ ...opts, amount: REQUESTS });
    } catch (e) {
      failure = e;
    }
    const { profile } = await session.send<{ profile: { head: SamplingNode } }>('HeapProfiler.stopSampling');
    if (failure) throw failure;
    const byFrame = new Map<string, number>();
    let total = 0;
    const walk = (n: SamplingNode) => {
      const f = n.callFrame;
      const key = `\`${f.functionName || '(anonymous)'}\` ${where(f.url)}${f.url ? `:${f.lineNumber + 1}` : ''}`;
      byFrame.set(key, (byFrame.get(key) ?? 0) + n.selfSize);
      total += n.selfSize;
      n.children.forEach(walk);
    };
    walk(profile.head);
    const kb = (bytes: number) => +(bytes / REQUESTS / 1024).toFixed(1);
    return {
      kbPerRequest: kb(total),
      top: [...byFrame].sort((a, b) => b[1] - a[1]).slice(0, TOP).map(([frame, bytes]) => ({ frame, kbPerRequest: kb(bytes) })),
    };
  } finally {
    session.close();
  }
}

async function main(): Promise<void> {
  const { url, stop } = await startBenchDatabase('cms-alloc-');
  const children: ChildProcess[] = [];
  try {
    const [servicePort, baselinePort, serviceInspect, baselineInspect] = [await freePort(), await freePort(), await freePort(), await freePort()];
    children.push(
      await spawnServer(
        'service',
        [...SERVICE_NODE_FLAGS, `--inspect=127.0.0.1:${serviceInspect}`, 'dist/src/main.js'],
        requestBenchServiceEnv(url, servicePort),
        servicePort,
      ),
    );
    children.push(
      await spawnServer('baseline', [`--inspect=127.0.0.1:${baselineInspect}`, '-r', '@swc-node/register', 'bench/baseline-server.ts'], { DATABASE_URL: url, PORT: String(baselinePort) }, baselinePort),
    );
    process.stdout.write('Seeding 10000 clusters...\n');
    const seed = await seedClusters(url, 10_000);
    const paths = {
      list: `/api/v1/orgs/${seed.organisationSlug}/clusters?page=100&size=50`,
      get: `/api/v1/orgs/${seed.organisationSlug}/clusters/${seed.environmentSlug}/${seed.clusterSlugs[7]}`,
    };
    const report: Record<string, Record<string, Allocation>> = {};
    for (const [op, p] of Object.entries(paths)) {
      report[op] = {
        service: await sample(serviceInspect, { url: `http://127.0.0.1:${servicePort}${p}`, headers: { authorization: `Token ${TOKEN}` }, connections: 4 }),
        baseline: await sample(baselineInspect, { url: `http://127.0.0.1:${baselinePort}${p}`, connections: 4 }),
      };
      process.stdout.write(`${op}: ${report[op].service.kbPerRequest} KB per request (service), ${report[op].baseline.kbPerRequest} KB (baseline)\n`);
    }
    const md = [
      '# Allocation per request (10,000 clusters)',
      '',
      `Written by \`npm run bench:allocation\` (${new Date().toISOString()}): V8's sampling heap profiler (a sample every 4 KB on average, ` +
        `objects collected later included), ${REQUESTS} requests at 4 connections per operation and side, after 300 to warm up. ` +
        'A list is page 100 of size 50; a get is one cluster. Frames are where the bytes were allocated (inlined functions count in their caller).',
      '',
      '| operation | service KB/request | baseline KB/request | ratio |',
      '|---|---:|---:|---:|',
      ...Object.entries(report).map(([op, r]) => `| ${op} | ${r.service.kbPerRequest} | ${r.baseline.kbPerRequest} | ${(r.service.kbPerRequest / r.baseline.kbPerRequest).toFixed(2)} |`),
      ...Object.entries(report).flatMap(([op, r]) =>
        (['service', 'baseline'] as const).flatMap((side) => ['', `## ${op}: ${side}`, '', '| KB/request | frame |', '|---:|---|', ...r[side].top.map((x) => `| ${x.kbPerRequest} | ${x.frame} |`)]),
      ),
      '',
    ];
    fs.mkdirSync(RESULTS, { recursive: true });
    fs.writeFileSync(path.join(RESULTS, 'allocation.md'), md.join('\n'));
    fs.writeFileSync(path.join(RESULTS, 'allocation.json'), JSON.stringify({ at: new Date().toISOString(), requests: REQUESTS, report }, null, 2) + '\n');
    process.stdout.write('results: bench/results/allocation.md, bench/results/allocation.json\n');
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1500));
    await stop();
  }
}

main().catch((e) => {
  process.stderr.write(`bench:allocation failed: ${(e as Error).stack}\n`);
  process.exit(1);
});
