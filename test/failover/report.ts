/**
 * What one fault cost, computed from what the failover test recorded (pure functions, unit-tested in
 * test/unit/failover-report.spec.ts), and the table `npm run test:failover` prints and docs/performance.md shows.
 * No imports beyond types: docs generation reads the renderer too.
 */
import type { RequestRecord } from './load';
import type { LogLine } from './service';

export interface Window {
  start: number;
  faultAt: number;
  end: number;
}

export interface ReadinessSample {
  at: number;
  status: number;
}

export interface ProcessCosts {
  /** Seconds from the fault until /health/ready answered 200 for good; 0 when it never stopped answering 200; null when not 200 by the end. */
  readyAgainSeconds: number | null;
  /** Sum of the sampled time it did not answer 200. */
  notReadySeconds: number;
  /** Still the process started at the beginning (no crash, no restart). */
  samePid: boolean;
  logLines: LogCounts;
}

export interface LogCounts {
  total: number;
  byLevel: Record<string, number>;
  /** Lines that are not JSON (and anything on stderr). */
  notJson: number;
  /** The most frequent messages, with counts. */
  top: [string, number][];
}

export interface FaultResult {
  fault: string;
  /** What exactly was done (which node, which PID, how long). */
  detail: string;
  windowSeconds: number;
  faultAtSecond: number;
  requests: number;
  requestsPerSecond: number;
  failed: number;
  failedByStatus: Record<string, number>;
  failedByMethod: Record<string, number>;
  /**
   * Failed requests by method and cause (`GET connection-refused 57P03`): for a 503 the cause and code its body names
   * (src/common/database-unavailable.ts), else the status and the start of the body or the client's error.
   * Absent from results recorded before it was added.
   */
  failedByMethodAndCause?: Record<string, number>;
  /** Failed reads, by status (a read retried on a fresh connection would have been answered). */
  failedReads: number;
  secondsWithoutSuccessfulWrite: number;
  status500: number;
  /** The distinct error details of the 500 answers, with counts. */
  status500Details: Record<string, number>;
  status503WithRetryAfter: number;
  status503WithoutRetryAfter: number;
  writesAcknowledged: number;
  /** Acknowledged writes found missing on the primary after this fault that were present (or not yet checked) before. */
  writesLost: number;
  lostValues: string[];
  /** Writes answered with an error (or no answer) that nonetheless committed: a client cannot tell. */
  failedWritesCommitted: number;
  processes: { api: ProcessCosts; worker: ProcessCosts };
  clusterAfterFault: { slug: string | null; startedSeconds: number | null; lastStatus: string };
}

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

const statusKey = (s: RequestRecord['status']) => String(s);
const isOk = (r: RequestRecord) => typeof r.status === 'number' && r.status >= 200 && r.status < 300;
const round1 = (n: number) => Math.round(n * 10) / 10;

const CAUSES: [RegExp, string][] = [
  [/refused the connection/, 'connection-refused'],
  [/connection to the database was lost/, 'connection-lost'],
  [/accepts only reads/, 'read-only'],
  [/did not answer in time/, 'timeout'],
];

/**
 * Why a request failed, in a few words: a 503 for an unavailable database by the cause and code its body names
 * ("The database is unavailable: the database refused the connection (57P03); ..."), any other answer by its status
 * and the start of its body, a request that got no answer by what the client saw.
 */
export function failureCause(r: RequestRecord): string {
  const detail = r.detail ?? '';
  const unavailable = /The database is unavailable: (.*) \(([^()]+)\)(?:;|$)/.exec(detail);
  if (r.status === 503 && unavailable) {
    const cause = CAUSES.find(([pattern]) => pattern.test(unavailable[1]))?.[1] ?? unavailable[1].trim();
    return `${cause} ${unavailable[2]}`;
  }
  if (typeof r.status === 'number') return `${r.status}${detail ? ` ${detail.slice(0, 60)}` : ''}`;
  return `${r.status}${detail ? ` (${detail.slice(0, 60)})` : ''}`;
}

/** The requests that started in the window. */
export function inWindow(records: RequestRecord[], w: Window): RequestRecord[] {
  return records.filter((r) => r.start >= w.start && r.start < w.end);
}

/** The longest time in the window without a completed successful write (edges of the window count). */
export function longestWriteGap(records: RequestRecord[], w: Window): number {
  const ends = records
    .filter((r) => r.kind === 'write' && isOk(r) && r.end >= w.start && r.end <= w.end)
    .map((r) => r.end)
    .sort((a, b) => a - b);
  const points = [w.start, ...ends, w.end];
  let longest = 0;
  for (let i = 1; i < points.length; i++) longest = Math.max(longest, points[i] - points[i - 1]);
  return round1(longest / 1000);
}

