import { Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { BackgroundJob, JobStoppedError, PassContext } from '../../src/jobs/background-job';
import { BackgroundJobs } from '../../src/jobs/background-jobs.service';
import { LISTEN_RETRY_MIN_MS, LISTENER_APPLICATION_NAME } from '../../src/jobs/notify-listener';
import { MetricsService } from '../../src/metrics/metrics.service';
import { waitFor } from '../webhooks/receiver';
import { startTestApp, TestApp } from '../support/test-app';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A job that counts its passes and can be held inside a pass, made to fail, or made to do more. */
class ProbeJob implements BackgroundJob<number> {
  passes = 0;
  running = 0;
  maxRunning = 0;
  /** Passes wait here while it is set. */
  hold: Promise<void> | null = null;
  failures = 0;
  passMs = 0;
  last: PassContext | null = null;
  then?: (ctx: PassContext) => Promise<void>;

  /** Holds the next passes until the returned function is called. */
  block(): () => void {
    let open!: () => void;
    this.hold = new Promise<void>((r) => (open = r));
    return () => {
      this.hold = null;
      open();
    };
  }

  async pass(ctx: PassContext): Promise<number> {
    this.last = ctx;
    this.passes++;
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    try {
      if (this.hold) await this.hold;
      if (this.passMs) await sleep(this.passMs);
      if (this.failures > 0) {
        this.failures--;
        throw new Error('probe failure');
      }
      await this.then?.(ctx);
      return this.passes;
    } finally {
      this.running--;
    }
  }
}

async function metric(t: TestApp, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const m = t.get(MetricsService).registry.getSingleMetric(name);
  const { values } = await m!.get();
  return values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
}

/** The jobs module on its own: each loop's lifecycle, with probe jobs registered beside the app's own. */
describe('background jobs', () => {
  describe('with BACKGROUND_JOBS_ENABLED', () => {
    let t: TestApp;
    let jobs: BackgroundJobs;
    beforeAll(async () => {
      // The app's own loops run too, slowly (they do not matter here).
      t = await startTestApp({ BACKGROUND_JOBS_ENABLED: 'true', RECONCILE_INTERVAL_SECONDS: '600', SCHEDULER_INTERVAL_SECONDS: '0', WEBHOOK_POLL_INTERVAL_MS: '60000' });
      jobs = t.get(BackgroundJobs);
    });
    afterAll(() => t.close());

    it('never runs two passes of a loop at once, whoever asks for them', async () => {
      const job = new ProbeJob();
      job.passMs = 20;
      const loop = jobs.register(job, { name: 'probe-overlap', everyMs: 5 });
      const direct = [loop.runPass(), loop.runPass(), loop.runPass()];
      for (let i = 0; i < 20; i++) {
        loop.wake();
        await sleep(7);
      }
      await Promise.all(direct);
      await sleep(100);
      expect(job.passes).toBeGreaterThanOrEqual(5);
      expect(job.maxRunning).toBe(1);
    });

    it('a wake-up during a pass runs exactly one more pass right after it', async () => {
      const job = new ProbeJob();
      const open = job.block();
      const loop = jobs.register(job, { name: 'probe-wake', everyMs: 0 });
      loop.wake();
      await waitFor(() => job.running === 1);
      loop.wake();
      loop.wake();
      loop.wake();
      await sleep(50);
      expect(job.passes).toBe(1);
      open();
      await waitFor(() => job.passes === 2);
      await sleep(200);
      expect(job.passes).toBe(2);
      expect(job.maxRunning).toBe(1);
    });

    it('a database outage is one warn line per loop and one line when a pass succeeds again, however many items and passes fail', async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn');
      const error = jest.spyOn(Logger.prototype, 'error');
      const log = jest.spyOn(Logger.prototype, 'log');
      try {
        const job = new ProbeJob();
        let down = 3;
        job.then = async (ctx) => {
          if (down-- <= 0) return;
          // Two items fail on the way, then the pass itself: a lost connection each time.
          ctx.error(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }), { item: 1 }, 'An item failed');
          ctx.error(new Error('Connection terminated unexpectedly'), { item: 2 }, 'An item failed');
          throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
        };
        const loop = jobs.register(job, { name: 'probe-outage', everyMs: 0 });
        for (let i = 0; i < 3; i++) await expect(loop.runPass()).rejects.toThrow(/ECONNREFUSED/);
        await loop.runPass();
        const mine = (spy: jest.SpyInstance) => spy.mock.calls.filter(([fields]) => (fields as { job?: string })?.job === 'probe-outage');
        expect(mine(error)).toEqual([]);
        expect(mine(warn).map(([f]) => (f as { event: string; code: string }).event)).toEqual(['job_database_unavailable']);
        expect(mine(log).map(([f]) => f)).toEqual([expect.objectContaining({ event: 'job_database_available', errors: 9 })]);
        expect(await metric(t, 'cms_background_job_errors_total', { loop: 'probe-outage' })).toBe(9);
      } finally {
        warn.mockRestore();
        error.mockRestore();
        log.mockRestore();
      }
    });

    it('runs another pass at once while the job says there is more', async () => {
      const job = new ProbeJob();
      const loop = jobs.register(job, { name: 'probe-again', everyMs: 0, again: (n) => n < 4 });
      loop.wake();
      await waitFor(() => job.passes === 4);
      await sleep(100);
      expect(job.passes).toBe(4);
    });

    it('counts a failing pass in the metrics and goes on with the next pass', async () => {
      const job = new ProbeJob();
      job.failures = 1;
      jobs.register(job, { name: 'probe-failing', everyMs: 20 });
      await waitFor(() => job.passes >= 3);
      await sleep(30);
      expect(await metric(t, 'cms_job_passes_total', { loop: 'probe-failing', outcome: 'failed' })).toBe(1);
      expect(await metric(t, 'cms_job_passes_total', { loop: 'probe-failing', outcome: 'ok' })).toBeGreaterThanOrEqual(2);
      expect(await metric(t, 'cms_background_job_errors_total', { loop: 'probe-failing' })).toBe(1);
      const text = await t.get(MetricsService).registry.metrics();
      const passes = Number(/cms_job_pass_duration_seconds_count\{loop="probe-failing"\} (\d+)/.exec(text)?.[1]);
      expect(passes).toBeGreaterThanOrEqual(3);
    });

    it('counts an error a pass reported and went on after, once even when the pass rethrows it', async () => {
      const job = new ProbeJob();
      const loop = jobs.register(job, { name: 'probe-item-errors', everyMs: 0 });
      job.then = async (ctx) => ctx.error(new Error('one item'), { item: 1 }, 'An item failed');
      await loop.runPass();
      expect(await metric(t, 'cms_background_job_errors_total', { loop: 'probe-item-errors' })).toBe(1);
      expect(await metric(t, 'cms_job_passes_total', { loop: 'probe-item-errors', outcome: 'ok' })).toBe(1);
      job.then = async (ctx) => {
        const err = new Error('a table');
        ctx.error(err, {}, 'A table failed');
        throw err;
      };
      await expect(loop.runPass()).rejects.toThrow('a table');
      expect(await metric(t, 'cms_background_job_errors_total', { loop: 'probe-item-errors' })).toBe(2);
      expect(await metric(t, 'cms_job_passes_total', { loop: 'probe-item-errors', outcome: 'failed' })).toBe(1);
    });

    it('runs the first pass after its delay with jitter, then waits for the interval', async () => {
      const job = new ProbeJob();
      const registered = Date.now();
      let firstAt = 0;
      job.then = async () => void (firstAt ||= Date.now());
      jobs.register(job, { name: 'probe-first-run', everyMs: 0, firstRun: { afterMs: 150, jitter: 1 } });
      await sleep(100);
      expect(job.passes).toBe(0);
      await waitFor(() => job.passes === 1, 10_000);
      // Not before its delay (how late a busy machine runs it is the benchmarks' concern, not a test's).
      expect(firstAt - registered).toBeGreaterThanOrEqual(145);
      await sleep(350);
      expect(job.passes).toBe(1);
    });

    it('a NOTIFY on the loop channel runs a pass before the interval, also after the LISTEN connection was lost', async () => {
      const job = new ProbeJob();
      jobs.register(job, { name: 'probe-listen', everyMs: 600_000, listen: 'cms_probe_wake' });
      const listener = `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND query LIKE '%cms_probe_wake%'`;
      let rows: unknown[] = [];
      for (let i = 0; i < 100 && rows.length === 0; i++, await sleep(50)) rows = await t.db.query(listener, [LISTENER_APPLICATION_NAME]);
      expect(rows).toHaveLength(1);
      expect(job.passes).toBe(0);
      await t.db.query(`SELECT pg_notify('cms_probe_wake', 'x')`);
      await waitFor(() => job.passes === 1, 3000);

      // The connection dies: it is made again, and wakes the loop once for what it may have missed.
      await t.db.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, [
        LISTENER_APPLICATION_NAME,
      ]);
      await waitFor(() => job.passes === 2, LISTEN_RETRY_MIN_MS + 3000);
      await sleep(100);
      await t.db.query(`SELECT pg_notify('cms_probe_wake', 'x')`);
      await waitFor(() => job.passes === 3, 3000);
    }, 20_000);

    it('refuses a second job of the same name', () => {
      expect(() => jobs.register(new ProbeJob(), { name: 'probe-overlap', everyMs: 0 })).toThrow(/registered already/);
    });
  });

  it('shutdown waits for the pass under way, tells it to stop, and starts none after', async () => {
    const t = await startTestApp({ BACKGROUND_JOBS_ENABLED: 'true', RECONCILE_INTERVAL_SECONDS: '600', SCHEDULER_INTERVAL_SECONDS: '0' });
    const job = new ProbeJob();
    const open = job.block();
    let committed = false;
    job.then = async () => {
      // The pool is still open after the pass was told to stop.
      await t.db.query('SELECT 1');
      committed = true;
    };
    const loop = t.get(BackgroundJobs).register(job, { name: 'probe-shutdown', everyMs: 10 });
    await waitFor(() => job.running === 1);
    loop.wake(); // one more pass is due after this one
    let closed = false;
    const closing = t.close().then(() => (closed = true));
    await sleep(200);
    expect(closed).toBe(false);
    expect(job.last?.signal.aborted).toBe(true);
    open();
    await closing;
    expect(committed).toBe(true);
    expect(job.passes).toBe(1);
    await sleep(50);
    expect(job.passes).toBe(1);
    await expect(loop.runPass()).rejects.toBeInstanceOf(JobStoppedError);
  });

  it('runs all five of the service\'s loops, each with its timer in the SchedulerRegistry and its passes counted', async () => {
    const t = await startTestApp({ BACKGROUND_JOBS_ENABLED: 'true', RECONCILE_INTERVAL_SECONDS: '0.05', SCHEDULER_INTERVAL_SECONDS: '0.05', WEBHOOK_POLL_INTERVAL_MS: '50' });
    try {
      const loops = ['reconciler', 'scheduler', 'webhooks', 'dashboard-health', 'retention'];
      const registry = t.get(SchedulerRegistry);
      for (const name of loops) expect(registry.doesExist('interval', `job:${name}`)).toBe(true);
      for (const job of ['reconciler', 'scheduler', 'webhooks']) {
        const until = Date.now() + 10_000;
        while (((await metric(t, 'cms_job_passes_total', { loop: job, outcome: 'ok' })) ?? 0) === 0) {
          if (Date.now() > until) throw new Error(`no pass of ${job} counted`);
          await sleep(20);
        }
      }
    } finally {
      await t.close();
    }
    expect(t.get(SchedulerRegistry).getIntervals()).toEqual([]);
  });

  it('starts nothing without BACKGROUND_JOBS_ENABLED; a pass still runs when asked for directly', async () => {
    const t = await startTestApp({ BACKGROUND_JOBS_ENABLED: 'false', RECONCILE_INTERVAL_SECONDS: '0.05', WEBHOOK_POLL_INTERVAL_MS: '50' });
    try {
      const job = new ProbeJob();
      const loop = t.get(BackgroundJobs).register(job, { name: 'probe-off', everyMs: 10, firstRun: { afterMs: 0 }, listen: 'cms_probe_off' });
      await sleep(200);
      await t.db.query(`SELECT pg_notify('cms_probe_off', 'x')`);
      loop.wake();
      await sleep(100);
      expect(job.passes).toBe(0);
      const listeners = await t.db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, [LISTENER_APPLICATION_NAME]);
      expect(listeners).toHaveLength(0);
      // The app's own loops did not run either.
      const { values } = await t.get(MetricsService).registry.getSingleMetric('cms_job_passes_total')!.get();
      expect(values.filter((v) => v.value > 0)).toEqual([]);
      expect(await loop.runPass()).toBe(1);
    } finally {
      await t.close();
    }
  });
});
