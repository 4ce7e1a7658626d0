import type { RequestRecord } from '../failover/load';
import { checks, countLogLines, failureCause, longestWriteGap, readiness, renderTable, summariseFault, type FaultInputs } from '../failover/report';
import { parseLine, type LogLine } from '../failover/service';

/** The failover test's arithmetic (npm run test:failover): what it reports must follow from what it recorded. */
const T = 1_000_000;
const rec = (over: Partial<RequestRecord>): RequestRecord => ({
  worker: 'w',
  kind: 'write',
  method: 'PATCH',
  start: T,
  end: T + 10,
  status: 200,
  retryAfter: false,
  ...over,
});
const line = (at: number, level: number | null, msg = 'm', errType?: string): LogLine => ({ at, level, msg, stream: 'stdout', ...(errType ? { errType } : {}) });

describe('failover report', () => {
  const window = { start: T, faultAt: T + 2000, end: T + 10_000 };

  it('measures the longest time without a successful write, window edges included, ignoring reads and failures', () => {
    const records = [
      rec({ end: T + 1000 }),
      rec({ end: T + 2000 }),
      rec({ end: T + 3000, status: 503 }),
      rec({ end: T + 4000, kind: 'read', method: 'GET' }),
      rec({ end: T + 6500 }),
      rec({ end: T + 9000, status: 201, method: 'POST' }),
    ];
    expect(longestWriteGap(records, window)).toBe(4.5);
    expect(longestWriteGap([], window)).toBe(10);
    // Writes stopped for good: the gap runs to the window's end.
    expect(longestWriteGap([rec({ end: T + 500 })], window)).toBe(9.5);
  });

  it('tells when readiness was 200 again for good after the fault, and how long it was not', () => {
    const samples = [
      { at: T + 1000, status: 503 }, // before the fault: not counted
      { at: T + 2000, status: 200 },
      { at: T + 3000, status: 503 },
      { at: T + 4000, status: 200 },
      { at: T + 5000, status: 0 },
      { at: T + 6500, status: 200 },
      { at: T + 8000, status: 200 },
    ];
    expect(readiness(samples, window)).toEqual({ readyAgainSeconds: 4.5, notReadySeconds: 2.5 });
    expect(readiness(samples.filter((s) => s.status === 200), window)).toEqual({ readyAgainSeconds: 0, notReadySeconds: 0 });
    expect(readiness([{ at: T + 3000, status: 200 }, { at: T + 4000, status: 503 }], window).readyAgainSeconds).toBeNull();
  });

  it('counts log lines in the window by level, lines that are not JSON apart, and names the most frequent with their error class', () => {
    const lines = [
      line(T - 1, 50, 'before'),
      line(T + 1, 50, 'request failed'),
      line(T + 2, 50, 'request failed'),
      line(T + 3, 50, 'Unhandled error', 'QueryRunnerAlreadyReleasedError'),
      line(T + 4, 40, 'LISTEN lost'),
      line(T + 5, null, 'plain text'),
      line(T + 10_000, 50, 'after'),
    ];
    const counts = countLogLines(lines, window);
    expect(counts.total).toBe(5);
    expect(counts.byLevel).toEqual({ error: 3, warn: 1 });
    expect(counts.notJson).toBe(1);
    expect(counts.top[0]).toEqual(['request failed', 2]);
    expect(counts.top.map(([m]) => m)).toContain('Unhandled error (QueryRunnerAlreadyReleasedError)');
    expect(counts.top.map(([m]) => m)).toContain('(not JSON) plain text');
  });

  it('reads pino lines (level, message, error class) and keeps anything else as not JSON', () => {
    expect(parseLine('{"level":50,"msg":"Unhandled error","err":{"type":"QueryFailedError"}}', 'stdout', 5)).toEqual({
      at: 5,
      level: 50,
      msg: 'Unhandled error',
      errType: 'QueryFailedError',
      stream: 'stdout',
    });
    expect(parseLine('{"level":50,"msg":"x","err":{"type":"QueryFailedError","code":"57P01"}}', 'stdout', 5).errType).toBe('QueryFailedError 57P01');
    expect(parseLine('{"level":30,"msg":"ok"}', 'stdout', 5).errType).toBeUndefined();
    expect(parseLine('Migrations applied.', 'stdout', 5).level).toBeNull();
    expect(parseLine('{"level":50}', 'stderr', 5).level).toBeNull();
    expect(parseLine('{not json', 'stdout', 5).level).toBeNull();
  });

  const inputs = (over: Partial<FaultInputs> = {}): FaultInputs => ({
    fault: 'switchover',
    detail: 'switchover pg1 → pg2',
    window,
    records: [
      rec({ start: T + 100, end: T + 110 }),
      rec({ start: T + 2100, status: 503, retryAfter: false }),
      rec({ start: T + 2200, status: 503, retryAfter: true, method: 'POST' }),
      rec({ start: T + 2300, status: 500, detail: 'QueryRunnerAlreadyReleasedError' }),
      rec({ start: T + 2400, status: 'timeout', kind: 'read', method: 'GET' }),
      rec({ start: T + 9000, end: T + 9100 }),
      rec({ start: T + 10_000, status: 500 }), // the next window's
    ],
    lostValues: [],
    failedWritesCommitted: 1,
    processes: {
      api: { samples: [{ at: T + 3000, status: 200 }], samePid: true, lines: [] },
      worker: { samples: [{ at: T + 3000, status: 200 }], samePid: true, lines: [] },
    },
    clusterAfterFault: { slug: 'after-1', startedSeconds: 9.1, lastStatus: 'started' },
    ...over,
  });

  it('summarises one fault: failures by status and method, 500s with their cause, 503s with and without Retry-After', () => {
    const r = summariseFault(inputs());
    expect(r.requests).toBe(6);
    expect(r.failed).toBe(4);
    expect(r.failedByStatus).toEqual({ '503': 2, '500': 1, timeout: 1 });
    expect(r.failedByMethod).toEqual({ PATCH: 2, POST: 1, GET: 1 });
    expect(r.failedReads).toBe(1);
    expect(r.status500).toBe(1);
    expect(r.status500Details).toEqual({ QueryRunnerAlreadyReleasedError: 1 });
    expect([r.status503WithRetryAfter, r.status503WithoutRetryAfter]).toEqual([1, 1]);
    expect(r.writesAcknowledged).toBe(2);
    expect(r.failedWritesCommitted).toBe(1);
    expect(r.faultAtSecond).toBe(2);
    expect(renderTable([r])).toContain('| 500 answers (must be 0) | **1** |');
    expect(r.failedByMethodAndCause).toEqual({ 'PATCH 503': 1, 'POST 503': 1, 'PATCH 500 QueryRunnerAlreadyReleasedError': 1, 'GET timeout': 1 });
    expect(renderTable([r])).toContain('| failed requests by method and cause |');
    // A result recorded before the breakdown existed renders without its row.
    expect(renderTable([{ ...r, failedByMethodAndCause: undefined }])).not.toContain('by method and cause');
  });

  it('names the cause of a failure from the 503 body of an unavailable database, else by status and body', () => {
    const body = (text: string, code: string) => `Service Unavailable: The database is unavailable: ${text} (${code}); retry in 2 s.`;
    expect(failureCause(rec({ status: 503, detail: body('the database refused the connection', '57P03') }))).toBe('connection-refused 57P03');
    expect(failureCause(rec({ status: 503, detail: body('the connection to the database was lost', 'ECONNRESET') }))).toBe('connection-lost ECONNRESET');
    expect(failureCause(rec({ status: 503, detail: body('the database accepts only reads (a failover is under way)', '25006') }))).toBe('read-only 25006');
    expect(failureCause(rec({ status: 503, detail: body('the database did not answer in time', 'ETIMEDOUT') }))).toBe('timeout ETIMEDOUT');
    expect(failureCause(rec({ status: 502, detail: 'Bad Gateway: upstream' }))).toBe('502 Bad Gateway: upstream');
    expect(failureCause(rec({ status: 'network', detail: 'other side closed' }))).toBe('network (other side closed)');
  });

  it('checks what the service must achieve; lost writes of a frozen primary are reported, not checked', () => {
    const clean = summariseFault(inputs({ records: [rec({ start: T + 100 })] }));
    expect(checks([clean]).every((c) => c.ok)).toBe(true);
    const bad = summariseFault(inputs({ lostValues: ['w1-1'] }));
    const failed = checks([bad]).filter((c) => !c.ok).map((c) => c.check);
    expect(failed).toEqual(['no 500 answers', 'every 503 carries Retry-After', 'no acknowledged write lost']);
    const frozen = summariseFault(inputs({ fault: 'frozen primary 40 s', records: [], lostValues: ['w1-1'] }));
    expect(checks([frozen]).every((c) => c.ok)).toBe(true);
    const restarted = summariseFault(
      inputs({
        records: [],
        processes: { ...inputs().processes, worker: { samples: [{ at: T + 3000, status: 503 }], samePid: false, lines: [] } },
        clusterAfterFault: { slug: null, startedSeconds: null, lastStatus: 'not created' },
      }),
    );
    expect(checks([restarted]).filter((c) => !c.ok).map((c) => c.check)).toEqual([
      'API and worker kept their PIDs',
      'API and worker ready again',
      'a cluster created after the fault reached started',
    ]);
  });
});
