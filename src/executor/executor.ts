import { HttpException, HttpStatus, Logger, OnApplicationShutdown } from '@nestjs/common';
import Piscina from 'piscina';
import { MessageChannel } from 'worker_threads';
import { FairQueue } from './fair-queue';
import type { ExecutorThreadPriority } from '../config/executor-thread-priority';
import { THREAD_PRIORITY_KEY, type WorkerTask } from './worker-handler';

/** Tasks by name, each a pure function of structured-clonable data (a module's own, e.g. src/policies/policy-tasks.ts). */
export type TaskCatalogue = Record<string, (input: never) => unknown>;

export interface ExecutorOptions {
  /** Worker threads (EXECUTOR_THREADS). */
  threads: number;
  /** How long one task may run, counted from its start (EXECUTOR_TASK_TIMEOUT_MS). */
  taskTimeoutMs: number;
  /** Tasks one key (organisation) may have waiting; more are 429 (EXECUTOR_QUEUE_PER_ORGANISATION). */
  maxWaitingPerKey: number;
  /** The worker file, which runs the catalogue's tasks (the service's: src/worker/executor.worker.ts; tests use a fixture). */
  workerFile: string;
  /** Describes a task for the timeout message. */
  describe?: (task: string) => string;
  /** Heap bound of each worker thread, in MB. */
  workerHeapMb?: number;
  /** How the threads yield the CPU to the event loop (EXECUTOR_THREAD_PRIORITY; default `low`). */
  threadPriority?: ExecutorThreadPriority;
  /**
   * What the caller holds while it waits, when it holds a database connection (a mutating request's transaction),
   * else null. Callers holding one are bounded per key by `maxHoldingPerKey`, so one organisation's backlog cannot
   * hold the request pool.
   */
  holdsConnection?: () => object | null;
  /**
   * Callers of one key that may be in progress at once while holding request-path resources (a connection held by a
   * change's transaction, or an admission: a dry-run or scan); a new one beyond is 429.
   */
  maxHoldingPerKey?: number;
  /** The clock (ms) the Retry-After estimate reads; tests pass their own. */
  now?: () => number;
}

/** The longest Retry-After an admission refusal names, in seconds, however long the operations in progress take. */
export const MAX_ADMISSION_RETRY_AFTER_SECONDS = 30;


/** The fair queue's key of work done for an organisation (null: the platform's own, e.g. platform policies). */
export const executorKey = (organisationId: number | string | null): string => (organisationId === null ? 'platform' : `organisation:${organisationId}`);

/**
 * A caller admitted for a series of tasks of one key (a policy dry-run or scan, which reads pages of clusters and
 * hands them over batch by batch): its place among the key's callers counts from `admit` until `release`.
 */
export interface ExecutorAdmission {
  readonly key: string;
  release(): void;
}
const HOLDER = Symbol('executor.holder');

/** How a task ended, counted per task (cms_executor_tasks_total). */
export type ExecutorOutcome = 'ok' | 'failed' | 'timeout' | 'out_of_memory' | 'refused';

/** A task ran out of its time (or memory) and was stopped: its input is too expensive to process. */
export class ExecutorTaskTooExpensiveException extends HttpException {
  constructor(
    message: string,
    /** Why it was stopped. */
    readonly reason: 'timeout' | 'out_of_memory' = 'timeout',
  ) {
    super(message, HttpStatus.UNPROCESSABLE_ENTITY);
  }
}

/** The organisation already has as many tasks waiting as it may. */
export class ExecutorQueueFullException extends HttpException {
  readonly headers: { 'retry-after': string };
  constructor(limit: number, what = 'waiting', retryAfterSeconds = 1) {
    super(
      `This organisation already has ${limit} expensive operation${limit === 1 ? '' : 's'} ${what} (parsing, validation, pattern matching, policy evaluation); retry when they finish.`,
      HttpStatus.TOO_MANY_REQUESTS,
    );
    this.headers = { 'retry-after': String(retryAfterSeconds) };
  }
}

