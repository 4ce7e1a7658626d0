import { ClsServiceManager } from 'nestjs-cls';
import * as pg from 'pg';

/** Where a request's budget lives in its CLS store (set by the CLS middleware, database.module.ts). */
export const DATABASE_WAIT_BUDGET = Symbol('databaseWaitBudget');

/**
 * The time one request has spent waiting on the database: for a connection from the pool and for its
 * statements, counted as wall time while at least one such wait is under way (waits that overlap count once).
 * `DATABASE_TIMEOUT_MS` bounds the sum, so a request answers within that time however many waits it makes.
 */
export class DatabaseWaitBudget {
  private spentMs = 0;
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

type Callback = (...args: unknown[]) => void;
interface LooseClient {
  query(config: unknown, values?: unknown, callback?: unknown): unknown;
  connection?: { stream?: { destroy(): void } };
  connectionParameters: { query_timeout?: number | false };
}
interface LoosePool {
  options: { connectionTimeoutMillis?: number; Client?: unknown };
  connect(cb?: Callback): unknown;
}

const BaseClient = pg.Client as unknown as new (config?: unknown) => LooseClient;
const BasePool = pg.Pool as unknown as new (options?: unknown) => LoosePool;

/**
 * A pg client whose statements, inside a request, get the time left of the request's budget as their
 * client-side timeout. A statement cut off by it (or refused because nothing is left) leaves the connection in
 * an unknown state (a statement still running, maybe a transaction open), so the connection is destroyed and the
 * pool discards it instead of handing it to the next request.
 */
class BudgetedClient extends BaseClient {
  override query(config: unknown, values?: unknown, callback?: unknown): unknown {
    const budget = currentWaitBudget();
    const limitMs = this.connectionParameters.query_timeout;
    const promiseStyle = callback === undefined && typeof values !== 'function';
    const submittable = !!config && typeof (config as { submit?: unknown }).submit === 'function';
    if (!budget || !limitMs || !promiseStyle || submittable || config == null) return super.query(config, values, callback);
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
        throw err;
      },
    );
  }

  private discard(): void {
    // The client emits 'error' (connection terminated); its holder releases it with that error and the pool drops it.
    this.connection?.stream?.destroy();
  }
}

/**
 * A pg pool whose connection waits, inside a request, are bounded by the time left of the request's budget
 * instead of the full DATABASE_TIMEOUT_MS each. pg-pool reads `connectionTimeoutMillis` when `connect()` is
 * called (for the queue wait and for opening a new connection), so it is set to what is left for that call.
 */
class BudgetedPool extends BasePool {
  constructor(options: Record<string, unknown>) {
    super({ ...options, Client: BudgetedClient });
  }

  override connect(cb?: Callback): unknown {
    const budget = currentWaitBudget();
    const limitMs = this.options.connectionTimeoutMillis;
    if (!budget || !limitMs) return super.connect(cb);
    const remaining = Math.floor(budget.remainingMs(limitMs));
    const end = budget.begin();
    const done: Callback = (...args) => {
      end();
      if (cb) cb(...args);
    };
    if (remaining <= 0) {
      end();
      const err = new DatabaseBudgetExceededError(limitMs);
      if (cb) return cb(err);
      return Promise.reject(err);
    }
    this.options.connectionTimeoutMillis = remaining;
    try {
      if (cb) return super.connect(done);
      return new Promise((resolve, reject) => super.connect((err, client) => (done(), err ? reject(err) : resolve(client))));
    } finally {
      this.options.connectionTimeoutMillis = limitMs;
    }
  }
}

/** The pg module as TypeORM's `driver` option, with the budgeted pool (and through it the budgeted client). */
export const budgetedPg: typeof pg = Object.create(pg, { Pool: { value: BudgetedPool, enumerable: true } });
