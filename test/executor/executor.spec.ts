import * as path from 'path';
import { Executor, MAX_ADMISSION_RETRY_AFTER_SECONDS } from '../../src/executor/executor';

type Tasks = {
  hog: () => never;
  echo: (value: unknown) => unknown;
  scheduling: () => { tid: number; policy: number; nice: number } | null;
  spin: (ms: number) => number;
  span: (ms: number) => { startedAt: number; endedAt: number };
  forever: () => never;
  fail: (message: string) => never;
};

const WORKER = path.join(__dirname, 'fixtures', 'test-tasks.worker.ts');

/** Settles with the time it took (from `t0`) and its outcome. */
async function timed<T>(p: Promise<T>, t0: number): Promise<{ ms: number; value?: T; error?: { status?: number; message: string } }> {
  try {
    const value = await p;
    return { ms: Date.now() - t0, value };
  } catch (e) {
    return { ms: Date.now() - t0, error: { status: (e as { getStatus?: () => number }).getStatus?.(), message: (e as Error).message } };
  }
}

describe('Executor (worker-thread pool with per-organisation fair queuing)', () => {
  let executor: Executor<Tasks>;
  const make = (options: Partial<ConstructorParameters<typeof Executor>[0]> = {}) =>
    new Executor<Tasks>({ threads: 2, taskTimeoutMs: 1500, maxWaitingPerKey: 50, workerFile: WORKER, ...options });

  afterEach(async () => {
    await executor?.onApplicationShutdown();
  });

  it('starts no thread before the first task, then all of them, and they stay', async () => {
    executor = make();
    expect(executor.startedThreads).toBe(0);
    expect(await executor.run('org-a', 'echo', 'first')).toBe('first');
    expect(executor.startedThreads).toBe(2);
    await new Promise((r) => setTimeout(r, 300));
    expect(executor.startedThreads).toBe(2);
  });

  // Linux's scheduling policies: SCHED_OTHER 0, SCHED_IDLE 5 (sched.h); this machine and the image have chrt.
  it.each([
    ['idle', { policy: 5 }],
    ['low', { policy: 0, nice: 10 }],
    ['normal', { policy: 0, nice: 0 }],
  ] as const)('runs its threads at the priority asked for (%s), below the event loop', async (threadPriority, expected) => {
    executor = make({ threadPriority });
    const seen = await Promise.all([executor.run('org-a', 'scheduling', undefined), executor.run('org-b', 'scheduling', undefined)]);
    for (const thread of seen) {
      expect(thread).toMatchObject(expected);
      expect(thread!.tid).not.toBe(process.pid);
    }
    // The event loop's thread keeps the process's priority.
    const main = require('fs').readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`, 'utf8') as string;
    const fields = main.slice(main.lastIndexOf(')') + 2).split(' ');
    expect({ policy: Number(fields[38]), nice: Number(fields[16]) }).toEqual({ policy: 0, nice: 0 });
  });

  it('ends only the task that runs out of time: others running and waiting finish, and the thread is replaced', async () => {
    executor = make();
    // Warm both threads (loading the worker is not part of any deadline).
    await Promise.all([executor.run('warm-a', 'echo', 1), executor.run('warm-b', 'echo', 2)]);
    const t0 = Date.now();
    const settled: string[] = [];
    const stuck = timed(executor.run('org-a', 'forever', undefined), t0).then((r) => (settled.push('stuck'), r));
    const queuedBehind = timed(executor.run('org-a', 'echo', 'after'), t0);
    const other = timed(executor.run('org-b', 'spin', 300), t0).then((r) => (settled.push('other'), r));
    const [s, q, o] = await Promise.all([stuck, queuedBehind, other]);
    expect(s.error).toEqual({ status: 422, message: expect.stringMatching(/too expensive.*forever took longer than 1500 ms and was stopped/) });
    // Not before its deadline.
    expect(s.ms).toBeGreaterThanOrEqual(1500);
    // The other organisation's task ran beside the stuck one and finished first.
    expect(o).toMatchObject({ value: 300 });
    expect(settled).toEqual(['other', 'stuck']);
    expect(q).toMatchObject({ value: 'after' });
    expect(executor.outcomes.get('forever timeout')).toBe(1);
    // Both threads work afterwards.
    expect(await Promise.all([executor.run('org-a', 'spin', 10), executor.run('org-b', 'echo', 'ok')])).toEqual([10, 'ok']);
  });

  it('counts the deadline from when a task starts, not from when it was queued', async () => {
    executor = make({ taskTimeoutMs: 1200 });
    await Promise.all([executor.run('warm-a', 'echo', 1), executor.run('warm-b', 'echo', 2)]);
    // One organisation runs one task at a time with two threads: the third waits for the other two, then runs 800 ms.
    const queuedAt = Date.now();
    const results = await Promise.all([1, 2, 3].map(() => executor.run('org-a', 'span', 800)));
    // All three finished (none was stopped), and the third started only after the second ended: by the time it
    // finished, more than the 1200 ms limit had passed since it was queued, which a deadline counted from the
    // queue would have refused.
    expect(results[1].startedAt).toBeGreaterThanOrEqual(results[0].endedAt);
    expect(results[2].startedAt).toBeGreaterThanOrEqual(results[1].endedAt);
    expect(results[2].endedAt - queuedAt).toBeGreaterThan(1200);
    expect(executor.outcomes.get('span timeout') ?? 0).toBe(0);
  });

  it("serves organisations fairly: a flooding organisation does not delay another's first task", async () => {
    executor = make();
    await Promise.all([executor.run('warm-a', 'echo', 1), executor.run('warm-b', 'echo', 2)]);
    let floodSettled = 0;
    const flood = Array.from({ length: 6 }, () => executor.run('org-a', 'span', 300).then((r) => (floodSettled++, r)));
    await new Promise((r) => setTimeout(r, 20));
    const first = await executor.run('org-b', 'spin', 50);
    const settledBeforeB = floodSettled;
    const spans = (await Promise.all(flood)).sort((a, b) => a.startedAt - b.startedAt);
    // org-b ran at once on the thread org-a may not take (half the threads per organisation): it finished before
    // org-a's second task, not after org-a's backlog of six.
    expect(first).toBe(50);
    expect(settledBeforeB).toBeLessThanOrEqual(1);
    // org-a's six ran one at a time: each started after the one before it ended (order, not elapsed time).
    for (let i = 1; i < spans.length; i++) expect(spans[i].startedAt).toBeGreaterThanOrEqual(spans[i - 1].endedAt);
  });

  it('bounds what one organisation may have waiting (429), and reports failures of the task itself', async () => {
    executor = make({ maxWaitingPerKey: 2 });
    const running = executor.run('org-a', 'spin', 400);
    const waiting = [executor.run('org-a', 'echo', 1), executor.run('org-a', 'echo', 2)];
    const refused = await timed(executor.run('org-a', 'echo', 3), Date.now());
    expect(refused.error).toEqual({ status: 429, message: expect.stringMatching(/already has 2 expensive operations waiting/) });
    // Another organisation is not affected by org-a's bound.
    expect(await executor.run('org-b', 'echo', 'b')).toBe('b');
    expect(await Promise.all([running, ...waiting])).toEqual([400, 1, 2]);
    await expect(executor.run('org-a', 'fail', 'broken input')).rejects.toThrow('broken input');
  });

  it('bounds the callers of one organisation that wait holding a database connection (429), not others or those without one', async () => {
    let holding: object | null = { request: 1 };
    const first = holding;
    executor = make({ holdsConnection: () => holding, maxHoldingPerKey: 2 });
    const a1 = executor.run('org-a', 'spin', 300);
    holding = { request: 2 };
    const b1 = executor.run('org-a', 'echo', 1);
    holding = { request: 3 };
    const refused = await timed(executor.run('org-a', 'echo', 2), Date.now());
    expect(refused.error).toEqual({ status: 429, message: expect.stringMatching(/already has 2 expensive operations in progress in changes/) });
    expect(await executor.run('org-b', 'echo', 'b')).toBe('b');
    // A caller admitted once is admitted again (its connection is held either way).
    holding = first;
    const a2 = executor.run('org-a', 'echo', 'again');
    holding = null;
    // A reader that holds no connection is bounded only by the waiting limit.
    expect(await executor.run('org-a', 'echo', 'read')).toBe('read');
    expect(await Promise.all([a1, b1, a2])).toEqual([300, 1, 'again']);
    // Settled tasks (resolved or failed) give their place back.
    holding = { request: 4 };
    await expect(executor.run('org-a', 'fail', 'x')).rejects.toThrow('x');
    holding = { request: 5 };
    const c = executor.run('org-a', 'echo', 3);
    holding = { request: 6 };
    expect(await Promise.all([c, executor.run('org-a', 'echo', 4)])).toEqual([3, 4]);
  });

  it('admits a caller for a series of tasks up front: beyond the per-organisation bound 429 until one is released', async () => {
    executor = make({ maxHoldingPerKey: 1 });
    const first = executor.admit('org-a');
    expect(() => executor.admit('org-a')).toThrow(expect.objectContaining({ status: 429, message: expect.stringMatching(/already has 1 expensive operation in progress/) }));
    expect(executor.outcomes.get('admission refused')).toBe(1);
    // Another organisation is admitted; the admitted caller's tasks run.
    const other = executor.admit('org-b');
    expect(await Promise.all([executor.run('org-a', 'echo', 1, first), executor.run('org-a', 'echo', 2, first), executor.run('org-b', 'echo', 3, other)])).toEqual([1, 2, 3]);
    first.release();
    first.release(); // releasing twice changes nothing
    const again = executor.admit('org-a');
    expect(await executor.run('org-a', 'echo', 4, again)).toBe(4);
    again.release();
    other.release();
  });

  it("names in Retry-After when the organisation's first caller in progress is expected to end, from how long its callers took", () => {
    let now = 1_000_000;
    executor = make({ maxHoldingPerKey: 1, now: () => now });
    const retryAfter = () => {
      try {
        executor.admit('org-a').release();
        return 'admitted';
      } catch (e) {
        return (e as { headers: Record<string, string> }).headers['retry-after'];
      }
    };
    // Nothing known yet: one second.
    let caller = executor.admit('org-a');
    expect(retryAfter()).toBe('1');
    now += 8_000;
    caller.release();
    // Callers take 8 s: one that began 3 s ago ends in about 5.
    caller = executor.admit('org-a');
    now += 3_000;
    expect(retryAfter()).toBe('5');
    // Overdue: one second.
    now += 9_000;
    expect(retryAfter()).toBe('1');
    caller.release();
    // A moving average: that 12 s caller made it 0.75 × 8 + 0.25 × 12 = 9 s, a 2 s one brings it to 7.25 s.
    caller = executor.admit('org-a');
    now += 2_000;
    caller.release();
    caller = executor.admit('org-a');
    expect(retryAfter()).toBe('8');
    // Capped however long callers take, and another organisation has its own figure.
    now += 600_000;
    caller.release();
    caller = executor.admit('org-a');
    expect(retryAfter()).toBe(String(MAX_ADMISSION_RETRY_AFTER_SECONDS));
    const other = executor.admit('org-b');
    expect(() => executor.admit('org-b')).toThrow(expect.objectContaining({ headers: { 'retry-after': '1' } }));
    other.release();
    caller.release();
  });

  it('stops a task that outgrows its worker heap (422), replaces the worker, and runs the next task', async () => {
    executor = make({ threads: 1, workerHeapMb: 32, taskTimeoutMs: 60_000 });
    const hog = await timed(executor.run('org-a', 'hog', undefined), Date.now());
    expect(hog.error).toEqual({ status: 422, message: expect.stringMatching(/too expensive to process: hog needed more memory than a worker may use/) });
    expect(executor.outcomes.get('hog out_of_memory')).toBe(1);
    expect(await executor.run('org-a', 'echo', 'next')).toBe('next');
    expect(executor.startedThreads).toBe(1);
  });

  it('answers 503 to waiting tasks and refuses new ones at shutdown', async () => {
    executor = make({ threads: 1 });
    const running = timed(executor.run('org-a', 'spin', 300), Date.now());
    const waiting = timed(executor.run('org-a', 'echo', 1), Date.now());
    await new Promise((r) => setTimeout(r, 50));
    await executor.onApplicationShutdown();
    expect((await waiting).error?.status).toBe(503);
    expect((await running).error?.status ?? 200).not.toBe(422);
    await expect(executor.run('org-a', 'echo', 2)).rejects.toMatchObject({ status: 503 });
  });
});
