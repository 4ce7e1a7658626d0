/**
 * What a background loop is made of. The loop's own part is a `BackgroundJob` (one method: a pass); when and
 * how often it runs, overlap, wake-ups, metrics and shutdown belong to the jobs module (`JobLoop`, run by
 * `BackgroundJobs`), the way controller-runtime's manager runs a `Reconciler`.
 */

/** Handed to every pass. */
export interface PassContext {
  /** Aborted when the application shuts down: a pass stops at its next safe point (between claims or batches). */
  readonly signal: AbortSignal;
  /**
   * An error the pass goes on after (one cluster, one delivery, one table): logged under the job's log context
   * and counted in `cms_background_job_errors_total{job}`. Rethrowing the same error later counts it once.
   */
  error(err: unknown, fields: Record<string, unknown>, message: string): void;
}

/** The loop's own part: what a pass claims and what it does with a claim. */
export interface BackgroundJob<R> {
  pass(ctx: PassContext): Promise<R>;
  /**
   * Work a pass started that outlives it (e.g. webhook deliveries still in flight): awaited at shutdown after the
   * last pass, before the database pool closes.
   */
  settle?(): Promise<void>;
}

/** When a job runs. */
export interface JobSchedule<R> {
  /** The `job` label of the metrics and of the log lines, e.g. `reconciler`. */
  name: string;
  /** The log context of the job's lines (defaults to the name). */
  logContext?: string;
  /** A pass at least this often; 0 or less: only when woken. */
  everyMs: number;
  /** The first pass this long after start, plus up to `jitter` times as much at random (replicas started together spread). */
  firstRun?: { afterMs: number; jitter?: number };
  /** A PostgreSQL channel whose NOTIFY wakes the loop (one LISTEN connection per replica, re-established when lost). */
  listen?: string;
  /** After a successful pass: run another at once (there is more to do). */
  again?(result: R): boolean;
}

/** A pass asked for after the job stopped (at shutdown) is not run. */
export class JobStoppedError extends Error {
  constructor(job: string) {
    super(`The background job ${job} has stopped`);
  }
}
