import autocannon from 'autocannon';
import type { ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { monitorEventLoopDelay, type Histogram } from 'perf_hooks';
import { Client } from 'pg';
import { Worker } from 'worker_threads';
import { freePort } from '../src/common/free-port';
import { hashToken } from '../src/tokens/tokens.service';
import { startBenchDatabase } from './database';
import { databaseCpuDelta, databaseCpuMs, postmasterPid } from './process-cpu';
import { seedClusters } from './seed';
import { spawnServer } from './server-process';
import { BENCH_TOKEN, requestBenchServiceEnv, SERVICE_NODE_FLAGS } from './service-flags';

/**
 * npm run bench:isolation: one organisation (a VIEWER) runs worst-case cluster policy dry-runs, 20 at a time, while
 * `/health` and another organisation's cluster GET are measured; their p99 under that load is compared with their
 * p99 without it, measured in the same run (target: within 2x).
 *
 * - The dry-runs alternate the audit's expression (27 doublings of the cluster name: refused when checked) and the
 *   costliest expression the write-time estimate accepts, evaluated on a page of 500 clusters. Each of the 20
 *   attacker loops sends its next dry-run as soon as the last one answers, after the Retry-After of a 429 (as the
 *   per-user rate limit would make it: a client that floods regardless is the rate limit's to stop).
 * - The probes are open-loop (a request every 1000/BENCH_PROBE_RATE ms whatever the answers, timed from when it
 *   was due with a sub-millisecond clock), each on its own thread, apart from the attacker's event loop, and run throughout, while the attack is switched on and off in phases of
 *   BENCH_ISOLATION_PHASE_SECONDS, BENCH_ISOLATION_CYCLES times: a sample sent more than a second into an attack
 *   phase counts as loaded, one sent and answered while no dry-run was in flight counts as unloaded. Alternating
 *   keeps the machine's other work (a shared 2-core machine) alike on both sides of the ratio.
 *
 * Writes bench/results/isolation-<date>.json and prints the table of docs/performance.md.
 */

const ROOT = path.resolve(__dirname, '..');
const RESULTS = path.join(ROOT, 'bench', 'results');
const PHASE_MS = 1000 * Number(process.env.BENCH_ISOLATION_PHASE_SECONDS ?? 5);
const CYCLES = Number(process.env.BENCH_ISOLATION_CYCLES ?? 10);
const ATTACK_CONNECTIONS = Number(process.env.BENCH_ISOLATION_CONNECTIONS ?? 20);
const PROBE_RATE = Number(process.env.BENCH_PROBE_RATE ?? 50);
/** The executor thread priorities measured, one service start each (EXECUTOR_THREAD_PRIORITY), in this order. */
const PRIORITIES = (process.env.BENCH_ISOLATION_PRIORITIES ?? 'low,idle').split(',').filter(Boolean);
const TARGET_RATIO = 2;
const NOISY_TOKEN = 'cms_bench_noisy_viewer_token_0123456789abcdef';

const AUDIT = `[object.name]${'.map(a, a + a)'.repeat(27)}[0].size() > 0`;
/** About 80,000 units of real work per cluster whatever the cluster holds (the estimate's limit is 100,000). */
const HEAVIEST = `cel.bind(h, [${Array.from({ length: 100 }, (_, i) => i).join(', ')}], h.all(i, h.all(j, i + j >= 0)))`;

const round = (x: number) => Math.round(x * 100) / 100;
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/**
 * The attack's state, in shared memory: the probes run on their own thread (their own event loop, so the attack's
 * answers arriving in this one cannot delay a probe's timer or its answer) and read it to label their samples.
 */
class AttackState {
  readonly buffer = new SharedArrayBuffer(16);
  private readonly flags = new Int32Array(this.buffer, 0, 2);
  private readonly since = new Float64Array(this.buffer, 8, 1);
  get on(): boolean {
    return Atomics.load(this.flags, 0) === 1;
  }
  set on(on: boolean) {
    // Stamped on the shared clock (epoch ms) when switched on.
    if (on && !this.on) this.since[0] = performance.timeOrigin + performance.now();
    Atomics.store(this.flags, 0, on ? 1 : 0);
  }
  get inFlight(): number {
    return Atomics.load(this.flags, 1);
  }
  set inFlight(n: number) {
    Atomics.store(this.flags, 1, n);
  }
}

/** The attacker: idle while the attack is off, sending dry-runs while it is on. */
class Attack extends AttackState {
  readonly statuses: Record<string, number> = {};
  private stopped = false;

  constructor(
    private readonly base: string,
    private readonly bodies: { path: string; headers: Record<string, string>; body: string }[],
  ) {
    super();
  }

  /** The attacker's loops: idle while the attack is off, sending dry-runs while it is on. */
  run(connections: number): Promise<unknown> {
    const loop = async (n: number) => {
      for (let i = n; !this.stopped; i++) {
        if (!this.on) {
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        const b = this.bodies[i % this.bodies.length];
        this.inFlight++;
        try {
          const res = await fetch(`${this.base}${b.path}`, { method: 'POST', headers: b.headers, body: b.body });
          await res.arrayBuffer();
          this.statuses[res.status] = (this.statuses[res.status] ?? 0) + 1;
          if (res.status === 429) {
            this.inFlight--;
            await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get('retry-after') ?? 1)));
            continue;
          }
        } catch {
          this.statuses.error = (this.statuses.error ?? 0) + 1;
        }
        this.inFlight--;
      }
    };
    return Promise.all(Array.from({ length: connections }, (_, n) => loop(n)));
  }

  stop(): void {
    this.stopped = true;
    this.on = false;
  }
}

