import { INestApplication, Logger, RequestMethod, Type } from '@nestjs/common';
import { METHOD_METADATA } from '@nestjs/common/constants';
import { MetadataScanner, ModulesContainer } from '@nestjs/core';
import { TransactionHost } from '@nestjs-cls/transactional';
import { databaseUnavailable } from '../common/database-unavailable';
import { currentWaitBudget, DatabaseWaitBudget, isConnectFailure } from './database-wait-budget';

const logger = new Logger('Database');
const RETRIED = Symbol('readRetried');

/** Whether a read that failed with `err` is run once more: its connection was lost or refused, not too slow. */
export function isRetryableRead(err: unknown): boolean {
  const found = databaseUnavailable(err);
  return found !== null && (found.cause === 'connection-lost' || found.cause === 'connection-refused');
}

/** Whether the caller runs inside a transaction of the request's TransactionHost (the audit interceptor's, @Transactional). */
function inTransaction(): boolean {
  try {
    return TransactionHost.getInstance().isTransactionActive();
  } catch {
    // No transactional plugin registered (a unit test, a script): nothing can have opened a transaction through it.
    return false;
  }
}

/**
 * Whether `err` says the database does not accept connections yet (refused, 57P03 starting up or shutting down, too
 * many connections) or a connection could not be opened (reset or closed during connect): during a failover, what a
 * fresh connection meets while the HA proxy still routes new connections to the old primary. Worth waiting for,
 * unlike a connection lost while it was used, which a fresh connection made at once replaces.
 */
export function isNotAcceptingConnections(err: unknown): boolean {
  const found = databaseUnavailable(err);
  return found !== null && (found.cause === 'connection-refused' || (found.cause === 'connection-lost' && isConnectFailure(err)));
}

/** The pauses before each further attempt while the database refuses connections; the last repeats. */
export const READ_RETRY_PAUSES_MS = [100, 250, 500, 1000];

/** What a pause leaves at least of the request's budget for the attempt after it (at most a fifth of the budget). */
const ATTEMPT_RESERVE_MS = 500;

/**
 * Runs `read` and, when its connection was lost or refused (a failover killed the pooled connections, the HA proxy
 * switched servers), runs it once more. The pool hands out no connection made before the failure
 * (database-wait-budget.ts), so the second run is on a fresh connection; it spends what is left of the same
 * request budget (DATABASE_TIMEOUT_MS), and none is left after a timeout, which is therefore not retried.
 *
 * When the failure, or that of an attempt after it, is a database not accepting connections yet
 * (isNotAcceptingConnections), it pauses before the next attempt (100 ms, 250 ms, 500 ms, then 1 s each) while the
 * pauses together stay within READ_RETRY_WAIT_MS and leave some of the budget for the attempt; the pauses count in the
 * budget, so the request still answers within DATABASE_TIMEOUT_MS. A connection lost while it was used is retried
 * once, at once, as before: what meets it again is not a failover in progress. With READ_RETRY_WAIT_MS=0 (and outside
 * requests) there is one retry, at once.
 *
 * `read` must change nothing, or nothing more when run twice (the last-use stamp of a token is set only when older
 * than a minute). Inside a transaction it is not run again: the transaction died with its connection, and a second
 * run would see none of what the transaction did before (or fail on its released query runner).
 * Used by every GET handler (retryReadsOnce below) and by the reads made before the handler on every request
 * (authentication, organisation access, the Idempotency-Key lookup, the /compat written forms).
 */
