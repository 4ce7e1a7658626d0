import { databaseUnavailable } from '../common/database-unavailable';
import { Logger } from '@nestjs/common';
import type { SchedulerRegistry } from '@nestjs/schedule';
import { performance } from 'perf_hooks';
import { runAsBackgroundWork } from '../database/background-pool';
import type { MetricsService } from '../metrics/metrics.service';
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { BackgroundJob, JobSchedule, JobStoppedError, PassContext } from './background-job';

/** Background passes' spans (src/tracing.ts). */
const tracer = trace.getTracer('cluster-management-service');

export const JOB_PASS_OUTCOMES = ['ok', 'failed'] as const;

/**
 * The lifecycle of one background loop: passes on an interval, on a wake-up (`wake()`, a NOTIFY) and when the
 * job says there is more; never two passes at once; each pass timed and counted; shutdown finishes the pass under
 * way and starts none after. Passes run as background work, on the background connection pool. `runPass()` runs
 * one pass now (tests and benchmarks drive a job with it while the loops are off); it too waits for a pass under
 * way rather than overlap it.
 */
export class JobLoop<R> {
  private readonly logger: Logger;
  private readonly abort = new AbortController();
  private timers: NodeJS.Timeout[] = [];
  /** Where the timers are registered (by name `job:<name>`), so they show in @nestjs/schedule's registry. */
  private registry: SchedulerRegistry | null = null;
  private started = false;
  /** Passes asked for and not finished yet: the one under way and those queued behind it. */
  private pending = 0;
  /** Settles when the last pass asked for has finished; the next pass starts after it. */
  private tail: Promise<void> = Promise.resolve();
  /** Woken while a pass was under way: one more pass follows it. */
  private rerun = false;
  /** Errors a pass reported through its context (counted already when the pass rethrows them). */
  private readonly reported = new WeakSet<object>();
  /** The database outage this loop's passes are failing in, if any (`databaseOutage`). */
  private outage: { since: number; errors: number } | null = null;
  private readonly context: PassContext;

  constructor(
    private readonly job: BackgroundJob<R>,
    readonly schedule: JobSchedule<R>,
    private readonly metrics: MetricsService,
  ) {
    this.logger = new Logger(schedule.logContext ?? schedule.name);
    const labels = { loop: schedule.name };
    // Exported from the start, so rates and alerts work before the first pass.
    for (const outcome of JOB_PASS_OUTCOMES) metrics.jobPasses.inc({ ...labels, outcome }, 0);
    metrics.backgroundErrors.inc(labels, 0);
    metrics.jobPassDuration.zero(labels);
    this.context = {
      signal: this.abort.signal,
      error: (err, fields, message) => {
        if (err && typeof err === 'object') this.reported.add(err);
        this.metrics.backgroundErrors.inc(labels);
        if (this.databaseOutage(err)) return;
        this.logger.error({ err, job: this.name, ...fields }, message);
      },
    };
  }

  get name(): string {
    return this.schedule.name;
  }

  /**
   * True when `err` means the database cannot be used now: the first such error of an outage is one warn line,
   * the rest are counted (`cms_background_job_errors_total`) but not logged, until a pass succeeds again
   * (`databaseBack`), so an outage is two lines per loop instead of a line per failed item and pass.
   */
  private databaseOutage(err: unknown): boolean {
    const unavailable = databaseUnavailable(err);
    if (!unavailable) return false;
    if (this.outage === null) {
      this.outage = { since: Date.now(), errors: 0 };
      this.logger.warn(
        { event: 'job_database_unavailable', job: this.name, code: unavailable.code },
        `Background job ${this.name}: the database is unavailable (${unavailable.code}); its passes fail until it returns`,
      );
    }
    this.outage.errors++;
    return true;
  }

  private databaseBack(): void {
    if (this.outage === null) return;
    const { since, errors } = this.outage;
    this.outage = null;
    const seconds = (Date.now() - since) / 1000;
    this.logger.log(
      { event: 'job_database_available', job: this.name, outageSeconds: seconds, errors },
      `Background job ${this.name}: a pass succeeded again after ${seconds.toFixed(1)} s of database outage (${errors} errors)`,
    );
  }

