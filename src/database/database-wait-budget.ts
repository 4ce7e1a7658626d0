import { ClsServiceManager } from 'nestjs-cls';
import * as pg from 'pg';
import { databaseUnavailable } from '../common/database-unavailable';

/** Where a request's budget lives in its CLS store (set by the CLS middleware, database.module.ts). */
export const DATABASE_WAIT_BUDGET = Symbol('databaseWaitBudget');

/**
 * The time one request has spent waiting on the database: for a connection from the pool and for its
 * statements, counted as wall time while at least one such wait is under way (waits that overlap count once).
 * `DATABASE_TIMEOUT_MS` bounds the sum, so a request answers within that time however many waits it makes.
 */
export class DatabaseWaitBudget {
  private spentMs = 0;
  /**
   * @param limitMs the request's whole budget (DATABASE_TIMEOUT_MS), when the caller knows it
   * @param readRetryWaitMs how long a read may wait in all for a database that refuses connections before its retry
   *   (READ_RETRY_WAIT_MS, read-retry.ts); 0: it retries at once
   */
  constructor(
    readonly limitMs?: number,
    readonly readRetryWaitMs = 0,
  ) {}

  private active = 0;
  private since = 0;

  /** Milliseconds left of `limitMs`, counting waits under way up to now. */
  remainingMs(limitMs: number): number {
    const running = this.active > 0 ? performance.now() - this.since : 0;
    return limitMs - this.spentMs - running;
  }

  /** Starts a wait; the function returned ends it (call it exactly once). */
  begin(): () => void {
    if (this.active++ === 0) this.since = performance.now();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      if (--this.active === 0) this.spentMs += performance.now() - this.since;
    };
  }
}

/** The budget of the request being served, or undefined outside requests (background passes, migrations). */
export function currentWaitBudget(): DatabaseWaitBudget | undefined {
  let cls;
  try {
    cls = ClsServiceManager.getClsService();
  } catch {
    return undefined;
  }
  return cls?.isActive() ? (cls.get(DATABASE_WAIT_BUDGET) as DatabaseWaitBudget | undefined) : undefined;
}

/** The error of a request whose budget is used up; `ETIMEDOUT` maps it to 503 (src/common/errors.ts). */
export class DatabaseBudgetExceededError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(limitMs: number) {
    super(`Query read timeout: the request waited ${limitMs} ms (DATABASE_TIMEOUT_MS) on the database in all`);
  }
}

/** Errors of a pool's connect(): the connection could not be made (as opposed to one lost while it was used). */
const connectFailures = new WeakSet<object>();

/**
 * Whether `err` (or the driver error it wraps) came from opening a connection: refused, or reset or closed before the
 * server accepted the session, which is how an HA proxy answers while its backend is down.
 */
export function isConnectFailure(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    if (connectFailures.has(e)) return true;
    e = (e as { driverError?: unknown; cause?: unknown }).driverError ?? (e as { cause?: unknown }).cause;
  }
  return false;
}

/** Where a pool's options (which pg-pool hands to every client it makes) tell the client the pool's generation. */
const POOL_GENERATION = Symbol('poolGeneration');

type Callback = (...args: unknown[]) => void;
interface LooseClient {
  query(config: unknown, values?: unknown, callback?: unknown): unknown;
  connection?: { stream?: { destroy(): void } };
  connectionParameters: { query_timeout?: number | false };
  release?: (err?: Error | boolean) => void;
}
interface LoosePool {
  options: { connectionTimeoutMillis?: number; max?: number; Client?: unknown };
  connect(cb?: Callback): unknown;
  on(event: 'connect', listener: (client: BudgetedClient) => void): unknown;
}

const BaseClient = pg.Client as unknown as new (config?: unknown) => LooseClient;
const BasePool = pg.Pool as unknown as new (options?: unknown) => LoosePool;

/**
 * A pg client whose statements, inside a request, get the time left of the request's budget as their
 * client-side timeout. A statement cut off by it (or refused because nothing is left) leaves the connection in
 * an unknown state (a statement still running, maybe a transaction open), so the connection is destroyed and the
 * pool discards it instead of handing it to the next request. A statement that finds the database gone or
 * read-only (database-unavailable.ts) tells its pool, which then hands out no connection made before (below).
 */
class BudgetedClient extends BaseClient {
  /**
   * The pool's generation when this connection began to be made (not when it was ready: a connection whose opening
   * straddles a failure may be a session of the server that failed).
   */
  generation: number;
  /** Set by the pool: called when a statement found the database unavailable. */
  onUnavailable?: () => void;

  constructor(config?: unknown) {
    super(config);
    const current = (config as { [POOL_GENERATION]?: () => number } | undefined)?.[POOL_GENERATION];
    this.generation = current ? current() : 0;
  }

