import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger } from '@nestjs/common';
import type { UpgradeRow } from '../../upgrades/upgrade-rows';

/** Log context of every line the scheduler writes (runner, rules and helpers alike). */
export const SCHEDULER_LOG_CONTEXT = 'UpgradeScheduler';

/**
 * The statements of the scheduler's rules, run in the transaction of the runner's batch. Every rule's SQL goes
 * through `q` (bench/scheduler.ts wraps it to EXPLAIN each SELECT of a pass).
 */
@Injectable()
export class SchedulerSql {
  private readonly logger = new Logger(SCHEDULER_LOG_CONTEXT);

  constructor(readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  q<T = unknown>(sql: string, params: unknown[] = []): Promise<T[]> {
    return this.txHost.tx.query(sql, params);
  }

  /** An UPDATE (or DELETE), answering how many rows it changed. */
  async changed(sql: string, params: unknown[]): Promise<number> {
    const [, changed] = (await this.txHost.tx.query(sql, params)) as [unknown, number];
    return changed;
  }

  /** An UPDATE of one upgrade row that must change it (else the step is undone: another run got there first). */
  async guardedUpdate(sql: string, params: unknown[], row: UpgradeRow): Promise<void> {
    if (!(await this.changed(sql, params))) throw new Error(`upgrade ${row.identity} changed meanwhile`);
  }

  /**
   * Runs `fn` in a savepoint, so one bad row cannot block the others: its failure is logged and undone without
   * aborting the batch. Answers what `fn` answered, or undefined when it was undone.
   */
  async savepoint<T>(fn: () => Promise<T>): Promise<T | undefined> {
    await this.q('SAVEPOINT upgrade_step');
    try {
      const result = await fn();
      await this.q('RELEASE SAVEPOINT upgrade_step');
      return result;
    } catch (err) {
      await this.q('ROLLBACK TO SAVEPOINT upgrade_step');
      this.logger.warn({ err }, 'Scheduled upgrade step skipped');
      return undefined;
    }
  }
}