  /** True once shutdown began. */
  get stopping(): boolean {
    return this.abort.signal.aborted;
  }

  /** Starts the timers (the jobs module calls this after bootstrap when BACKGROUND_JOBS_ENABLED). */
  start(registry?: SchedulerRegistry): void {
    if (this.started || this.stopping) return;
    this.started = true;
    this.registry = registry ?? null;
    const { everyMs, firstRun } = this.schedule;
    if (everyMs > 0) {
      const interval = setInterval(() => this.wake(), everyMs).unref();
      this.timers.push(interval);
      this.registry?.addInterval(this.timerName, interval);
    }
    if (firstRun) {
      const delay = firstRun.afterMs * (1 + (firstRun.jitter ?? 0) * Math.random());
      const first = setTimeout(() => this.wake(), delay).unref();
      this.timers.push(first);
      this.registry?.addTimeout(this.timerName, first);
    }
  }

  /** The name of this loop's timers in the SchedulerRegistry. */
  get timerName(): string {
    return `job:${this.name}`;
  }

  /** A pass now, or one more right after the pass under way. Nothing while the loop is off or stopping. */
  wake(): void {
    if (!this.started || this.stopping) return;
    if (this.pending > 0) {
      this.rerun = true;
      return;
    }
    // Failures are logged and counted by the pass; the loop goes on.
    this.runPass().catch(() => undefined);
  }

  /** One pass, after the one under way if any. Rejects when the pass fails, or when the job stopped before it began. */
  runPass(): Promise<R> {
    this.pending++;
    const run = this.tail.then(() => this.execute());
    this.tail = run.then(
      (result) => this.finished(this.schedule.again?.(result) ?? false),
      () => this.finished(false),
    );
    return run;
  }

  /** Shutdown: no pass starts any more; the pass under way (told by its signal) and the job's own work finish. */
  async stop(): Promise<void> {
    this.abort.abort();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers = [];
    if (this.registry?.doesExist('interval', this.timerName)) this.registry.deleteInterval(this.timerName);
    if (this.registry?.doesExist('timeout', this.timerName)) this.registry.deleteTimeout(this.timerName);
    let tail: Promise<void>;
    do {
      tail = this.tail;
      await tail;
    } while (tail !== this.tail);
    await runAsBackgroundWork(() => this.job.settle?.());
  }

  private finished(more: boolean): void {
    this.pending--;
    if (this.pending === 0 && (this.rerun || more)) setImmediate(() => this.wake());
  }

  private async execute(): Promise<R> {
    if (this.stopping) throw new JobStoppedError(this.name);
    // A wake-up before this point is answered by this pass.
    this.rerun = false;
    const job = this.name;
    const startedAt = performance.now();
    // A span per pass (src/tracing.ts; a no-op without tracing): its SQL and outgoing calls are its children.
    const span = tracer.startSpan(`background pass ${job}`, { root: true, attributes: { 'cms.loop': job } });
    try {
      // On the background pool (background-pool.ts), so requests never wait for a connection behind a pass.
      const result = await context.with(trace.setSpan(context.active(), span), () => runAsBackgroundWork(() => this.job.pass(this.context)));
      this.metrics.jobPasses.inc({ loop: job, outcome: 'ok' });
      this.databaseBack();
      return result;
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
      this.metrics.jobPasses.inc({ loop: job, outcome: 'failed' });
      if (!(err && typeof err === 'object' && this.reported.has(err))) this.metrics.backgroundErrors.inc({ loop: job });
      if (!this.databaseOutage(err)) this.logger.error({ err, job }, `Background job ${job}: the pass failed`);
      throw err;
    } finally {
      span.end();
      this.metrics.jobPassDuration.observe({ loop: job }, (performance.now() - startedAt) / 1000);
    }
  }
}