  override query(config: unknown, values?: unknown, callback?: unknown): unknown {
    const budget = currentWaitBudget();
    const limitMs = this.connectionParameters.query_timeout;
    const promiseStyle = callback === undefined && typeof values !== 'function';
    const submittable = !!config && typeof (config as { submit?: unknown }).submit === 'function';
    if (!promiseStyle || submittable || config == null) return super.query(config, values, callback);
    if (!budget || !limitMs) return (super.query(config, values) as Promise<unknown>).catch((err: unknown) => this.failed(err));
    const remaining = Math.floor(budget.remainingMs(limitMs));
    if (remaining <= 0) {
      this.discard();
      return Promise.reject(new DatabaseBudgetExceededError(limitMs));
    }
    const bounded = typeof config === 'string' ? { text: config, query_timeout: remaining } : { ...(config as object), query_timeout: remaining };
    const end = budget.begin();
    return (super.query(bounded, values) as Promise<unknown>).then(
      (result) => {
        end();
        return result;
      },
      (err: unknown) => {
        end();
        if ((err as Error)?.message === 'Query read timeout') {
          this.discard();
          throw new DatabaseBudgetExceededError(limitMs);
        }
        return this.failed(err);
      },
    );
  }

  private failed(err: unknown): never {
    const unavailable = databaseUnavailable(err);
    if (unavailable && unavailable.cause !== 'timeout') {
      this.onUnavailable?.();
      // A read-only server (a primary demoted or restarted read-only by a failover) keeps this session open:
      // close it, so the pool makes a new connection, which the HA layer routes to the new primary.
      if (unavailable.cause === 'read-only') this.discard();
    }
    throw err;
  }

  private discard(): void {
    // The client emits 'error' (connection terminated); its holder releases it with that error and the pool drops it.
    // Should the holder release it without the error, the pool still never hands it out again (`fresh()`).
    this.generation = -1;
    this.connection?.stream?.destroy();
  }
}

/**
 * A pg pool whose connection waits, inside a request, are bounded by the time left of the request's budget
 * instead of the full DATABASE_TIMEOUT_MS each. pg-pool reads `connectionTimeoutMillis` when `connect()` is
 * called (for the queue wait and for opening a new connection), so it is set to what is left for that call.
 *
 * After a failover or a restart every connection made before is dead or points at the wrong server, although
 * pg-pool finds that out only one statement at a time. So when a statement finds the database unavailable the
 * pool starts a new generation, and `connect()` closes the connections of earlier generations instead of handing
 * them out, those whose opening began before the failure and ended after it included: what comes after (the read
 * retry, the next request) runs on a connection begun after the failure.
 */
class BudgetedPool extends BasePool {
  private generation = 0;

  constructor(options: Record<string, unknown>) {
    super({ ...options, Client: BudgetedClient });
    // pg-pool makes each client with its options: the client reads the generation when it is made, so a connection
    // begun before a failure and ready after it counts as made before it (closed instead of handed out). Taken when it
    // was ready, such a session of a server shutting down (a switchover) or whose postmaster was killed could be
    // handed to the read retry, which then lost it at its first statement (57P01).
    (this.options as Record<symbol, unknown>)[POOL_GENERATION] = () => this.generation;
    this.on('connect', (client) => {
      client.onUnavailable = () => {
        if (client.generation === this.generation) this.generation++;
      };
      // A connection found lost outside a statement (the server's FATAL or a reset while idle in the pool, or held
      // between two statements of a request) says the same as a statement that finds it lost: the server went away.
      // Between two statements, what its holder sees next is TypeORM's QueryRunnerAlreadyReleasedError, which no
      // statement of this client reports; without this the read retry after it was handed an idle session of the
      // same dead server (a kill -9 of the postmaster), lost it at its first statement (57P01) and answered 503.
      (client as unknown as { on(event: 'error', listener: (err: unknown) => void): void }).on('error', (err) => {
        const unavailable = databaseUnavailable(err);
        if (unavailable && unavailable.cause !== 'timeout') client.onUnavailable?.();
      });
    });
  }

  /** Starts a new generation: connections made before are closed instead of being handed out. */
  renew(): void {
    this.generation++;
  }

  override connect(cb?: Callback): unknown {
    const fresh = this.fresh().catch((err: unknown) => {
      if (err && typeof err === 'object') connectFailures.add(err);
      throw err;
    });
    if (!cb) return fresh;
    fresh.then(
      (client) => cb(undefined, client, client.release),
      (err: unknown) => cb(err),
    );
    return undefined;
  }

  /** A connection of the current generation: older idle ones are closed on the way (at most the pool's size). */
  private async fresh(): Promise<BudgetedClient> {
    for (let stale = 0; ; stale++) {
      const client = await this.checkout();
      if (client.generation >= this.generation || stale > (this.options.max ?? 10)) return client;
      client.release?.(true);
    }
  }

  private checkout(): Promise<BudgetedClient> {
    const take = () => new Promise<BudgetedClient>((resolve, reject) => super.connect((err, client) => (err ? reject(err) : resolve(client as BudgetedClient))));
    const budget = currentWaitBudget();
    const limitMs = this.options.connectionTimeoutMillis;
    if (!budget || !limitMs) return take();
    const remaining = Math.floor(budget.remainingMs(limitMs));
    if (remaining <= 0) return Promise.reject(new DatabaseBudgetExceededError(limitMs));
    const end = budget.begin();
    this.options.connectionTimeoutMillis = remaining;
    try {
      const waiting = take();
      void waiting.then(end, end);
      return waiting;
    } finally {
      this.options.connectionTimeoutMillis = limitMs;
    }
  }
}

/** The pg module as TypeORM's `driver` option, with the budgeted pool (and through it the budgeted client). */
export const budgetedPg: typeof pg = Object.create(pg, { Pool: { value: BudgetedPool, enumerable: true } });