interface Job {
  task: string;
  input: unknown;
  resolve(value: unknown): void;
  reject(e: unknown): void;
}

/**
 * The one bounded executor for expensive work on user input (src/worker/executor-tasks.ts lists that work). A
 * piscina pool of `threads` worker threads, and in front of it a fair queue: organisations are served round-robin,
 * and one organisation runs at most half the threads at once (at least one), so another organisation's first task
 * starts as soon as a thread is free of it. A task's deadline counts from when it starts in a worker; at the
 * deadline only that task is stopped (its worker is terminated and replaced), with 422. The event loop only posts
 * inputs and receives results.
 */
export class Executor<Tasks extends TaskCatalogue = TaskCatalogue> implements OnApplicationShutdown {
  private readonly logger = new Logger('Executor');
  /** Made on first use, with all its threads (see `workers`). */
  private pool?: Piscina;
  private readonly waiting = new FairQueue<Job>();
  private readonly runningPerKey = new Map<string, number>();
  /** Per key, the callers holding a database connection that have tasks waiting or running, with their task count. */
  private readonly holdingPerKey = new Map<string, Map<object, number>>();
  /** Callers admitted once keep being admitted: refusing a later task would not free their connection. */
  private readonly admitted = new WeakSet<object>();
  /** When each caller in progress was first counted (ms), for the Retry-After of a refusal. */
  private readonly heldSince = new WeakMap<object, number>();
  /** Per key, how long its callers were in progress, as a moving average (ms). */
  private readonly typicalHoldMs = new Map<string, number>();
  private readonly now: () => number;
  private running = 0;
  private closed = false;
  /** Data every worker thread receives when it starts (piscina's `workerData`), by key. */
  private readonly shared: Record<string, unknown> = {};
  /** Tasks settled so far, by `task outcome`. */
  readonly outcomes = new Map<string, number>();
  /** Tasks one key may run at once. */
  readonly perKey: number;

  constructor(private readonly options: ExecutorOptions) {
    this.perKey = Math.max(1, Math.floor(options.threads / 2));
    this.shared[THREAD_PRIORITY_KEY] = options.threadPriority ?? 'low';
    this.now = options.now ?? Date.now;
  }

  /**
   * The thread pool, made when the first task comes: each thread costs about 20 MB of RSS, which an instance that
   * never evaluates a policy, a silence or alerting YAML (e.g. most API replicas) does not pay. All threads start then
   * and stay (a replaced worker costs a module load), so only that first task waits for start-up; its time limit
   * counts from when its thread has begun it.
   */
  private workers(): Piscina {
    const file = this.options.workerFile;
    return (this.pool ??= new Piscina({
      filename: file,
      workerData: this.shared,
      minThreads: this.options.threads,
      maxThreads: this.options.threads,
      idleTimeout: Infinity,
      concurrentTasksPerWorker: 1,
      execArgv: file.endsWith('.ts') ? ['--require', '@swc-node/register'] : [],
      resourceLimits: { maxOldGenerationSizeMb: this.options.workerHeapMb ?? 128 },
    }));
  }

  /**
   * Hands `value` to every worker thread (as `workerData[key]`, read with piscina's `workerData`), e.g. the policy
   * variables' types, which the threads cannot derive without loading the service's DTO classes. Only before the
   * first task: threads started later (replacements of stopped ones) receive the same.
   */
  shareWithWorkers(key: string, value: unknown): void {
    if (this.pool) throw new Error(`Executor: '${key}' is shared with the worker threads after they started`);
    this.shared[key] = structuredClone(value);
  }

  /** Threads started so far: none before the first task, then all of them. */
  get startedThreads(): number {
    return this.pool?.threads.length ?? 0;
  }

  get threads(): number {
    return this.options.threads;
  }

  /** Waiting tasks (all keys). */
  get waitingCount(): number {
    return this.waiting.size;
  }

