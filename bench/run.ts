import autocannon from 'autocannon';
import type { ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { startBenchDatabase } from './database';
import { seedClusters, SeedResult } from './seed';
import { freePort } from '../src/common/free-port';
import { benchWebhooks } from './webhooks';
import { benchLedgerWrites } from './ledger';
import { spawnServer } from './server-process';
import { BENCH_TOKEN, requestBenchServiceEnv, SERVICE_NODE_FLAGS } from './service-flags';
import { InspectorSession, profileMarkdown, ProfileSummary, summariseProfile, writeProfile } from './profile';
import { perRequest, StatementCounter } from './statements';

/**
 * npm run bench: the service against a minimal baseline (Fastify + pg, same SQL, same JSON, no Nest,
 * no auth) on the same data in one run, at 10,000 and then 100,000 clusters. Prints a table and writes
 * bench/results/latest.json. In each repetition the two sides of an operation are measured back to back, the first side
 * alternating between repetitions; the best repetition of each side counts. After the throughput measurements of each size, an analysis pass sends a fixed
 * number of requests of each operation to each side and reports statements per request (pg_stat_statements) and
 * CPU ms per request (/proc); at the last size, V8 CPU profiles of each operation on each side are summarised in
 * bench/results/profile-<op>.md (raw profiles in bench/results/profiles/, not committed).
 *
 * BENCH_QUICK=1: 10,000 clusters only, 3 s per measurement, two repetitions, no webhooks (about 2 minutes).
 */

const ROOT = path.resolve(__dirname, '..');
const RESULTS = path.join(ROOT, 'bench', 'results');
const TOKEN = BENCH_TOKEN;
const QUICK = process.env.BENCH_QUICK === '1';
const DURATION = Number(process.env.BENCH_DURATION_SECONDS ?? (QUICK ? 3 : 5));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const REPETITIONS = Number(process.env.BENCH_REPETITIONS ?? (QUICK ? 2 : 3));
const SIZES = (process.env.BENCH_SIZES ?? (QUICK ? '10000' : '10000,100000')).split(',').map(Number);
const PAGE = Number(process.env.BENCH_PAGE ?? 100);
/** Requests per operation and side in the analysis pass (statements, CPU, profiles); 0 turns the pass off. */
const ANALYSE_REQUESTS = Number(process.env.BENCH_ANALYSE_REQUESTS ?? 300);
const PROFILE = process.env.BENCH_PROFILE !== '0' && ANALYSE_REQUESTS > 0;
const WEBHOOKS = process.env.BENCH_WEBHOOKS ? process.env.BENCH_WEBHOOKS !== '0' : !QUICK;
/** The usage ledger's cost on the cluster PATCH and the node-pool PUT (bench/ledger.ts); off in a quick run. */
const LEDGER = process.env.BENCH_LEDGER ? process.env.BENCH_LEDGER !== '0' : !QUICK;

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

/**
 * CPU time (user + system) in ms, from /proc (clock ticks of 10 ms): of the whole process (every thread: GC helpers,
 * libuv's pool), or with `mainThread` of its main thread alone, the one that runs the event loop.
 */
function cpuMs(pid: number, mainThread = false): number {
  const stat = fs.readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // utime, stime (fields 14 and 15 of the line)
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
const TARGETS: Target[] = ['list', 'get', 'patch'];

/** The autocannon options of one operation (a PATCH changes the description each time, so each one writes). */
function targetOptions(t: Target, base: string, seed: SeedResult, auth: boolean, tag: string): autocannon.Options {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (auth) headers.authorization = `Token ${TOKEN}`;
  const org = seed.organisationSlug;
  const env = seed.environmentSlug;
  const cluster = seed.clusterSlugs[7];
  if (t === 'list') return { url: `${base}/api/v1/orgs/${org}/clusters?page=${PAGE}&size=50`, headers };
  if (t === 'get') return { url: `${base}/api/v1/orgs/${org}/clusters/${env}/${cluster}`, headers };
  let n = 0;
  return {
    url: `${base}/api/v1/orgs/${org}/clusters/${env}/${cluster}`,
    headers,
    requests: [
      {
        method: 'PATCH',
        setupRequest: (req) => ({ ...req, method: 'PATCH', body: JSON.stringify({ description: `${tag}-${n++}` }) }),
      },
    ],
  };
}

/**
 * One repetition: the two sides of each operation are measured back to back, the side that goes first alternating
 * between repetitions, so that neither side is always measured in the wake of the other's writes (a PATCH burst
 * leaves dead tuples and autovacuum work behind) or right after seeding.
 */
async function measureRepetition(
  bases: { service: string; baseline: string },
  seed: SeedResult,
  size: number,
  r: number,
): Promise<{ service: Record<Target, Measure>; baseline: Record<Target, Measure> }> {
  const only = process.env.BENCH_TARGETS?.split(',');
  const skip: Measure = { rps: 0, p50: 0, p99: 0, errors: 0, non2xx: 0 };
  const out = { service: {} as Record<Target, Measure>, baseline: {} as Record<Target, Measure> };
  const order: ('service' | 'baseline')[] = r % 2 === 0 ? ['service', 'baseline'] : ['baseline', 'service'];
  for (const t of TARGETS) {
    for (const side of order) {
      out[side][t] =
        only && !only.includes(t) ? skip : await measure(targetOptions(t, bases[side], seed, side === 'service', `${side[0]}${size}r${r}`));
    }
  }
  return out;
}

interface Side {
  name: 'service' | 'baseline';
  base: string;
  auth: boolean;
  pid: number;
  inspectPort?: number;
}

interface Analysis {
  requests: number;
  non2xx: number;
  cpuMsPerRequest: number;
  statementsPerRequest?: number;
  dbMsPerRequest?: number;
  statements?: { perRequest: number; meanMs: number; query: string }[];
  /** CPU time of the main thread (the event loop) per request. */
  eventLoopMsPerRequest: number;
  /** The sampled busy time of the profile per request: wall-clock, so it includes time the thread waited for a core. */
  profiledBusyMsPerRequest?: number;
  profile?: ProfileSummary;
}

/**
 * A fixed number of requests of one operation to one side, at 4 connections: statements per request (a
 * pg_stat_statements delta; both sides are measured one after the other), CPU ms per request of the process
 * (/proc), and with `profile` a second batch under V8's profiler (its overhead would inflate the CPU figure).
 */
async function analyse(side: Side, t: Target, seed: SeedResult, counter: StatementCounter | null, profile: boolean, tag: string): Promise<Analysis> {
  const opts = { ...targetOptions(t, side.base, seed, side.auth, tag), connections: 4, amount: ANALYSE_REQUESTS };
  await autocannon({ ...opts, amount: 50 }); // warm this path
  await counter?.reset();
  const cpuBefore = cpuMs(side.pid);
  const loopBefore = cpuMs(side.pid, true);
  const r = await autocannon(opts);
  const cpu = cpuMs(side.pid) - cpuBefore;
  const loop = cpuMs(side.pid, true) - loopBefore;
  const requests = r.requests.total;
  const out: Analysis = {
    requests,
    non2xx: r.non2xx,
    cpuMsPerRequest: +(cpu / requests).toFixed(3),
    eventLoopMsPerRequest: +(loop / requests).toFixed(3),
  };
  if (counter) Object.assign(out, perRequest(await counter.read(), requests));
  if (profile && side.inspectPort) {
    const session = await InspectorSession.connect(side.inspectPort);
    try {
      let profiled = 0;
      const cpuProfile = await session.profile(async () => {
        profiled = (await autocannon({ ...opts, url: opts.url })).requests.total;
      });
      writeProfile(path.join(RESULTS, 'profiles'), `${side.name}-${t}`, cpuProfile);
      out.profile = summariseProfile(cpuProfile, profiled);
      out.profiledBusyMsPerRequest = out.profile.busyMsPerRequest;
    } finally {
      session.close();
    }
  }
  return out;
}

function writeProfileReports(size: number, analyses: Record<Target, Record<Side['name'], Analysis>>): void {
  for (const t of TARGETS) {
    if (!analyses[t]) continue;
    const { service, baseline } = analyses[t];
    if (!service.profile || !baseline.profile) continue;
    const row = (label: string, a: Analysis) =>
      `| ${label} | ${a.statementsPerRequest ?? 'n/a'} | ${a.dbMsPerRequest ?? 'n/a'} | ${a.cpuMsPerRequest} | ${a.eventLoopMsPerRequest} | ${a.profiledBusyMsPerRequest} |`;
    const stmts = (a: Analysis) => (a.statements ?? []).map((x) => `| ${x.perRequest} | ${x.meanMs} | \`${x.query.replace(/\|/g, '\\|')}\` |`);
    const md = [
      `# Profile: ${t} (${size.toLocaleString('en')} clusters)`,
      '',
      `Written by \`npm run bench\` (${new Date().toISOString()}${QUICK ? ', BENCH_QUICK=1' : ''}). ${ANALYSE_REQUESTS} requests at 4 connections per side; ` +
        'statements from pg_stat_statements (top-level, BEGIN/COMMIT included; database ms is their execution time, ' +
        'row-lock waits included); CPU from /proc, of the whole process and of its main thread (the event loop); the ' +
        'profile is of a second batch under V8\'s sampling profiler, whose busy time is wall-clock (it counts time the ' +
        'thread waited for a core, so it exceeds the CPU figure on a loaded machine): use its shares, not its total. ' +
        'The machine is shared: absolute figures move between runs, the comparison within one run is what counts.',
      '',
      '| side | statements/request | database ms/request | process CPU ms/request | event-loop CPU ms/request | profiled busy ms/request |',
      '|---|---:|---:|---:|---:|---:|',
      row('service', service),
      row('baseline', baseline),
      '',
      '## Statements',
      '',
      '### service',
      '',
      '| per request | mean ms | statement |',
      '|---:|---:|---|',
      ...stmts(service),
      '',
      '### baseline',
      '',
      '| per request | mean ms | statement |',
      '|---:|---:|---|',
      ...stmts(baseline),
      '',
      '## CPU profile',
      '',
      profileMarkdown('service', service.profile),
      profileMarkdown('baseline', baseline.profile),
    ];
    fs.writeFileSync(path.join(RESULTS, `profile-${t}.md`), md.join('\n'));
  }
}

async function main(): Promise<void> {
  const { url, statements, stop: stopDatabase } = await startBenchDatabase('cms-bench-', { statements: ANALYSE_REQUESTS > 0 });

  const servicePort = await freePort();
  const baselinePort = await freePort();
  // With profiles, both processes open the inspector (loopback) and the bench profiles one operation at a time.
  const serviceInspect = PROFILE ? await freePort() : undefined;
  const baselineInspect = PROFILE ? await freePort() : undefined;
  const inspect = (port: number | undefined) => (port ? [`--inspect=127.0.0.1:${port}`] : []);
  const children: ChildProcess[] = [];
  const report: Record<string, unknown> = { startedAt: new Date().toISOString(), durationSeconds: DURATION, connections: CONNECTIONS, page: PAGE, runs: [] };
  try {
    const service = await spawnServer(
      'service',
      [...SERVICE_NODE_FLAGS, ...inspect(serviceInspect), 'dist/src/main.js'],
      requestBenchServiceEnv(url, servicePort),
      servicePort,
    );
    children.push(service);
    const baseline = await spawnServer(
      'baseline',
      [...inspect(baselineInspect), '-r', '@swc-node/register', 'bench/baseline-server.ts'],
      { DATABASE_URL: url, PORT: String(baselinePort) },
      baselinePort,
    );
    children.push(baseline);

    const counter = statements ? await StatementCounter.connect(url) : null;
    const sides: Side[] = [
      { name: 'service', base: `http://127.0.0.1:${servicePort}`, auth: true, pid: service.pid!, inspectPort: serviceInspect },
      { name: 'baseline', base: `http://127.0.0.1:${baselinePort}`, auth: false, pid: baseline.pid!, inspectPort: baselineInspect },
    ];
    const runs: Record<string, unknown>[] = [];
    let lastSeed: SeedResult | undefined;
    for (const size of SIZES) {
      process.stdout.write(`Seeding ${size} clusters...\n`);
      const seed = await seedClusters(url, size);
      lastSeed = seed;
      const reps: { service: Record<Target, Measure>; baseline: Record<Target, Measure>; rssMb: number }[] = [];
      const rssBefore = rssMb(service.pid!);
      for (let r = 0; r < REPETITIONS; r++) {
        const { service: s, baseline: b } = await measureRepetition(
          { service: `http://127.0.0.1:${servicePort}`, baseline: `http://127.0.0.1:${baselinePort}` },
          seed,
          size,
          r,
        );
        reps.push({ service: s, baseline: b, rssMb: rssMb(service.pid!) });
        process.stdout.write(`  ${size} rep ${r + 1}: list ${s.list.rps}/${b.list.rps} get ${s.get.rps}/${b.get.rps} patch ${s.patch.rps}/${b.patch.rps} req/s (service/baseline), RSS ${reps[r].rssMb} MB\n`);
      }
      // The best repetition of each side is the figure (the first warms caches and the JIT).
      const best = (side: 'service' | 'baseline', t: Target) => reps.map((x) => x[side][t]).sort((a, b) => b.rps - a.rps)[0];
      const results = Object.fromEntries(
        TARGETS.map((t) => [t, { service: best('service', t), baseline: best('baseline', t), ratio: +(best('service', t).rps / best('baseline', t).rps).toFixed(3) }]),
      );
      let analysis: Record<Target, Record<Side['name'], Analysis>> | undefined;
      if (ANALYSE_REQUESTS > 0) {
        const last = size === SIZES[SIZES.length - 1];
        process.stdout.write(`  analysis: ${ANALYSE_REQUESTS} requests per operation and side${last && PROFILE ? ', with CPU profiles' : ''}\n`);
        analysis = {} as Record<Target, Record<Side['name'], Analysis>>;
        const only = process.env.BENCH_TARGETS?.split(',');
        for (const t of TARGETS) {
          if (only && !only.includes(t)) continue;
          analysis[t] = {} as Record<Side['name'], Analysis>;
          for (const side of sides) analysis[t][side.name] = await analyse(side, t, seed, counter, last && PROFILE, `a${side.name[0]}${size}`);
          const { service: s, baseline: b } = analysis[t];
          process.stdout.write(
            `  ${t}: statements/request ${s.statementsPerRequest ?? 'n/a'}/${b.statementsPerRequest ?? 'n/a'}, CPU ms/request ${s.cpuMsPerRequest}/${b.cpuMsPerRequest}` +
              `, event-loop (main thread) CPU ms/request ${s.eventLoopMsPerRequest}/${b.eventLoopMsPerRequest} (service/baseline)\n`,
          );
        }
        if (last && PROFILE) writeProfileReports(size, analysis);
      }
      runs.push({
        clusters: size,
        results,
        analysis:
          analysis &&
          Object.fromEntries(
            TARGETS.filter((t) => analysis![t]).map((t) => [t, Object.fromEntries(sides.map((sd) => [sd.name, withoutProfile(analysis![t][sd.name])]))]),
          ),
        rssBeforeMb: rssBefore,
        rssByRepetitionMb: reps.map((x) => x.rssMb),
        repetitions: reps,
      });
    }
    await counter?.close();
    report.runs = runs;
    if (WEBHOOKS) {
      process.stdout.write('Webhooks...\n');
      report.webhooks = await benchWebhooks({
        databaseUrl: url,
        serviceBase: `http://127.0.0.1:${servicePort}`,
        token: TOKEN,
        encryptionKey: '63560448b7e7b6fde55bc18b9b34f35ab9d7d9f23000ab0fc075a0bc558159d3',
        seed: lastSeed!,
        durationSeconds: DURATION,
        connections: CONNECTIONS,
      });
    }
    if (LEDGER) {
      process.stdout.write('Usage ledger...\n');
      report.ledger = await benchLedgerWrites({
        databaseUrl: url,
        serviceBase: `http://127.0.0.1:${servicePort}`,
        servicePid: service.pid,
        token: TOKEN,
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
    const rss = last.rssByRepetitionMb;
    report.rssAfterMb = rss[rss.length - 1];
    report.rssGrowthRep2to3Mb = rss.length >= 3 ? +(rss[2] - rss[1]).toFixed(1) : null;
    report.targets = {
      listGetPatchRatio: '>= 0.8 (goal 0.9)',
      growth100kVs10k: '<= 1.3 (service time per request, list)',
      rssAfterMb: '<= 250, no growth between repetition 2 and 3',
      ledgerOverhead: '<= 5 % on the cluster PATCH and the node-pool PUT',
    };
    report.quick = QUICK;
    fs.mkdirSync(RESULTS, { recursive: true });
    // A quick run does not replace the full run's figures.
    fs.writeFileSync(path.join(RESULTS, QUICK ? 'quick.json' : 'latest.json'), JSON.stringify(report, null, 2) + '\n');
    printTable(report);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1500));
    await stopDatabase();
  }
}

/** The analysis without the profile's frame lists (those are in profile-<op>.md), for latest.json. */
function withoutProfile(a: Analysis): Omit<Analysis, 'profile'> {
  const { profile: _profile, ...rest } = a;
  return rest;
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
  for (const run of report.runs) {
    if (!run.analysis) continue;
    lines.push('');
    lines.push(`${run.clusters} clusters, per request (service / baseline): statements, process CPU ms, event-loop (main thread) CPU ms`);
    for (const t of ['list', 'get', 'patch']) {
      if (!run.analysis[t]) continue;
      const { service: s, baseline: b } = run.analysis[t];
      lines.push(
        `  ${t.padEnd(6)} ${s.statementsPerRequest ?? 'n/a'} / ${b.statementsPerRequest ?? 'n/a'}   ${s.cpuMsPerRequest} / ${b.cpuMsPerRequest}   ${s.eventLoopMsPerRequest} / ${b.eventLoopMsPerRequest}`,
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
  if (report.ledger) {
    const l = report.ledger;
    lines.push('');
    for (const [name, f] of [['cluster PATCH', l.patchCluster], ['node-pool PUT (resize)', l.putNodePool]] as const) {
      lines.push(`ledger: ${name} ${f.withLedgerRps} req/s with the ledger's triggers, ${f.withoutLedgerRps} without: overhead ${(100 * f.overhead).toFixed(1)} % (target <= ${100 * l.targetOverhead} %)`);
    }
    for (const [name, op] of [['cluster PATCH', 'patchCluster'], ['node-pool PUT (resize)', 'putNodePool']] as const) {
      const c = l.cost[op];
      const f = l.inFunctions?.[op];
      const inside = f ? `, inside the ledger's functions ${f.msPerRequest} ms (${f.calls} calls)` : '';
      const cpu = c.cpuMsPerRequest.overhead === null ? 'not measured' : `${c.cpuMsPerRequest.withLedger} / ${c.cpuMsPerRequest.withoutLedger} ms (${(100 * c.cpuMsPerRequest.overhead).toFixed(1)} %)`;
      lines.push(`ledger: ${name} CPU per request ${cpu}${inside}`);
    }
  }
  lines.push(`service RSS after the runs: ${report.rssAfterMb} MB; growth repetition 2 -> 3: ${report.rssGrowthRep2to3Mb} MB`);
  lines.push(`results: bench/results/${report.quick ? 'quick' : 'latest'}.json${PROFILE ? ', bench/results/profile-<op>.md' : ''}`);
  process.stdout.write(lines.join('\n') + '\n');
}

main().catch((e) => {
  process.stderr.write(`bench failed: ${(e as Error).stack}\n`);
  process.exit(1);
});