/** Readiness over the window: when it was 200 again for good after the fault, and how long it was not. */
export function readiness(samples: ReadinessSample[], w: Window): { readyAgainSeconds: number | null; notReadySeconds: number } {
  const inside = samples.filter((s) => s.at >= w.faultAt && s.at <= w.end).sort((a, b) => a.at - b.at);
  let notReady = 0;
  for (let i = 0; i < inside.length - 1; i++) if (inside[i].status !== 200) notReady += inside[i + 1].at - inside[i].at;
  const lastBad = [...inside].reverse().findIndex((s) => s.status !== 200);
  if (lastBad < 0) return { readyAgainSeconds: 0, notReadySeconds: 0 };
  const firstGoodAfter = inside.slice(inside.length - lastBad);
  if (firstGoodAfter.length === 0) return { readyAgainSeconds: null, notReadySeconds: round1(notReady / 1000) };
  return { readyAgainSeconds: round1((firstGoodAfter[0].at - w.faultAt) / 1000), notReadySeconds: round1(notReady / 1000) };
}

export function countLogLines(lines: LogLine[], w: Window): LogCounts {
  const inside = lines.filter((l) => l.at >= w.start && l.at < w.end);
  const byLevel: Record<string, number> = {};
  const messages = new Map<string, number>();
  let notJson = 0;
  for (const l of inside) {
    if (l.level === null) notJson++;
    else byLevel[LEVELS[l.level] ?? String(l.level)] = (byLevel[LEVELS[l.level] ?? String(l.level)] ?? 0) + 1;
    const key = l.level === null ? `(not JSON) ${l.msg.slice(0, 100)}` : `${l.msg.slice(0, 100)}${l.errType ? ` (${l.errType})` : ''}`;
    messages.set(key, (messages.get(key) ?? 0) + 1);
  }
  const top = [...messages.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5);
  return { total: inside.length, byLevel, notJson, top };
}

export interface FaultInputs {
  fault: string;
  detail: string;
  window: Window;
  records: RequestRecord[];
  /** Values of acknowledged writes newly found missing after this fault. */
  lostValues: string[];
  /** Values of failed writes of this window found committed. */
  failedWritesCommitted: number;
  processes: Record<'api' | 'worker', { samples: ReadinessSample[]; samePid: boolean; lines: LogLine[] }>;
  clusterAfterFault: FaultResult['clusterAfterFault'];
}

export function summariseFault(input: FaultInputs): FaultResult {
  const w = input.window;
  const reqs = inWindow(input.records, w);
  const failed = reqs.filter((r) => !isOk(r));
  const tally = (list: RequestRecord[], key: (r: RequestRecord) => string) =>
    list.reduce<Record<string, number>>((acc, r) => ((acc[key(r)] = (acc[key(r)] ?? 0) + 1), acc), {});
  const s500 = failed.filter((r) => r.status === 500);
  const s503 = failed.filter((r) => r.status === 503);
  const windowSeconds = (w.end - w.start) / 1000;
  const proc = (role: 'api' | 'worker'): ProcessCosts => {
    const p = input.processes[role];
    return { ...readiness(p.samples, w), samePid: p.samePid, logLines: countLogLines(p.lines, w) };
  };
  return {
    fault: input.fault,
    detail: input.detail,
    windowSeconds: round1(windowSeconds),
    faultAtSecond: round1((w.faultAt - w.start) / 1000),
    requests: reqs.length,
    requestsPerSecond: round1(reqs.length / windowSeconds),
    failed: failed.length,
    failedByStatus: tally(failed, (r) => statusKey(r.status)),
    failedByMethod: tally(failed, (r) => r.method),
    failedByMethodAndCause: tally(failed, (r) => `${r.method} ${failureCause(r)}`),
    failedReads: failed.filter((r) => r.kind === 'read').length,
    secondsWithoutSuccessfulWrite: longestWriteGap(input.records, w),
    status500: s500.length,
    status500Details: tally(s500, (r) => r.detail ?? ''),
    status503WithRetryAfter: s503.filter((r) => r.retryAfter).length,
    status503WithoutRetryAfter: s503.filter((r) => !r.retryAfter).length,
    writesAcknowledged: reqs.filter((r) => r.kind === 'write' && isOk(r)).length,
    writesLost: input.lostValues.length,
    lostValues: input.lostValues.slice(0, 20),
    failedWritesCommitted: input.failedWritesCommitted,
    processes: { api: proc('api'), worker: proc('worker') },
    clusterAfterFault: input.clusterAfterFault,
  };
}

