import 'reflect-metadata';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { startInProcessService } from './in-process-service';
import { BENCH_TOKEN } from './service-flags';
import { seedClusters } from './seed';

/**
 * npm run bench:policies — the cost of POST .../cluster-policies/evaluate (one page of 500) and
 * GET .../cluster-policies/{id}/violations (a full scan of the organisation; a policy reading node pools and one
 * reading only the cluster's own columns, to show the projection) on a seeded organisation of
 * BENCH_POLICY_CLUSTERS clusters (default 100,000; bench/seed.ts), the application booted in-process on a fresh
 * embedded PostgreSQL. Each figure is the median of BENCH_POLICY_RUNS calls (default 3). Writes
 * bench/results/policies.json.
 */
const SIZE = Number(process.env.BENCH_POLICY_CLUSTERS ?? 100_000);
const RUNS = Number(process.env.BENCH_POLICY_RUNS ?? 3);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const service = await startInProcessService('policies');
  const { url, running } = service;
  try {
    process.stdout.write(`Seeding ${SIZE} clusters...\n`);
    await seedClusters(url, SIZE);
    const fastify = running.app.getHttpAdapter().getInstance();
    await fastify.ready();
    const call = async (method: 'GET' | 'POST', url: string, payload?: unknown) => {
      const started = process.hrtime.bigint();
      const res = await fastify.inject({ method, url, payload: payload as never, headers: { authorization: `Token ${BENCH_TOKEN}` } });
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (res.statusCode !== 200) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
      return { ms, body: res.json() as { totalElements: number } };
    };
    // Reads node pools (the projection loads them) and one that reads only the cluster's own columns.
    const policy = { name: 'ha', expression: "object.highlyAvailable && object.nodePools.all(p, p.maxSize <= 20)", message: 'not HA', action: 'Audit' };
    const regionPolicy = { name: 'regions', expression: "object.region in ['eu-central-1', 'eu-west-1']", message: 'region', action: 'Audit' };
    const base = '/api/v1/orgs/bench/cluster-policies';
    const saved = (await call('POST', base, policy)).body as unknown as { identity: string };
    const savedRegion = (await call('POST', base, regionPolicy)).body as unknown as { identity: string };
    const evaluate: number[] = [];
    const violations: number[] = [];
    const regionViolations: number[] = [];
    let found = 0;
    for (let i = 0; i < RUNS; i++) {
      evaluate.push((await call('POST', `${base}/evaluate?size=500&page=${i * 50}`, policy)).ms);
      const v = await call('GET', `${base}/${saved.identity}/violations?size=50`);
      violations.push(v.ms);
      found = v.body.totalElements;
      regionViolations.push((await call('GET', `${base}/${savedRegion.identity}/violations?size=50`)).ms);
    }
    const report = {
      startedAt: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      clusters: SIZE,
      runs: RUNS,
      evaluatePage500Ms: Math.round(median(evaluate)),
      violationsScanMs: Math.round(median(violations)),
      violationsFound: found,
      violationsScanOwnColumnsMs: Math.round(median(regionViolations)),
    };
    fs.mkdirSync(path.join(__dirname, 'results'), { recursive: true });
    fs.writeFileSync(path.join(__dirname, 'results', 'policies.json'), JSON.stringify(report, null, 2) + '\n');
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await service.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
