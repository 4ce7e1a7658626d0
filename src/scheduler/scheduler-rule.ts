import type { ScheduledUpgradeStatus } from '../upgrades/scheduled-cluster-upgrade.entity';

/** Transitions made, by target status (SCHEDULED counts upgrades created). */
export type Transitions = Partial<Record<ScheduledUpgradeStatus, number>>;

/** What a rule did in one batch. */
export interface RuleBatch {
  /** The keyset cursor to go on from: the last row id when the batch was full (there may be more), else null. */
  next: string | null;
  /** Rows the batch read: what it spent of the transaction's row budget. */
  rows: number;
  transitions: Transitions;
}

/**
 * One rule of the upgrade scheduler (a file under `rules/`). The runner calls `batch` inside its transaction,
 * under the advisory lock: the rule reads at most `limit` rows with an id after `after` (keyset order), makes its
 * changes (each in a savepoint, see SchedulerSql) and answers what it did. A rule keeps no state between calls.
 */
export interface SchedulerRule {
  batch(now: Date, after: string, limit: number): Promise<RuleBatch>;
}

/** Injection token of the rules, in the order a pass runs them (scheduler.module.ts). */
export const SCHEDULER_RULES = Symbol('SCHEDULER_RULES');

/** The RuleBatch of `rows` read with `limit`: the last id when the batch was full (there may be more). */
export function ruleBatch(rows: { id: number | string }[], limit: number, transitions: Transitions = {}): RuleBatch {
  return { next: rows.length === limit ? String(rows[rows.length - 1].id) : null, rows: rows.length, transitions };
}

/** Counts one transition to `status` in `into`. */
export function countTransition(into: Transitions, status: ScheduledUpgradeStatus, n = 1): void {
  into[status] = (into[status] ?? 0) + n;
}