interface Samples {
  loaded: number[];
  unloaded: number[];
  errors: number;
  non2xx: number;
}

/**
 * The probe thread's program (plain JavaScript, evaluated by a Worker): an open-loop probe of one URL until `until`
 * (epoch ms), each sample labelled by the attack's shared state; posts its Samples when done.
 */
const PROBE_PROGRAM = `
const { workerData, parentPort } = require('worker_threads');
const { url, headers, rate, until, buffer } = workerData;
const flags = new Int32Array(buffer, 0, 2);
const since = new Float64Array(buffer, 8, 1);
const now = () => performance.timeOrigin + performance.now();
const on = () => Atomics.load(flags, 0) === 1;
const inFlight = () => Atomics.load(flags, 1);
(async () => {
  const out = { loaded: [], unloaded: [], errors: 0, non2xx: 0 };
  const pending = [];
  const start = now();
  for (let i = 0; ; i++) {
    const due = start + (i * 1000) / rate;
    if (due > until) break;
    const wait = due - now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const loadedAtSend = on() && due - since[0] > 1000;
    const quietAtSend = !on() && inFlight() === 0;
    pending.push(
      fetch(url, { headers })
        .then(async (res) => {
          await res.arrayBuffer();
          if (res.status < 200 || res.status > 299) out.non2xx++;
          const ms = now() - due;
          if (loadedAtSend && on()) out.loaded.push(ms);
          else if (quietAtSend && !on() && inFlight() === 0) out.unloaded.push(ms);
        })
        .catch(() => void out.errors++),
    );
  }
  await Promise.all(pending);
  parentPort.postMessage(out);
})();
`;

/** Open-loop probe of one URL until `until` (epoch ms) on its own thread; each sample labelled by the attack's state. */
function probe(url: string, headers: Record<string, string>, attack: AttackState, until: number): Promise<Samples> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(PROBE_PROGRAM, { eval: true, workerData: { url, headers, rate: PROBE_RATE, until, buffer: attack.buffer } });
    worker.once('message', (samples: Samples) => resolve(samples));
    worker.once('error', reject);
    worker.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`the probe thread exited with ${code}`))));
  });
}

/** The service's threads by what they run (their names in /proc): which of them competes with the event loop. */
const THREAD_GROUPS: Record<string, string> = { MainThread: 'mainThread', WorkerThread: 'executorThreads', V8Worker: 'v8PlatformThreads' };
type CpuSample = { process: number; mainThread: number; groups: Record<string, number>; machineBusy: number; machineTotal: number };

/**
 * CPU ms (user + system) of the service: the whole process, its main thread (the event loop's), and its threads
 * by group (executor threads, V8's platform threads that run garbage collection for every isolate, the rest); and
 * the machine's busy and total CPU ms (/proc/stat), to tell a saturated machine from a slow service.
 */
function cpuMs(pid: number): CpuSample {
  const read = (file: string) => {
    const stat = fs.readFileSync(file, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  };
  const groups: Record<string, number> = { mainThread: 0, executorThreads: 0, v8PlatformThreads: 0, otherThreads: 0 };
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      groups[THREAD_GROUPS[name] ?? 'otherThreads'] += read(`/proc/${pid}/task/${tid}/stat`);
    } catch {
      /* the thread ended meanwhile */
    }
  }
  const cpu = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0) * 10;
  const idle = (cpu[3] + cpu[4]) * 10;
  return { process: read(`/proc/${pid}/stat`), mainThread: read(`/proc/${pid}/task/${pid}/stat`), groups, machineBusy: total - idle, machineTotal: total };
}