  /**
   * Admits a caller for several tasks of `key` before it does any work for them (a dry-run reads its page of clusters
   * only once admitted): 429 with Retry-After when the key already has `maxHoldingPerKey` callers in progress (these
   * and changes waiting in their transaction). Pass the admission to `run`; `release` it when done.
   */
  admit(key: string): ExecutorAdmission {
    if (this.closed) throw new HttpException('The service is shutting down; retry on another instance.', HttpStatus.SERVICE_UNAVAILABLE);
    const holder = {};
    const refused = this.hold(key, holder, 'in progress');
    if (refused) {
      this.count('admission', 'refused');
      throw refused;
    }
    let released = false;
    return {
      key,
      [HOLDER]: holder,
      release: () => {
        if (released) return;
        released = true;
        this.unhold(key, holder);
      },
    } as ExecutorAdmission;
  }

  /**
   * Runs `task` with `input` in a worker thread, queued fairly under `key` (the organisation the work is for).
   * 429 when the key already has `maxWaitingPerKey` tasks waiting, or (for a caller holding a connection) too many
   * such callers; 422 when the task runs out of time or memory. `admission`: the caller was admitted for it (`admit`).
   */
  run<K extends keyof Tasks & string>(
    key: string,
    task: K,
    input: Parameters<Tasks[K]>[0],
    admission?: ExecutorAdmission,
  ): Promise<Awaited<ReturnType<Tasks[K]>>> {
    if (this.closed) return Promise.reject(new HttpException('The service is shutting down; retry on another instance.', HttpStatus.SERVICE_UNAVAILABLE));
    if (this.waiting.sizeOf(key) >= this.options.maxWaitingPerKey) {
      this.count(task, 'refused');
      return Promise.reject(new ExecutorQueueFullException(this.options.maxWaitingPerKey));
    }
    const holder = (admission as { [HOLDER]?: object } | undefined)?.[HOLDER] ?? this.options.holdsConnection?.() ?? null;
    if (holder) {
      const refused = this.hold(key, holder, 'in progress in changes');
      if (refused) {
        this.count(task, 'refused');
        return Promise.reject(refused);
      }
    }
    const settled = () => {
      if (holder) this.unhold(key, holder);
    };
    return new Promise((resolve, reject) => {
      this.waiting.push(key, {
        task,
        input,
        resolve: (v: unknown) => {
          settled();
          (resolve as (v: unknown) => void)(v);
        },
        reject: (e: unknown) => {
          settled();
          reject(e);
        },
      });
      this.dispatch();
    });
  }

  /** Counts `holder` among the key's callers; the refusal when there are too many (a holder admitted once stays admitted). */
  private hold(key: string, holder: object, what: string): ExecutorQueueFullException | null {
    const holders = this.holdingPerKey.get(key) ?? new Map<object, number>();
    const limit = this.options.maxHoldingPerKey ?? Number.MAX_SAFE_INTEGER;
    if (!this.admitted.has(holder) && holders.size >= limit) return new ExecutorQueueFullException(limit, what, this.retryAfterSeconds(key, holders));
    this.admitted.add(holder);
    if (!holders.has(holder)) this.heldSince.set(holder, this.now());
    holders.set(holder, (holders.get(holder) ?? 0) + 1);
    this.holdingPerKey.set(key, holders);
    return null;
  }

  private unhold(key: string, holder: object): void {
    const holders = this.holdingPerKey.get(key);
    if (!holders) return;
    const left = (holders.get(holder) ?? 1) - 1;
    if (left > 0) holders.set(holder, left);
    else {
      holders.delete(holder);
      const since = this.heldSince.get(holder);
      if (since !== undefined) {
        const ms = this.now() - since;
        const typical = this.typicalHoldMs.get(key);
        this.typicalHoldMs.set(key, typical === undefined ? ms : 0.75 * typical + 0.25 * ms);
      }
    }
    if (!holders.size) this.holdingPerKey.delete(key);
  }