export interface Check {
  fault: string;
  check: string;
  ok: boolean;
}

/**
 * What the service must achieve (issue: failovers cost seconds of 503s, never a 500 or a lost write). Lost writes of
 * the frozen primary are Patroni 3.0.2's doing (the stale leader rewinds the interim primary), so they are reported
 * there, not checked.
 */
export function checks(results: FaultResult[]): Check[] {
  return results.flatMap((r) => {
    const list: Check[] = [
      { fault: r.fault, check: 'no 500 answers', ok: r.status500 === 0 },
      { fault: r.fault, check: 'every 503 carries Retry-After', ok: r.status503WithoutRetryAfter === 0 },
      { fault: r.fault, check: 'API and worker kept their PIDs', ok: r.processes.api.samePid && r.processes.worker.samePid },
      { fault: r.fault, check: 'API and worker ready again', ok: r.processes.api.readyAgainSeconds !== null && r.processes.worker.readyAgainSeconds !== null },
      { fault: r.fault, check: 'a cluster created after the fault reached started', ok: r.clusterAfterFault.startedSeconds !== null },
    ];
    if (!r.fault.startsWith('frozen')) list.push({ fault: r.fault, check: 'no acknowledged write lost', ok: r.writesLost === 0 });
    return list;
  });
}

const fmtCounts = (counts: Record<string, number>) =>
  Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ') || 'none';
const seconds = (v: number | null) => (v === null ? 'not by the end' : v === 0 ? 'stayed ready' : `${v} s`);
const logs = (c: LogCounts) =>
  `${c.total} (${['fatal', 'error', 'warn', 'info'].filter((l) => c.byLevel[l]).map((l) => `${l} ${c.byLevel[l]}`).concat(c.notJson ? [`not JSON ${c.notJson}`] : []).join(', ') || 'none'})`;

/** The per-fault table (faults as columns), Markdown. */
export function renderTable(results: FaultResult[]): string {
  const rows: [string, (r: FaultResult) => string][] = [
    ['what was done', (r) => r.detail],
    ['requests in the window (req/s)', (r) => `${r.requests} in ${r.windowSeconds} s (${r.requestsPerSecond}/s)`],
    ['failed requests by status', (r) => fmtCounts(r.failedByStatus)],
    ['failed requests by method', (r) => fmtCounts(r.failedByMethod)],
    ['failed requests by method and cause', (r) => (r.failedByMethodAndCause ? fmtCounts(r.failedByMethodAndCause) : 'not recorded')],
    ['seconds without a successful write', (r) => `${r.secondsWithoutSuccessfulWrite}`],
    ['500 answers (must be 0)', (r) => `**${r.status500}**`],
    ['503 with / without Retry-After', (r) => `${r.status503WithRetryAfter} / ${r.status503WithoutRetryAfter}`],
    ['acknowledged writes lost', (r) => `**${r.writesLost}** of ${r.writesAcknowledged}`],
    ['failed writes that committed', (r) => `${r.failedWritesCommitted}`],
    ['/health/ready 200 again: API / worker', (r) => `${seconds(r.processes.api.readyAgainSeconds)} / ${seconds(r.processes.worker.readyAgainSeconds)}`],
    ['same PID: API / worker', (r) => `${r.processes.api.samePid ? 'yes' : 'NO'} / ${r.processes.worker.samePid ? 'yes' : 'NO'}`],
    ['cluster created after the fault', (r) => (r.clusterAfterFault.startedSeconds === null ? `not started (${r.clusterAfterFault.lastStatus})` : `started in ${r.clusterAfterFault.startedSeconds} s`)],
    ['log lines: API', (r) => logs(r.processes.api.logLines)],
    ['log lines: worker', (r) => logs(r.processes.worker.logLines)],
  ];
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  // Results recorded before the breakdown by cause existed render as they did.
  if (!results.some((r) => r.failedByMethodAndCause)) rows.splice(rows.findIndex(([label]) => label === 'failed requests by method and cause'), 1);
  return [
    `| | ${results.map((r) => r.fault).join(' | ')} |`,
    `|---|${results.map(() => '---').join('|')}|`,
    ...rows.map(([label, f]) => `| ${label} | ${results.map((r) => cell(f(r))).join(' | ')} |`),
  ].join('\n');
}
