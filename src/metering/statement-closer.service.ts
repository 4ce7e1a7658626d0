import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { InjectBackgroundDataSource } from '../database/background-pool';
import { BackgroundJob } from '../jobs/background-job';
import { BackgroundJobs } from '../jobs/background-jobs.service';
import type { JobLoop } from '../jobs/job-loop';
import { closePeriod, CORRECTION_MONTHS, correctPeriod, Period, periodAt, periodOf, STATEMENT_CLOSE_GRACE_MS } from './statements.service';

export const STATEMENT_CLOSER_INTERVAL_MS = 3600_000;

export interface CloserResult {
  closed: number;
  corrections: number;
}

/**
 * Closes every period that is over (STATEMENT_CLOSE_GRACE_MS after its end) for every organisation with usage, and
 * appends correction lines to the last CORRECTION_MONTHS closed periods when their usage changed since. One
 * transaction per organisation and period, under an advisory lock per organisation, so replicas running it at the
 * same time close a period once and correct it once.
 */
@Injectable()
export class StatementCloser implements BackgroundJob<CloserResult> {
  private readonly logger = new Logger('Metering');
  private readonly loop: JobLoop<CloserResult>;

  constructor(
    @InjectBackgroundDataSource() private readonly dataSource: DataSource,
    private readonly clock: Clock,
    jobs: BackgroundJobs,
  ) {
    this.loop = jobs.register(this, { name: 'statements', logContext: 'Metering', everyMs: STATEMENT_CLOSER_INTERVAL_MS, firstRun: { afterMs: 60_000, jitter: 1 } });
  }

  /** One pass now (tests and the demo seed). */
  runOnce(): Promise<CloserResult> {
    return this.loop.runPass();
  }

  async pass(): Promise<CloserResult> {
    const now = this.clock.now();
    const result: CloserResult = { closed: 0, corrections: 0 };
    const orgs: { organisation_id: string; first: Date }[] = await this.dataSource.query(
      `SELECT u.organisation_id, min(u.started_at) AS first FROM usage_intervals u JOIN organisations o ON o.id = u.organisation_id
        GROUP BY u.organisation_id ORDER BY u.organisation_id`,
    );
    for (const org of orgs) {
      const due: Period[] = [];
      for (let p = periodAt(org.first); p.end.getTime() + STATEMENT_CLOSE_GRACE_MS <= now.getTime(); p = periodAt(p.end)) due.push(p);
      if (!due.length) continue;
      await this.dataSource.transaction(async (m) => {
        const q = (sql: string, params: unknown[]) => m.query(sql, params);
        await m.query(`SELECT pg_advisory_xact_lock(hashtext('metering-statements'), $1::int)`, [Number(org.organisation_id)]);
        const closed = new Set<string>(
          (await m.query(`SELECT period FROM statement_periods WHERE organisation_id = $1`, [org.organisation_id])).map((r: { period: string }) => r.period),
        );
        for (const p of due) {
          if (closed.has(p.id)) continue;
          await closePeriod(q, Number(org.organisation_id), p, now);
          result.closed++;
        }
        for (const p of due.slice(-CORRECTION_MONTHS)) {
          if (!closed.has(p.id)) continue;
          result.corrections += await correctPeriod(q, Number(org.organisation_id), periodOf(p.id)!, now);
        }
      });
    }
    if (result.closed || result.corrections) this.logger.log(result, `Closed ${result.closed} statement periods, ${result.corrections} correction lines`);
    return result;
  }
}
