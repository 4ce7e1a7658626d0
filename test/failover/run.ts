/**
 * `npm run test:failover`: the service on a highly available PostgreSQL, under load, through failovers.
 *
 * Brings up on loopback (127.0.0.1, free ports, a scratch directory under the system's temporary directory) etcd,
 * three Patroni nodes with PostgreSQL 15 and HAProxy from Debian's packages (installed with apt-get when missing),
 * builds the service, migrates, and runs it as an API process and a worker on HAProxy's address. Three writers and
 * two readers drive up to 150 requests/s at the API process while the faults happen one after another:
 *
 *   switchover    a planned switchover through Patroni's REST API
 *   kill -9       SIGKILL of the primary's postmaster
 *   frozen        (--freeze) SIGSTOP of the primary's whole instance (Patroni and PostgreSQL) for 40 s, then SIGCONT
 *
 * Per fault it prints what the fault cost (test/failover/report.ts): failed requests by status, by method and by
 * method and cause (the cause and code a 503's body names), the longest time without a successful write, 500s, 503s
 * with and without Retry-After, acknowledged writes lost (read back from the new primary directly), when
 * /health/ready was 200 again, whether each process kept its PID, whether a cluster created after the fault reached
 * `started`, and the log lines each process wrote. Results go to
 * bench/results/failover-<date>.json. Everything it started is stopped and its directory removed at the end, also on
 * failure or Ctrl-C.
 *
 * Options: --quick (shorter windows), --freeze, --freeze-seconds=N, --faults=switchover,kill,freeze (which faults, in
 * that order), --synchronous (Patroni's synchronous_mode), --synchronous-strict (and synchronous_mode_strict),
 * --dcs=etcd (Patroni on etcd's v2 API instead of v3), --strict (exit 1 when a check is not met; otherwise the checks
 * are reported only), --log-level=LEVEL (the service's LOG_LEVEL, default warn: the lines counted are the ones an
 * outage adds), --rate=N (requests/s per load worker). The exit code is also 1 when the stack or the service cannot be
 * brought up (nothing was measured). FAILOVER_KEEP_SCRATCH=1 keeps the scratch directory (the daemons' logs).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { HAPROXY_CHECK, HaStack, PATRONI_TIMING, waitFor } from './ha-stack';
import { Load, RequestRecord } from './load';
import { ensurePackages } from './packages';
import { Scratch, sleep } from './processes';
import { checks, FaultResult, ReadinessSample, renderTable, summariseFault, Window } from './report';
import { Api, build, createFixture, Fixture, migrate, newServiceSettings, ROOT, ServiceProcess, startService } from './service';

interface Options {
  quick: boolean;
  strict: boolean;
  freeze: boolean;
  freezeSeconds: number;
  synchronous: boolean;
  synchronousStrict: boolean;
  dcs: 'etcd3' | 'etcd';
  logLevel: string;
  rate: number;
  /** Which faults, in order (default: switchover and kill, and freeze with --freeze). */
  faults: FaultName[];
}

type FaultName = 'switchover' | 'kill' | 'freeze';
const FAULT_NAMES: FaultName[] = ['switchover', 'kill', 'freeze'];