interface LoopDelay {
  p99: number;
  max: number;
}

/** The service's event-loop delay (ms) since the last scrape of its /metrics, which resets prom-client's monitor. */
async function serviceLoopDelay(base: string, headers: Record<string, string>): Promise<LoopDelay> {
  const text = await (await fetch(`${base}/metrics`, { headers })).text();
  const read = (name: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`cms_nodejs_eventloop_lag_${name}_seconds `));
    return line ? 1000 * Number(line.split(' ')[1]) : NaN;
  };
  return { p99: read('p99'), max: read('max') };
}

const fmtLoop = (x: { p99Median: number; maxMedian: number; max: number }) => `${x.p99Median} / ${x.maxMedian} / ${x.max} ms`;

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

function figures(s: Samples) {
  const f = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return { samples: sorted.length, p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)) };
  };
  const unloaded = f(s.unloaded);
  const loaded = f(s.loaded);
  return { unloaded, loaded, p99Ratio: round(loaded.p99 / unloaded.p99), errors: s.errors, non2xx: s.non2xx };
}

interface Measured {
  results: { health: ReturnType<typeof figures>; otherGet: ReturnType<typeof figures> };
  met: boolean;
  serviceCpuPercent: Record<
    string,
    { mainThread: number; otherThreads: number; byThreadGroup: Record<string, number>; machineBusy: number; database: number; benchProcess: number }
  >;
  benchEventLoopDelayMs: Record<'unloaded' | 'loaded', { p99: number }>;
  /** Per phase, the service's event-loop delay p99 and max; their medians over the phases and the largest max. */
  serviceEventLoopDelayMs: Record<'unloaded' | 'loaded', { p99Median: number; maxMedian: number; max: number }>;
  attack: Record<string, number>;
  executorTasks: string[];
}