export async function retryReadOnce<T>(read: () => Promise<T>, what: string): Promise<T> {
  if (inTransaction()) return read();
  try {
    return await read();
  } catch (err) {
    if (!isRetryableRead(err)) throw err;
    const budget = currentWaitBudget();
    let last: unknown = err;
    let waitedMs = 0;
    let pauses = 0;
    for (let attempt = 1; ; attempt++) {
      const refused = isNotAcceptingConnections(last);
      // Past the first retry, only a database that refuses connections is tried again, and only after a pause.
      const pauseMs = refused ? pauseBefore(pauses, waitedMs, budget) : 0;
      if (attempt > 1 && pauseMs <= 0) throw last;
      logger.debug(
        { err: last, read: what, attempt, pauseMs },
        refused ? 'A read found the database refusing connections; running it again on a fresh connection' : 'A read lost its database connection; running it once more on a fresh one',
      );
      if (pauseMs > 0) {
        await pause(pauseMs, budget);
        waitedMs += pauseMs;
        pauses++;
      }
      try {
        return await read();
      } catch (e) {
        if (!isRetryableRead(e)) throw e;
        last = e;
      }
    }
  }
}

/** The pause after `pauses` pauses of `waitedMs` in all, 0 when none may be made. */
function pauseBefore(pauses: number, waitedMs: number, budget: DatabaseWaitBudget | undefined): number {
  const allowedMs = budget?.readRetryWaitMs ?? 0;
  if (!budget || allowedMs <= 0) return 0;
  let pauseMs = Math.min(READ_RETRY_PAUSES_MS[Math.min(pauses, READ_RETRY_PAUSES_MS.length - 1)], allowedMs - waitedMs);
  if (budget.limitMs !== undefined) {
    const reserveMs = Math.min(ATTEMPT_RESERVE_MS, budget.limitMs / 5);
    pauseMs = Math.min(pauseMs, budget.remainingMs(budget.limitMs) - reserveMs);
  }
  return Math.max(0, Math.floor(pauseMs));
}

/** Waits `ms`, counted in the request's budget as a database wait. */
async function pause(ms: number, budget: DatabaseWaitBudget | undefined): Promise<void> {
  const end = budget?.begin();
  try {
    await new Promise((resolve) => setTimeout(resolve, ms));
  } finally {
    end?.();
  }
}

/**
 * Every GET handler (HEAD is served by them) runs through `retryReadOnce`: a read changes nothing, and a handler
 * that has not returned has sent no byte of its answer, so running it again is invisible to the caller. Writes
 * never are: whether their change committed cannot be known (an Idempotency-Key makes their retry safe).
 *
 * The handler itself is wrapped (its metadata copied to the wrapper) rather than given an interceptor, so that
 * reads keep running no interceptor at all (docs/adr/0088-lean-request-pipeline.md). Call it after
 * NestFactory.create() and before app.init(), when the router reads the handlers.
 */
export function retryReadsOnce(app: INestApplication): number {
  const scanner = new MetadataScanner();
  let wrapped = 0;
  for (const mod of app.get(ModulesContainer).values()) {
    for (const wrapper of mod.controllers.values()) {
      const controller = wrapper.metatype as Type<unknown> | undefined;
      const proto = controller?.prototype as Record<string, unknown> | undefined;
      if (!proto) continue;
      for (const name of scanner.getAllMethodNames(proto)) {
        const handler = proto[name] as ((...args: unknown[]) => unknown) & { [RETRIED]?: true };
        if (typeof handler !== 'function' || handler[RETRIED]) continue;
        if ((Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined) !== RequestMethod.GET) continue;
        const what = `${controller!.name}.${name}`;
        const retrying = function (this: unknown, ...args: unknown[]): Promise<unknown> {
          return retryReadOnce(async () => handler.apply(this, args), what);
        };
        for (const key of Reflect.getOwnMetadataKeys(handler)) Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, handler), retrying);
        Object.defineProperty(retrying, 'name', { value: handler.name });
        (retrying as { [RETRIED]?: true })[RETRIED] = true;
        // Defined on the class that declares the method, as the decorators did.
        let owner: object | null = proto;
        while (owner && !Object.prototype.hasOwnProperty.call(owner, name)) owner = Object.getPrototypeOf(owner);
        Object.defineProperty(owner ?? proto, name, { value: retrying, writable: true, configurable: true, enumerable: false });
        wrapped++;
      }
    }
  }
  return wrapped;
}