function parseOptions(argv: string[]): Options {
  const options: Options = { quick: false, strict: false, freeze: false, freezeSeconds: 40, synchronous: false, synchronousStrict: false, dcs: 'etcd3', logLevel: 'warn', rate: 30, faults: [] };
  for (const arg of argv) {
    const [name, value] = arg.split('=', 2);
    if (name === '--quick') options.quick = true;
    else if (name === '--strict') options.strict = true;
    else if (name === '--freeze') options.freeze = true;
    else if (name === '--freeze-seconds' && Number(value) > 0) (options.freeze = true), (options.freezeSeconds = Number(value));
    else if (name === '--synchronous') options.synchronous = true;
    else if (name === '--synchronous-strict') options.synchronousStrict = true;
    else if (name === '--dcs' && (value === 'etcd3' || value === 'etcd')) options.dcs = value;
    else if (name === '--log-level' && value) options.logLevel = value;
    else if (name === '--rate' && Number(value) > 0) options.rate = Number(value);
    else if (name === '--faults' && value && value.split(',').every((f) => FAULT_NAMES.includes(f as FaultName))) options.faults = value.split(',') as FaultName[];
    else {
      process.stderr.write(`unknown option ${arg}\nusage: npm run test:failover -- [--quick] [--strict] [--freeze] [--freeze-seconds=N] [--synchronous] [--synchronous-strict] [--dcs=etcd3|etcd] [--log-level=LEVEL] [--rate=N] [--faults=switchover,kill,freeze]\n`);
      process.exit(2);
    }
  }
  if (options.faults.length === 0) options.faults = options.freeze ? ['switchover', 'kill', 'freeze'] : ['switchover', 'kill'];
  options.freeze = options.faults.includes('freeze');
  return options;
}

const replicationMode = (o: Options) => (o.synchronousStrict ? 'synchronous (strict)' : o.synchronous ? 'synchronous' : 'asynchronous');

const t0 = Date.now();
const log = (line: string) => process.stdout.write(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);

/** Samples /health/ready of each process every 250 ms for the whole run. */
class ReadinessPoller {
  readonly samples = new Map<string, ReadinessSample[]>();
  private stopped = false;
  private loops: Promise<void>[] = [];

