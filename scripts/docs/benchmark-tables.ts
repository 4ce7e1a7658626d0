import { renderTable as renderFailoverTable } from '../../test/failover/report';

/**
 * How each benchmark's newest result in bench/results/*.json is shown in docs/performance.md
 * (npm run docs:performance, docs/adr/0092-docs-generated-from-code.md). A benchmark adds its table by adding one
 * entry to BENCHMARK_TABLES: which result files are its own, when a result was measured, and the Markdown of a result.
 */
export interface BenchmarkTable {
  /** Section title in docs/performance.md. */
  title: string;
  /** The command that writes the results. */
  command: string;
  /** Result files of this benchmark (file names in bench/results/). */
  files: RegExp;
  /** When the result was measured (an ISO date-time in the JSON); results without one are ignored. */
  measuredAt(result: Json): string | undefined;
  /** Results that do not stand for the benchmark (a quick run, an older commit measured for comparison). */
  accepts?(result: Json, file: string): boolean;
  /** The result as Markdown (tables and a line or two). */
  render(result: Json): string;
}

// The JSON the benchmarks write is read without a schema; the formatters name the fields they use.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

/** A Markdown table; a column whose cells are all numbers is right-aligned. */
const table = (header: string[], rows: (string | number)[][]) => {
  const numeric = header.map((_, i) => rows.every((r) => /^\**[\d,.]+\**$/.test(String(r[i]))));
  return [`| ${header.join(' | ')} |`, `|${numeric.map((right) => (right ? '---:' : '---')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
};
const n = (v: number | null | undefined) => (v === null || v === undefined ? '' : v.toLocaleString('en-GB'));
const bold = (v: number | null | undefined) => (v === null || v === undefined ? '' : `**${v}**`);

const notBefore = (_result: Json, file: string) => !/before/.test(file);

/** The result files of `npm run test:failover` (bench/results/failover-<date>[-quick].json). */
export const FAILOVER_RESULTS = /^failover-.*\.json$/;

export const BENCHMARK_TABLES: BenchmarkTable[] = [
  {
    title: 'Requests: list, get and PATCH against the baseline',
    command: 'npm run bench',
    files: /^(latest|quick)\.json$/,
    measuredAt: (r) => r.startedAt,
    accepts: (r) => !r.quick,
    render: (r) => {
      const ops = ['list', 'get', 'patch'];
      const rates = table(
        ['clusters', 'operation', 'service req/s', 'p50 ms', 'p99 ms', 'baseline req/s', 'p50 ms', 'p99 ms', 'ratio'],
        r.runs.flatMap((run: Json) =>
          ops.map((op) => {
            const x = run.results[op];
            return [n(run.clusters), op, x.service.rps, x.service.p50, x.service.p99, x.baseline.rps, x.baseline.p50, x.baseline.p99, `**${x.ratio.toFixed(2)}**`];
          }),
        ),
      );
      const perRequest = table(
        ['clusters', 'operation', 'statements', 'process CPU ms', 'event-loop CPU ms', 'database ms'],
        r.runs.flatMap((run: Json) =>
          ops
            .filter((op) => run.analysis?.[op])
            .map((op) => {
              const a = run.analysis[op];
              const pair = (k: string, digits = 1) => `${round(a.service[k], digits)} / ${round(a.baseline[k], digits)}`;
              return [n(run.clusters), op, pair('statementsPerRequest', 0), pair('cpuMsPerRequest'), pair('eventLoopMsPerRequest'), pair('dbMsPerRequest')];
            }),
        ),
      );
      const growth = r.growth ? ops.map((op) => `${op} ${r.growth[op].costRatio}`).join(', ') : 'not measured';
      const lines = [
        rates,
        '',
        'Per request (analysis pass of the same run; service / baseline):',
        '',
        perRequest,
        '',
        `Service cost at the larger size relative to the smaller (smaller req/s ÷ larger req/s): ${growth}. ` +
          `Service RSS after the runs: ${r.rssAfterMb} MB; growth from repetition 2 to 3: ${r.rssGrowthRep2to3Mb ?? 'n/a'} MB.`,
      ];
      if (r.webhooks) {
        const w = r.webhooks;
        lines.push(
          '',
          table(
            ['webhooks', 'result'],
            [
              ['PATCH without a subscription', `${w.patch.withoutRps} req/s`],
              ['PATCH with an active `*` subscription', `${w.patch.withSubscriptionRps} req/s`],
              ['ratio (target ≥ 0.9)', bold(w.patch.ratio)],
              [`outbox, 1 delivery replica, ${w.outbox.subscriptions} subscriptions`, `${w.outbox.oneReplica.perSecond} deliveries/s`],
              ['outbox, 2 delivery replicas', `${w.outbox.twoReplicas.perSecond} deliveries/s (×${w.outbox.scaling})`],
            ],
          ),
        );
      }
      if (r.ledger) {
        const l = r.ledger;
        const row = (name: string, f: Json) => [name, `${f.withLedgerRps} req/s`, `${f.withoutLedgerRps} req/s`, `**${round(100 * f.overhead, 1)} %**`];
        lines.push(
          '',
          // Since ADR 0209: medians of the rounds, the overhead the median of each round's own ratio; before, the best of each side.
          `Throughput at ${r.connections} connections on one cluster, ${l.rounds.length} rounds of ${r.durationSeconds} s per side${l.inFunctions ? ": medians; the overhead is the median of each round's own ratio" : ': the best of each side'}.`,
          '',
          table(
            ['usage ledger (its triggers on / off)', 'with', 'without', `overhead (target ≤ ${100 * l.targetOverhead} %)`],
            [row('cluster PATCH (description)', l.patchCluster), row('node-pool PUT (resize)', l.putNodePool)],
          ),
        );
        if (l.cost) {
          // The cost pass: one connection, medians of its rounds (bench/ledger.ts).
          const ms = (x: number | null) => (x === null ? 'n/a' : `${x} ms`);
          const pct = (x: number | null) => (x === null ? 'n/a' : `${round(100 * x, 1)} %`);
          const costRow = (name: string, f: Json) => [
            name,
            `${ms(f.cpuMsPerRequest.withLedger)} / ${ms(f.cpuMsPerRequest.withoutLedger)}`,
            `**${pct(f.cpuMsPerRequest.overhead)}**`,
            `${ms(f.databaseCpuMsPerRequest.withLedger)} / ${ms(f.databaseCpuMsPerRequest.withoutLedger)}`,
            `${ms(f.latencyMeanMs.withLedger)} / ${ms(f.latencyMeanMs.withoutLedger)} (${pct(f.latencyMeanMs.overhead)})`,
          ];
          lines.push(
            '',
            `The ledger's cost per request: ${l.cost.requests} requests at one connection per side, median of ${l.cost.rounds.length} rounds; CPU of the service and the database together, with / without its triggers.`,
            '',
            table(
              ['usage ledger, cost per request', 'CPU with / without', 'CPU overhead', 'of which database', 'mean latency with / without'],
              [costRow('cluster PATCH (description)', l.cost.patchCluster), costRow('node-pool PUT (resize)', l.cost.putNodePool)],
            ),
          );
        }
        if (l.inFunctions) {
          const f = l.inFunctions;
          lines.push(
            '',
            `Inside the ledger's trigger functions (PostgreSQL's function statistics, ${l.cost.requests} requests with the ledger on): ` +
              `cluster PATCH ${f.patchCluster.msPerRequest} ms per request (${f.patchCluster.calls} calls), ` +
              `node-pool PUT ${f.putNodePool.msPerRequest} ms per request (${f.putNodePool.calls} calls).`,
          );
        }
      }
      return lines.join('\n');
    },
  },
  {
    title: 'Control plane: bursts of cluster creates',
    command: 'npm run bench:control-plane',
    files: /^(control-plane|recon)-?.*\.json$/,
    measuredAt: (r) => r.startedAt,
    accepts: notBefore,
    render: (r) => {
      const rows = r.bursts.map((b: Json) => [
        `${b.latencyMs} ms${b.driver === 'http' ? ' (HTTP example driver)' : ''}`,
        b.replicas,
        b.topology ?? 'single',
        n(b.clusters),
        b.seconds,
        bold(b.stepsPerSecond),
        b.ratioToIdeal === null ? '' : `${b.ratioToIdeal} of ${b.ideal}`,
        `${b.getAtRest.p99} → ${b.getDuringBurst.p99} ms (×${b.getP99Ratio})`,
      ]);
      const lines = [
        `${r.concurrency} reconciler workers per replica, ${r.cpus} cores; each created cluster takes 9 steps to \`started\`.`,
        '',
        table(['driver latency', 'replicas', 'topology', 'clusters', 'seconds', 'steps/s', 'ratio to ideal', 'GET p99 at rest → during'], rows),
      ];
      for (const [latency, v] of Object.entries((r.httpVsSimulated ?? {}) as Record<string, { stepsPerSecond: number }>)) {
        lines.push('', `HTTP example driver ÷ in-process simulated driver at ${latency}, steps per second in the same run: ${bold(v.stepsPerSecond)} (target ≥ 0.8).`);
      }
      if (r.observation) {
        const o = r.observation;
        const oldest = o.maxAge === undefined ? '' : `; the oldest observation ${o.maxAge} s (target: every cluster within 1.2 × ${o.observeEverySeconds} s = ${o.maxAgeTarget ?? 1.2 * o.observeEverySeconds} s)`;
        lines.push(
          '',
          `Observation of ${n(o.fleet)} settled clusters, ${o.replicas ?? 1} replica, \`OBSERVE_EVERY_SECONDS=${o.observeEverySeconds ?? 60}\`: ${n(o.capacity?.observationsPerSecond)} observations/s at capacity; over ${o.runSeconds ?? ''} s the worst p99 age ${o.worst?.p99 ?? o.worstP99 ?? ''} s${oldest}; replicas needed for the 60 s promise at 100,000: ${o.replicasNeededFor60sAt100k ?? o.replicasNeeded ?? ''}.`,
        );
      }
      return lines.join('\n');
    },
  },
  {
    title: 'Usage metering: usage query and FOCUS export of a month',
    command: 'npm run bench:metering',
    files: /^metering\.json$/,
    measuredAt: (r) => r.startedAt,
    render: (r) =>
      [
        `${n(r.clusters)} clusters, ${n(r.intervals)} ledger intervals over a month; median of ${r.repeat} run(s); load average ` +
          `${r.loadAverageAtStart?.[0]} at the start, ${r.loadAverageAtEnd?.[0]} at the end (${r.cpus} cores).`,
        '',
        table(
          ['operation', 'rows', 'ms', 'rows/s', 'peak RSS above start MB'],
          r.results.map((x: Json) => [x.name, n(x.rows), n(x.medianMs), `**${n(x.rowsPerSecond)}**`, x.peakRssAboveStartMb]),
        ),
        ...(r.writeOverhead
          ? [
              '',
              `Seeding the ${n(r.clusters)} clusters (one \`INSERT\` of the clusters, one of their pools, through the ledger's triggers): ` +
                `${n(r.seedSeconds)} s. The ledger's cost on writes: median ms per statement with its triggers and with them disabled, ` +
                `interleaved run by run (${n(r.writeOverhead[0]?.samples)} runs of each side for a single row, ` +
                `${n(r.writeOverhead.find((x: Json) => x.rows > 1)?.samples)} for 1,000), each rolled back:`,
              '',
              table(
                ['statement', 'with the ledger ms', 'without ms', 'ratio'],
                r.writeOverhead.map((x: Json) => [x.name, n(x.ledgerMs), n(x.withoutLedgerMs), bold(x.ratio)]),
              ),
            ]
          : []),
      ].join('\n'),
  },
  {
    title: 'Upgrade scheduler pass',
    command: 'npm run bench:scheduler',
    files: /^scheduler\.json$/,
    measuredAt: (r) => r.startedAt,
    render: (r) => {
      const scenarios: [string, string, string][] = [
        ['at rest (nothing due)', 'atRestMs', 'atRest'],
        ['1 % behind their channel: the pass plans their upgrades', 'behind1pctMs', 'behind1pct'],
        ['1 % planned, nothing due', 'planned1pctMs', 'planned1pct'],
      ];
      const [small, large] = r.runs;
      return [
        `Median ms per pass; "before" is the scheduler before keyset batching, measured on the same database.`,
        '',
        table(
          ['scenario', `current ${n(small.clusters)} ms`, `current ${n(large.clusters)} ms`, 'ratio', `before ${n(small.clusters)} ms`, `before ${n(large.clusters)} ms`, 'ratio'],
          scenarios.map(([label, ms, ratio]) => [
            label,
            small.current[ms],
            large.current[ms],
            bold(r.ratio100kTo10k.current[ratio]),
            small.baseline[ms],
            large.baseline[ms],
            r.ratio100kTo10k.baseline[ratio],
          ]),
        ),
      ].join('\n');
    },
  },
  {
    title: 'Cluster policies: evaluate and violations',
    command: 'npm run bench:policies',
    files: /^policies\.json$/,
    measuredAt: (r) => r.startedAt,
    render: (r) =>
      [
        `${n(r.clusters)} clusters in one organisation; median of ${r.runs} calls.`,
        '',
        table(
          ['call', 'ms'],
          [
            ['`evaluate`, one page of 500', n(r.evaluatePage500Ms)],
            ['`violations`, full scan, policy reading node pools', n(r.violationsScanMs)],
            ["`violations`, full scan, policy reading only the cluster's columns", n(r.violationsScanOwnColumnsMs)],
          ],
        ),
      ].join('\n'),
  },
  {
    title: 'Isolation of expensive work on user input',
    command: 'npm run bench:isolation',
    files: /^isolation-.*\.json$/,
    measuredAt: (r) => r.date,
    render: (r) => {
      // Since the thread priority became a setting, one run measures each priority listed (byPriority); before, one.
      const measured: [string, Json][] = r.byPriority ? Object.entries(r.byPriority) : [['low', r]];
      const row = (priority: string, label: string, x: Json) => [`\`${priority}\``, label, `${x.unloaded.p50} / ${x.unloaded.p99} ms`, `${x.loaded.p50} / ${x.loaded.p99} ms`, bold(x.p99Ratio), `≤ ${r.target}`];
      return [
        `One organisation runs worst-case policy dry-runs, ${r.settings.attackConnections} at a time, in ${r.settings.phaseSeconds} s phases (${r.settings.cycles} cycles); \`/health\` and another organisation's cluster GET are probed at ${r.settings.probeRatePerSecond} requests/s each. One service start per \`EXECUTOR_THREAD_PRIORITY\` (ADR 0106; \`low\` is the default).`,
        '',
        table(
          ['`EXECUTOR_THREAD_PRIORITY`', 'measure', 'unloaded p50 / p99', 'loaded p50 / p99', 'p99 ratio', 'target'],
          measured.flatMap(([priority, m]) => [row(priority, '`/health`', m.results.health), row(priority, "another organisation's cluster GET", m.results.otherGet)]),
        ),
        '',
        measured.map(([priority, m]) => {
          const cpu = m.serviceCpuPercent;
          return `\`${priority}\`: targets met ${m.met ? 'yes' : 'no'}; service CPU (% of one core), unloaded → loaded: main thread ${cpu.unloaded.mainThread} → ${cpu.loaded.mainThread}, other threads ${cpu.unloaded.otherThreads} → ${cpu.loaded.otherThreads}.`;
        }).join(' '),
      ].join('\n');
    },
  },
  {
    title: 'Failover: switchover, kill -9 and a frozen primary under load',
    command: 'npm run test:failover',
    files: FAILOVER_RESULTS,
    measuredAt: (r) => r.startedAt,
    accepts: (r) => !r.quick,
    render: (r) => {
      const p = r.packages;
      return [
        `${r.durationSeconds} s in all on ${r.cpus} cores. Patroni ${p.patroni}, etcd ${p['etcd-server']}, HAProxy ${p.haproxy}, PostgreSQL ${p['postgresql-15']} ` +
          `(Debian's packages); ${r.patroni.replication} replication, Patroni on etcd's ${r.patroni.dcs === 'etcd' ? 'v2' : 'v3'} API ` +
          `(ttl ${r.patroni.ttl} s, loop_wait ${r.patroni.loop_wait} s, retry_timeout ${r.patroni.retry_timeout} s); HAProxy \`${r.patroni.haproxyCheck}\`. ` +
          `${r.service.topology}; load ${r.service.load}; the service's LOG_LEVEL ${r.service.logLevel}.`,
        '',
        renderFailoverTable(r.faults),
      ].join('\n');
    },
  },
  {
    title: 'Allocation per request',
    command: 'npm run bench:allocation',
    files: /^allocation\.json$/,
    measuredAt: (r) => r.at,
    render: (r) =>
      [
        `V8's sampling heap profiler over ${r.requests} requests per operation; the functions that allocate most are in \`bench/results/allocation.md\`.`,
        '',
        table(
          ['operation', 'service KB', 'baseline KB'],
          Object.entries(r.report as Record<string, Json>).map(([op, x]) => [op, n(x.service.kbPerRequest), n(x.baseline.kbPerRequest)]),
        ),
      ].join('\n'),
  },
];

function round(v: number | undefined, digits: number): string {
  return v === undefined || v === null ? '' : v.toFixed(digits);
}
