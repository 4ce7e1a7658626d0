import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Inject, Injectable } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { countTransition, SCHEDULER_RULES, SchedulerRule, Transitions } from './scheduler-rule';
import { SchedulerSql } from './shared/scheduler-sql';
import { setImmediate } from 'timers/promises';

/** Key of the transaction-scoped advisory lock: one scheduler batch at a time across replicas. */
export const SCHEDULER_LOCK_KEY = 724_007;

const LOCKED = Symbol('locked');

export interface SchedulerRunResult {
  /**
   * True when another replica held the lock: this run stopped there (after the batches it had done) and left the
   * rest of the pass to that replica.
   */
  skipped: boolean;
  /** Transitions made, by target status (SCHEDULED counts upgrades created). */
  transitions: Transitions;
}

/**
 * Walks the scheduler's rules (scheduler.module.ts gives them in order) once: each rule in keyset batches (on the
 * row id) inside short transactions under a transaction-scoped advisory lock. A transaction handles at most
 * SCHEDULER_BATCH_SIZE rows and goes on with the next rules while that budget lasts, so a pass at rest is one
 * transaction; a rule with more rows than the budget continues in the next transaction from its cursor. A replica
 * that finds the lock taken stops its pass (the holder carries on).
 */
@Injectable()
export class SchedulerRunner {
  constructor(
    @Inject(SCHEDULER_RULES) private readonly rules: SchedulerRule[],
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly cls: ClsService,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly sql: SchedulerSql,
  ) {}

  private get batchSize(): number {
    return this.config.SCHEDULER_BATCH_SIZE ?? 200;
  }

  /** One pass over every rule, at the clock's time; once `signal` is aborted (shutdown) no further batch starts. */
  async pass(signal?: AbortSignal): Promise<SchedulerRunResult> {
    const result: SchedulerRunResult = { skipped: false, transitions: {} };
    const now = this.clock.now();
    const rules = this.rules;
    let i = 0;
    let after = '0';
    while (i < rules.length && !signal?.aborted) {
      const done = await this.batch(async () => {
        let budget = this.batchSize;
        while (i < rules.length && budget > 0) {
          const { next, rows, transitions } = await rules[i].batch(now, after, budget);
          for (const [status, n] of Object.entries(transitions) as [keyof Transitions, number][]) countTransition(result.transitions, status, n);
          budget -= rows;
          if (next !== null) {
            after = next;
            return;
          }
          i++;
          after = '0';
        }
      });
      if (done === LOCKED) return { ...result, skipped: true };
      // Between batches, the event loop serves what is queued (requests) first.
      await setImmediate();
    }
    return result;
  }

  /** One batch: its own transaction, under the advisory lock (LOCKED when another replica holds it). */
  private batch(fn: () => Promise<void>): Promise<void | typeof LOCKED> {
    return this.cls.run(() =>
      this.txHost.withTransaction(async () => {
        const [{ locked }] = await this.sql.q<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [SCHEDULER_LOCK_KEY]);
        if (!locked) return LOCKED;
        return fn();
      }),
    );
  }
}