  start(processes: ServiceProcess[]): void {
    this.loops = processes.map(async (p) => {
      const list: ReadinessSample[] = [];
      this.samples.set(p.role, list);
      while (!this.stopped) {
        let status = 0;
        try {
          status = (await fetch(`${p.base}/health/ready`, { signal: AbortSignal.timeout(2000) })).status;
        } catch {
          status = 0;
        }
        list.push({ at: Date.now(), status });
        await sleep(250);
      }
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }
}

/**
 * Reads every acknowledged write back from the current primary (connected directly, not through HAProxy): which
 * acknowledged writes are missing, and which failed writes committed anyway.
 */
async function verifyWrites(stack: HaStack, fixture: Fixture, records: RequestRecord[]): Promise<{ missing: Set<string>; failedCommitted: Set<string> }> {
  const leader = await waitForLeader(stack);
  const db = await stack.connectDirect(leader);
  try {
    const writes = records.filter((r) => r.kind === 'write' && r.value !== undefined);
    const found = new Set<string>();
    const envValues = writes.filter((r) => r.target === 'environments').map((r) => r.value!);
    const { rows: envRows } = await db.query<{ name: string }>(
      `SELECT name FROM environments WHERE organisation_id = (SELECT id FROM organisations WHERE slug = $1) AND name = ANY($2::text[])`,
      [fixture.org, envValues],
    );
    for (const r of envRows) found.add(r.name);
    for (const cluster of fixture.writerClusters) {
      const values = writes.filter((r) => r.target === cluster).map((r) => r.value!);
      // The audit row is written in the change's own transaction: one row per committed PATCH, with the new value.
      const { rows } = await db.query<{ v: string }>(
        `SELECT details->'description'->>'new' AS v FROM audit_events
          WHERE cluster_id = (SELECT c.id FROM clusters c JOIN organisations o ON o.id = c.organisation_id
                               WHERE o.slug = $1 AND c.slug = $2 AND c.deleted_at IS NULL)
            AND details->'description'->>'new' = ANY($3::text[])`,
        [fixture.org, cluster, values],
      );
      for (const r of rows) found.add(r.v);
    }
    const ok = (r: RequestRecord) => typeof r.status === 'number' && r.status >= 200 && r.status < 300;
    return {
      missing: new Set(writes.filter((r) => ok(r) && !found.has(r.value!)).map((r) => r.value!)),
      failedCommitted: new Set(writes.filter((r) => !ok(r) && found.has(r.value!)).map((r) => r.value!)),
    };
  } finally {
    await db.end();
  }
}

async function waitForLeader(stack: HaStack) {
  let leader: Awaited<ReturnType<HaStack['leader']>>;
  await waitFor('a leader', 60_000, async () => {
    leader = await stack.leader();
    return leader !== undefined && (await stack.memberStatus(leader)) === 200;
  });
  return leader!;
}

/** Creates a cluster (retrying while the service answers errors) and waits until it is `started`. */
async function clusterReachesStarted(api: Api, fixture: Fixture, name: string, timeoutMs: number): Promise<FaultResult['clusterAfterFault']> {
  const start = Date.now();
  let slug: string | null = null;
  let lastStatus = 'not created';
  while (Date.now() - start < timeoutMs) {
    try {
      if (!slug) slug = await fixture.createCluster(name);
      const c = await api.call<{ status: string }>('GET', `/api/v1/orgs/${fixture.org}/clusters/${fixture.env}/${slug}`);
      lastStatus = c.status;
      if (c.status === 'started') return { slug, startedSeconds: Math.round((Date.now() - start) / 100) / 10, lastStatus };
    } catch (e) {
      lastStatus = `error: ${(e as Error).message.slice(0, 80)}`;
    }
    await sleep(500);
  }
  return { slug, startedSeconds: null, lastStatus };
}

interface Fault {
  name: string;
  /** Performs the fault; resolves with what was done once the fault is over (a freeze: after the resume). */
  perform: () => Promise<string>;
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  const timing: Record<string, number> = {};
  const step = async <T>(name: string, f: () => T | Promise<T>): Promise<T> => {
    const s = Date.now();
    try {
      return await f();
    } finally {
      timing[name] = Math.round((Date.now() - s) / 100) / 10;
    }
  };
  const windows = options.quick ? { before: 3_000, after: 5_000 } : { before: 8_000, after: 12_000 };
  log(`failover test${options.quick ? ' (quick)' : ''}: ${options.faults.join(', ')}; ${replicationMode(options)} replication; Patroni on etcd's ${options.dcs === 'etcd' ? 'v2' : 'v3'} API`);

  const packages = await step('packages', () => ensurePackages(log));
  log(`packages: ${Object.entries(packages.versions).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  await step('build', () => build());

  const scratch = new Scratch();
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    log(`${signal}: stopping everything`);
    void scratch.stopAll(STOP_ORDER, 5_000).finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  // Bounded in time whatever happens: past this the run stops everything and fails.
  const deadlineMs = (options.quick ? 8 : 15) * 60_000 + (options.freeze ? options.freezeSeconds * 1000 : 0);
  const deadline = setTimeout(() => {
    log(`the run exceeded ${deadlineMs / 60_000} minutes: stopping everything`);
    void scratch.stopAll(STOP_ORDER, 5_000).finally(() => process.exit(1));
  }, deadlineMs);
  deadline.unref();

  const stack = new HaStack(scratch, { synchronous: options.synchronous, synchronousStrict: options.synchronousStrict, dcs: options.dcs });
  const poller = new ReadinessPoller();
  let load: Load | undefined;
  try {
    log(`scratch directory ${scratch.dir}`);
    await step('stack', () => stack.start(log));
    const settings = newServiceSettings(stack.databaseUrl, options.logLevel);
    await step('migrate', () => migrate(settings));
    const [api, worker] = await step('services', async () => [await startService(scratch, 'api', settings), await startService(scratch, 'worker', settings)]);
    log(`API process ${api.pid} on ${api.base}, worker ${worker.pid} on ${worker.base}`);
    const client = new Api(api.base, settings.adminToken);
    const fixture = await step('fixture', () => createFixture(client, 2));
    log(`organisation ${fixture.org}, environment ${fixture.env}, writer clusters ${fixture.writerClusters.join(', ')}`);

    const available: Record<FaultName, Fault> = {
      switchover: { name: 'switchover', perform: async () => ((sw) => `switchover ${sw.from} → ${sw.to}`)(await stack.switchover()) },
      kill: { name: 'kill -9 primary', perform: async () => ((k) => `kill -9 of ${k.node}'s postmaster (${k.pid})`)(await stack.killPrimaryPostmaster()) },
      freeze: {
        name: `frozen primary ${options.freezeSeconds} s`,
        perform: async () => {
          const f = await stack.freezePrimary();
          await sleep(options.freezeSeconds * 1000);
          f.resume();
          return `SIGSTOP of ${f.node} (Patroni and ${f.pids.length - 1} PostgreSQL processes) for ${options.freezeSeconds} s`;
        },
      },
    };
    const faults = options.faults.map((f) => available[f]);

    load = new Load(api.base, settings.adminToken, fixture, {
      perWorkerRate: options.rate,
      maxRequests: 200_000,
      maxSeconds: options.quick ? 240 : 600,
      timeoutMs: 10_000,
    });
    poller.start([api, worker]);
    load.start();
    log(`load: ${load.workerCount} workers at ${options.rate} requests/s each`);

    const results: FaultResult[] = [];
    let knownMissing = new Set<string>();
    const samePid = (p: ServiceProcess) => !p.exited() && p.pid === p.proc.pid;
    for (const fault of faults) {
      const start = Date.now();
      await sleep(windows.before);
      const faultAt = Date.now();
      log(`fault: ${fault.name}`);
      const detail = await fault.perform();
      log(`  ${detail}`);
      const faultOver = Date.now();
      // Recovered: a write acknowledged after the fault (after the resume, for a freeze) and both processes ready.
      const recovery = await waitFor('a successful write and both processes ready', 120_000, async () => {
        const wrote = load!.records.some((r) => r.kind === 'write' && r.start > faultOver && typeof r.status === 'number' && r.status < 300);
        if (!wrote) return false;
        const ready = await Promise.all([api, worker].map(async (p) => (await fetch(`${p.base}/health/ready`, { signal: AbortSignal.timeout(2000) })).ok));
        return ready.every(Boolean);
      }).catch(() => null);
      log(`  ${recovery === null ? 'NOT recovered within 120 s' : `writes and readiness back ${((Date.now() - faultAt) / 1000).toFixed(1)} s after the fault began`}`);
      const cluster = clusterReachesStarted(client, fixture, `after-${results.length + 1}`, 60_000);
      await sleep(windows.after);
      const clusterAfterFault = await cluster;
      // The next fault starts from a whole cluster: every member back and streaming.
      await waitFor('all members to run again', 90_000, () => stack.healthy()).catch(() => log('  not every member is back (continuing)'));
      const end = Date.now();
      const window: Window = { start, faultAt, end };
      const verified = await verifyWrites(stack, fixture, load.records.filter((r) => r.start < end && r.end <= Date.now()));
      const newlyMissing = [...verified.missing].filter((v) => !knownMissing.has(v));
      knownMissing = verified.missing;
      const windowValues = new Set(load.records.filter((r) => r.start >= start && r.start < end).map((r) => r.value));
      const result = summariseFault({
        fault: fault.name,
        detail,
        window,
        records: load.records,
        lostValues: newlyMissing,
        failedWritesCommitted: [...verified.failedCommitted].filter((v) => windowValues.has(v)).length,
        processes: {
          api: { samples: poller.samples.get('api') ?? [], samePid: samePid(api), lines: api.lines },
          worker: { samples: poller.samples.get('worker') ?? [], samePid: samePid(worker), lines: worker.lines },
        },
        clusterAfterFault,
      });
      results.push(result);
      log(`  ${result.failed} failed (${Object.entries(result.failedByStatus).map(([k, v]) => `${k}×${v}`).join(', ') || 'none'}), ${result.status500} × 500, ${result.writesLost} acknowledged writes lost`);
      for (const [cause, n] of Object.entries(result.failedByMethodAndCause ?? {}).sort((a, b) => b[1] - a[1])) log(`    ${n} × ${cause}`);
    }

    await load.stop();
    await poller.stop();
    // Writes still in flight at the last window's end: read back once more.
    const final = await verifyWrites(stack, fixture, load.records);
    const lateMissing = [...final.missing].filter((v) => !knownMissing.has(v));
    if (lateMissing.length > 0 && results.length > 0) {
      const last = results[results.length - 1];
      last.writesLost += lateMissing.length;
      last.lostValues.push(...lateMissing.slice(0, 20));
    }

    const table = renderTable(results);
    const checkList = checks(results);
    const failedChecks = checkList.filter((c) => !c.ok);
    const finishedAt = new Date();
    const result = {
      benchmark: 'failover',
      startedAt: new Date(t0).toISOString(),
      finishedAt: finishedAt.toISOString(),
      durationSeconds: Math.round((Date.now() - t0) / 1000),
      quick: options.quick,
      options,
      cpus: os.cpus().length,
      packages: packages.versions,
      packagesInstalledNow: packages.installedNow,
      patroni: { ...PATRONI_TIMING, replication: replicationMode(options), dcs: options.dcs, haproxyCheck: `${HAPROXY_CHECK} on-marked-down shutdown-sessions` },
      service: { topology: 'API process (BACKGROUND_JOBS_ENABLED=false) + worker', logLevel: options.logLevel, load: `${load.workerCount} workers × ${options.rate} req/s` },
      timingSeconds: timing,
      requests: load.records.length,
      faults: results,
      checks: checkList,
    };
    const file = path.join(ROOT, 'bench/results', `failover-${finishedAt.toISOString().slice(0, 16).replace(/:/g, '-')}${options.quick ? '-quick' : ''}.json`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);

    process.stdout.write(`\n${table}\n\n`);
    for (const r of results) {
      const detail = Object.entries(r.status500Details).map(([k, v]) => `${v} × ${k || '(no body)'}`);
      if (detail.length) process.stdout.write(`${r.fault}: the 500 answers: ${detail.join('; ')}\n`);
      if (r.lostValues.length) process.stdout.write(`${r.fault}: lost acknowledged writes (first ${r.lostValues.length}): ${r.lostValues.join(', ')}\n`);
      for (const role of ['api', 'worker'] as const) {
        const top = r.processes[role].logLines.top;
        if (top.length) process.stdout.write(`${r.fault}: ${role} log, most frequent: ${top.map(([m, n]) => `${n} × "${m}"`).join('; ')}\n`);
      }
    }
    process.stdout.write(`\nchecks${options.strict ? '' : ' (reported only; with --strict one not met fails the run)'}:\n`);
    for (const c of checkList) process.stdout.write(`  ${c.ok ? 'met    ' : 'NOT MET'}  ${c.fault}: ${c.check}\n`);
    log(`results: ${path.relative(ROOT, file)}; ${load.records.length} requests`);
    return options.strict && failedChecks.length > 0 ? 1 : 0;
  } finally {
    if (load) await load.stop();
    await poller.stop();
    await step('teardown', () => scratch.stopAll(STOP_ORDER));
    log(`stopped everything${process.env.FAILOVER_KEEP_SCRATCH === '1' ? ` (kept ${scratch.dir})` : ` and removed ${scratch.dir}`}; took ${Math.round((Date.now() - t0) / 1000)} s in all (${Object.entries(timing).map(([k, v]) => `${k} ${v} s`).join(', ')})`);
  }
}

/** The service first (it holds connections), then HAProxy, Patroni (which stops PostgreSQL), etcd last. */
const STOP_ORDER = [['api', 'worker'], ['haproxy'], ['patroni-pg1', 'patroni-pg2', 'patroni-pg3'], ['etcd']];

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`failover test could not run: ${(e as Error).stack ?? e}\n`);
    process.exit(1);
  },
);