/** One service process with the executor's threads at `priority`: warm-up, then the alternating phases. */
async function measure(url: string, priority: string, other: { organisationSlug: string; environmentSlug: string; clusterSlugs: string[] }): Promise<Measured> {
  const port = await freePort();
  let service: ChildProcess | undefined;
  try {
    service = await spawnServer('service', [...SERVICE_NODE_FLAGS, 'dist/src/main.js'], { ...requestBenchServiceEnv(url, port), EXECUTOR_THREAD_PRIORITY: priority }, port);
    const pid = service.pid!;
    const base = `http://127.0.0.1:${port}`;
    const admin = { authorization: `Token ${BENCH_TOKEN}` };
    const otherGet = `${base}/api/v1/orgs/${other.organisationSlug}/clusters/${other.environmentSlug}/${other.clusterSlugs[7]}`;
    const dryRun = (expression: string) => ({
      path: '/api/v1/orgs/noisy/cluster-policies/evaluate?size=500',
      headers: { 'content-type': 'application/json', authorization: `Token ${NOISY_TOKEN}` },
      body: JSON.stringify({ name: 'worst', expression, message: 'worst case', action: 'Deny' }),
    });
    // Warm: one of each dry-run (the executor's threads start with the first task), then both probes.
    for (const body of [dryRun(AUDIT), dryRun(HEAVIEST)]) {
      const res = await fetch(`${base}${body.path}`, { method: 'POST', headers: body.headers, body: body.body });
      process.stdout.write(`[${priority}] warm-up dry-run: ${res.status}\n`);
    }
    await autocannon({ url: `${base}/health`, connections: 2, duration: 2 });
    await autocannon({ url: otherGet, headers: admin, connections: 2, duration: 2 });

    const attack = new Attack(base, [dryRun(AUDIT), dryRun(HEAVIEST)]);
    const attacking = attack.run(ATTACK_CONNECTIONS);
    const until = performance.timeOrigin + performance.now() + 2 * PHASE_MS * CYCLES;
    const probes = Promise.all([probe(`${base}/health`, {}, attack, until), probe(otherGet, admin, attack, until)]);
    const phase = () => ({ process: 0, mainThread: 0, ms: 0, groups: {} as Record<string, number>, machineBusy: 0, machineTotal: 0, database: 0, bench: 0 });
    const postmaster = await postmasterPid(url);
    const cpu = { on: phase(), off: phase() };
    // The load generator shares this machine: its own event loop's delay is reported, so that a probe delayed here
    // is not taken for the service's.
    const benchLoop = { on: monitorEventLoopDelay({ resolution: 1 }), off: monitorEventLoopDelay({ resolution: 1 }) };
    // The service's own event-loop delay per phase (prom-client's monitor, reset by each scrape of /metrics): a delay
    // the probes see but the loop does not is the scheduler's or the machine's, not the loop's.
    const serviceLoop = { on: [] as LoopDelay[], off: [] as LoopDelay[] };
    for (let c = 0; c < CYCLES; c++) {
      for (const on of [false, true]) {
        await serviceLoopDelay(base, admin);
        attack.on = on;
        const before = cpuMs(pid);
        const databaseBefore = databaseCpuMs(postmaster);
        const benchBefore = process.cpuUsage();
        const t0 = performance.now();
        const loop = benchLoop[on ? 'on' : 'off'];
        loop.enable();
        await new Promise((r) => setTimeout(r, PHASE_MS));
        loop.disable();
        serviceLoop[on ? 'on' : 'off'].push(await serviceLoopDelay(base, admin));
        const after = cpuMs(pid);
        const acc = cpu[on ? 'on' : 'off'];
        acc.database += databaseCpuDelta(databaseBefore, databaseCpuMs(postmaster));
        const bench = process.cpuUsage(benchBefore);
        acc.bench += (bench.user + bench.system) / 1000;
        acc.process += after.process - before.process;
        acc.mainThread += after.mainThread - before.mainThread;
        for (const [g, ms] of Object.entries(after.groups)) acc.groups[g] = (acc.groups[g] ?? 0) + ms - (before.groups[g] ?? 0);
        acc.machineBusy += after.machineBusy - before.machineBusy;
        acc.machineTotal += after.machineTotal - before.machineTotal;
        acc.ms += performance.now() - t0;
      }
      process.stdout.write(`[${priority}] cycle ${c + 1}/${CYCLES}: attack ${JSON.stringify(attack.statuses)}\n`);
    }
    attack.on = false;
    const [health, get] = await probes;
    attack.stop();
    await attacking;

    const percent = (x: number, ms: number) => Math.round((100 * x) / ms);
    const serviceCpuPercent = Object.fromEntries(
      (['off', 'on'] as const).map((k) => [
        k === 'on' ? 'loaded' : 'unloaded',
        {
          mainThread: percent(cpu[k].mainThread, cpu[k].ms),
          otherThreads: percent(cpu[k].process - cpu[k].mainThread, cpu[k].ms),
          byThreadGroup: Object.fromEntries(Object.entries(cpu[k].groups).map(([g, ms]) => [g, percent(ms, cpu[k].ms)])),
          // Of the machine's cores together (100 = all of them busy).
          machineBusy: percent(cpu[k].machineBusy, cpu[k].machineTotal),
          // The other processes on the machine that serve or make this load (% of one core).
          database: percent(cpu[k].database, cpu[k].ms),
          benchProcess: percent(cpu[k].bench, cpu[k].ms),
        },
      ]),
    );
    const loopDelay = (h: Histogram) => ({ p99: round(h.percentile(99) / 1e6) });
    const benchEventLoopDelayMs = { unloaded: loopDelay(benchLoop.off), loaded: loopDelay(benchLoop.on) };
    const phases = (xs: LoopDelay[]) => ({
      p99Median: round(xs.map((x) => x.p99).sort((a, b) => a - b)[Math.floor(xs.length / 2)]),
      maxMedian: round(xs.map((x) => x.max).sort((a, b) => a - b)[Math.floor(xs.length / 2)]),
      max: round(Math.max(...xs.map((x) => x.max))),
    });
    const serviceEventLoopDelayMs = { unloaded: phases(serviceLoop.off), loaded: phases(serviceLoop.on) };
    const results = { health: figures(health), otherGet: figures(get) };
    const metrics = await (await fetch(`${base}/metrics`, { headers: admin })).text();
    const executorTasks = metrics.split('\n').filter((l) => l.startsWith('cms_executor_tasks_total{') && !l.endsWith(' 0'));
    return {
      results,
      met: results.health.p99Ratio <= TARGET_RATIO && results.otherGet.p99Ratio <= TARGET_RATIO,
      serviceCpuPercent,
      benchEventLoopDelayMs,
      serviceEventLoopDelayMs,
      attack: attack.statuses,
      executorTasks,
    };
  } finally {
    if (service && service.exitCode === null) {
      const exited = new Promise((r) => service!.once('exit', r));
      service.kill('SIGTERM');
      await exited;
    }
  }
}

