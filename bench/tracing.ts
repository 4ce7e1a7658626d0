import autocannon from 'autocannon';
import { ChildProcess } from 'child_process';
import * as http from 'http';
import { AddressInfo } from 'net';
import * as os from 'os';
import { freePort } from '../src/common/free-port';
import { startBenchDatabase } from './database';
import { spawnServer } from './server-process';
import { BENCH_TOKEN, requestBenchServiceEnv, SERVICE_NODE_FLAGS } from './service-flags';

/**
 * `npm run bench:tracing`: what tracing (src/tracing.ts) costs a request. The built service (dist/src/main.js) on one
 * database, three times in a row: tracing off (the baseline), tracing on (every span exported over OTLP/HTTP to a
 * local receiver that accepts and drops them), tracing off again (how much two identical runs differ: the noise).
 * Each serves `GET /api/v1/memberships` (authentication, two statements) to autocannon for BENCH_SECONDS (default 10)
 * with BENCH_CONNECTIONS (default 10). Prints requests per second and p99 latency of each, and the ratios to the
 * baseline, with the machine's load average; the figures are for comparing within one run, not across machines.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);

/** An OTLP/HTTP endpoint that accepts and drops spans, counting the requests. */
async function sink(): Promise<{ url: string; posts: () => number; close(): Promise<void> }> {
  let posts = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      posts++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, posts: () => posts, close: () => new Promise((r) => server.close(() => r())) };
}

interface Run {
  name: string;
  requestsPerSecond: number;
  p99Ms: number;
  errors: number;
}

async function measure(name: string, url: string, env: NodeJS.ProcessEnv): Promise<Run> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  try {
    child = await spawnServer(name, [...SERVICE_NODE_FLAGS, 'dist/src/main.js'], { ...requestBenchServiceEnv(url, port), ...env }, port);
    const target = { url: `http://127.0.0.1:${port}/api/v1/memberships`, headers: { authorization: `Token ${BENCH_TOKEN}` } };
    await autocannon({ ...target, connections: CONNECTIONS, duration: 2 }); // warm-up
    const r = await autocannon({ ...target, connections: CONNECTIONS, duration: SECONDS });
    return { name, requestsPerSecond: r.requests.average, p99Ms: r.latency.p99, errors: r.errors + r.non2xx };
  } finally {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child!.once('exit', r));
    }
  }
}

async function main(): Promise<void> {
  const db = await startBenchDatabase('cms-bench-tracing-');
  const receiver = await sink();
  try {
    const off = await measure('tracing off (baseline)', db.url, {});
    const on = await measure('tracing on', db.url, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
    const again = await measure('tracing off again (noise)', db.url, {});
    const load = os.loadavg().map((l) => l.toFixed(2)).join(' ');
    process.stdout.write(`GET /api/v1/memberships, ${CONNECTIONS} connections, ${SECONDS} s each; load average ${load}; ${os.cpus().length} cores\n`);
    for (const r of [off, on, again]) {
      process.stdout.write(
        `${r.name.padEnd(28)} ${r.requestsPerSecond.toFixed(0).padStart(6)} req/s (x${(r.requestsPerSecond / off.requestsPerSecond).toFixed(2)})` +
          `  p99 ${String(r.p99Ms).padStart(4)} ms (x${(r.p99Ms / off.p99Ms).toFixed(2)})  errors ${r.errors}\n`,
      );
    }
    process.stdout.write(`OTLP export requests received: ${receiver.posts()}\n`);
    if (receiver.posts() === 0) throw new Error('tracing on exported nothing: the measurement of tracing on is not one');
  } finally {
    await receiver.close();
    await db.stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