  /**
   * Seconds until the key's first caller in progress is expected to finish (its start plus the key's typical time in
   * progress), at least 1 and at most MAX_ADMISSION_RETRY_AFTER_SECONDS. A flat "1" would send every refused client
   * back while a dry-run of thousands of clusters still runs, and all of them in the same instant: each refusal costs
   * the event loop a request, and such bursts are what other organisations' requests wait behind.
   */
  private retryAfterSeconds(key: string, holders: Map<object, number>): number {
    const typical = this.typicalHoldMs.get(key);
    if (typical === undefined) return 1;
    const now = this.now();
    let soonest = Infinity;
    for (const holder of holders.keys()) soonest = Math.min(soonest, (this.heldSince.get(holder) ?? now) + typical - now);
    return Math.min(MAX_ADMISSION_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil(soonest / 1000)));
  }

  /** Hands waiting tasks to free threads: round-robin across keys, each key within its share. */
  private dispatch(): void {
    while (!this.closed && this.running < this.options.threads) {
      const next = this.waiting.shift((key) => (this.runningPerKey.get(key) ?? 0) < this.perKey);
      if (!next) return;
      this.start(next.key, next.item);
    }
  }

  private start(key: string, job: Job): void {
    this.running++;
    this.runningPerKey.set(key, (this.runningPerKey.get(key) ?? 0) + 1);
    const { port1, port2 } = new MessageChannel();
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    port1.once('message', () => {
      port1.close();
      timer = setTimeout(() => {
        timedOut = true;
        abort.abort();
      }, this.options.taskTimeoutMs);
    });
    const message: WorkerTask = { task: job.task, input: job.input, started: port2 };
    this.workers()
      .run(message, { transferList: [port2], signal: abort.signal })
      .then(
        (v: unknown) => {
          this.count(job.task, 'ok');
          job.resolve(v);
        },
        (e: unknown) => {
          const failure = this.failure(job.task, e, timedOut);
          this.count(job.task, failure instanceof ExecutorTaskTooExpensiveException ? failure.reason : 'failed');
          job.reject(failure);
        },
      )
      .finally(() => {
        clearTimeout(timer);
        port1.close();
        this.running--;
        const left = (this.runningPerKey.get(key) ?? 1) - 1;
        if (left > 0) this.runningPerKey.set(key, left);
        else this.runningPerKey.delete(key);
        this.dispatch();
      });
  }

  private failure(task: string, e: unknown, timedOut: boolean): unknown {
    const what = this.options.describe?.(task) ?? task;
    if (timedOut) {
      return new ExecutorTaskTooExpensiveException(
        `The input is too expensive to process: ${what} took longer than ${this.options.taskTimeoutMs} ms and was stopped; simplify it.`,
      );
    }
    if ((e as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY') {
      return new ExecutorTaskTooExpensiveException(`The input is too expensive to process: ${what} needed more memory than a worker may use; simplify it.`, 'out_of_memory');
    }
    if (this.closed) return new HttpException('The service is shutting down; retry on another instance.', HttpStatus.SERVICE_UNAVAILABLE);
    this.logger.error(`Executor task ${task} failed: ${(e as Error).message}`);
    return e;
  }

  private count(task: string, outcome: ExecutorOutcome): void {
    const key = `${task} ${outcome}`;
    this.outcomes.set(key, (this.outcomes.get(key) ?? 0) + 1);
  }

  /**
   * Stops the threads. The HTTP server has drained by then (src/app.factory.ts closes it first), so no request
   * waits for a task; anything still waiting is answered 503.
   */
  async onApplicationShutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const job of this.waiting.drain()) job.reject(new HttpException('The service is shutting down; retry on another instance.', HttpStatus.SERVICE_UNAVAILABLE));
    await this.pool?.destroy().catch(() => undefined);
  }
}