async function main(): Promise<void> {
  fs.mkdirSync(RESULTS, { recursive: true });
  const { url, stop: stopDatabase } = await startBenchDatabase('cms-bench-isolation-');
  try {
    // The schema first (the service migrates at start), then the two organisations.
    await migrateBySpawning(url);
    const other = await seedClusters(url, 1000);
    await seedNoisyViewer(url);
    const byPriority: Record<string, Measured> = {};
    for (const priority of PRIORITIES) byPriority[priority] = await measure(url, priority, other);

    const report = {
      date: new Date().toISOString(),
      node: process.version,
      settings: { phaseSeconds: PHASE_MS / 1000, cycles: CYCLES, attackConnections: ATTACK_CONNECTIONS, probeRatePerSecond: PROBE_RATE, page: 500, serviceNodeFlags: SERVICE_NODE_FLAGS },
      expressions: { audit: AUDIT, heaviest: HEAVIEST },
      target: TARGET_RATIO,
      // Keyed by EXECUTOR_THREAD_PRIORITY; `met` is the default's (the first measured).
      byPriority,
      met: byPriority[PRIORITIES[0]].met,
    };
    const file = path.join(RESULTS, `isolation-${report.date.slice(0, 10)}.json`);
    fs.writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
    const row = (name: string, r: ReturnType<typeof figures>) =>
      `| ${name} | ${r.unloaded.p50} / ${r.unloaded.p99} ms (${r.unloaded.samples}) | ${r.loaded.p50} / ${r.loaded.p99} ms (${r.loaded.samples}) | ${r.p99Ratio} | <= ${TARGET_RATIO} |`;
    for (const [priority, m] of Object.entries(byPriority)) {
      const cpu = m.serviceCpuPercent;
      process.stdout.write(
        `\nEXECUTOR_THREAD_PRIORITY=${priority}\n| Measure | Unloaded p50 / p99 (samples) | Loaded p50 / p99 (samples) | p99 ratio | Target |\n|---|---|---|---|---|\n` +
          `${row('/health', m.results.health)}\n${row("another organisation's cluster GET", m.results.otherGet)}\n` +
          `\nService CPU (% of one core), main thread / other threads: unloaded ${cpu.unloaded.mainThread} / ${cpu.unloaded.otherThreads}, ` +
          `loaded ${cpu.loaded.mainThread} / ${cpu.loaded.otherThreads}\n` +
          `Service CPU by thread group: unloaded ${JSON.stringify(cpu.unloaded.byThreadGroup)}, loaded ${JSON.stringify(cpu.loaded.byThreadGroup)}\n` +
          `Database / bench process CPU (% of one core): unloaded ${cpu.unloaded.database} / ${cpu.unloaded.benchProcess}, loaded ${cpu.loaded.database} / ${cpu.loaded.benchProcess}\n` +
          `Machine busy (% of all cores): unloaded ${cpu.unloaded.machineBusy}, loaded ${cpu.loaded.machineBusy}; ` +
          `the attacker's event-loop delay p99: unloaded ${m.benchEventLoopDelayMs.unloaded.p99} ms, ` +
          `loaded ${m.benchEventLoopDelayMs.loaded.p99} ms\n` +
          `The service's event-loop delay per phase (median p99 / median max / max): unloaded ${fmtLoop(m.serviceEventLoopDelayMs.unloaded)}, ` +
          `loaded ${fmtLoop(m.serviceEventLoopDelayMs.loaded)}\nAttack answers: ${JSON.stringify(m.attack)}\n` +
          `${m.met ? 'Targets met' : 'Targets NOT met'}\n${m.executorTasks.join('\n')}\n`,
      );
    }
    process.stdout.write(`\nwritten to ${path.relative(ROOT, file)}\n`);
  } finally {
    await stopDatabase();
  }
}

/** Starts the service once so that it migrates the fresh database, then stops it (the seeding needs the tables). */
async function migrateBySpawning(url: string): Promise<void> {
  const port = await freePort();
  const service = await spawnServer('service', [...SERVICE_NODE_FLAGS, 'dist/src/main.js'], requestBenchServiceEnv(url, port), port);
  service.kill('SIGTERM');
  await new Promise((r) => service.once('exit', r));
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
