import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable, Logger, NotFoundException } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { auditDiff } from '../audit/audit-diff';
import { AuditRecorder } from '../audit/audit-recorder';
import { AuditService } from '../audit/audit.service';
import { Clock } from '../common/clock';
import { ValidationFailedException } from '../common/errors';
import { Page, PageQueryDto, orderBySql, toPage, toPageRequest } from '../common/paging';
import { newIdentity } from '../common/pinned-identities';
import { isUuid } from '../common/uuid';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { SYSTEM_ACTOR } from '../identity/principal';
import { BackgroundJob } from '../jobs/background-job';
import { BackgroundJobs } from '../jobs/background-jobs.service';
import type { JobLoop } from '../jobs/job-loop';
import { BudgetResponse, BudgetThreshold, CreateBudgetRequest, DEFAULT_THRESHOLDS, UpdateBudgetRequest } from './dto/budget.dto';
import { Period, periodAt } from './statements.service';
import { linesSql } from './usage-sql';

export const BUDGET_SORTABLE = ['name', 'createdAt'] as const;
const SORT_SQL: Record<(typeof BUDGET_SORTABLE)[number], string> = { name: 'b.name', createdAt: 'b.created_at' };
export const BUDGET_EVALUATION_INTERVAL_MS = 900_000;

const SELECT = `SELECT b.id, b.identity, b.organisation_id, o.slug AS organisation_slug, b.environment_id, e.slug AS environment_slug, b.name,
  b.amount::text AS amount, b.currency, b.thresholds, b.created_at, b.modified_at
  FROM budgets b JOIN organisations o ON o.id = b.organisation_id LEFT JOIN environments e ON e.id = b.environment_id`;

interface Row {
  id: string;
  identity: string;
  organisation_id: string;
  organisation_slug: string;
  environment_id: string | null;
  environment_slug: string | null;
  name: string;
  amount: string;
  currency: string;
  thresholds: BudgetThreshold[];
  created_at: Date;
  modified_at: Date;
}

type Sql = (sql: string, params?: unknown[]) => Promise<any>;

/** Actual billed cost of the period so far and its linear forecast (exact in SQL, rounded to cents). */
async function costs(q: Sql, orgId: number, envId: number | null, period: Period, now: Date): Promise<{ actual: string; forecast: string }> {
  const asOf = new Date(Math.min(now.getTime(), period.end.getTime()));
  const elapsed = Math.max(0, Math.round((asOf.getTime() - period.start.getTime()) / 1000));
  const length = Math.round((period.end.getTime() - period.start.getTime()) / 1000);
  const [row] = await q(
    `SELECT COALESCE(sum(l.billed_cost), 0)::numeric(20,2)::text AS actual,
            (CASE WHEN $8::bigint > 0 THEN round(COALESCE(sum(l.billed_cost), 0) * $7::bigint / $8::bigint, 2)
                  ELSE COALESCE(sum(l.billed_cost), 0) END)::numeric(20,2)::text AS forecast
       FROM (${linesSql('organisation')}) l WHERE ($6::bigint IS NULL OR l.environment_id = $6::bigint)`,
    [orgId, period.start, period.end, asOf, null, envId, length, elapsed],
  );
  return row;
}

/**
 * Monthly budgets per organisation or environment (docs/metering.md). The evaluator compares the actual and forecast
 * billed cost of the current month with each threshold; a crossing is recorded once per period (budget_alerts) and
 * written as BUDGET_THRESHOLD_CROSSED: an audit row, an activity entry and a webhook event.
 */
@Injectable()
export class BudgetsService implements BackgroundJob<number> {
  private readonly logger = new Logger('Metering');
  private readonly loop: JobLoop<number>;

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly recorder: AuditRecorder,
    private readonly audit: AuditService,
    private readonly cls: ClsService,
    jobs: BackgroundJobs,
  ) {
    this.loop = jobs.register(this, { name: 'budgets', logContext: 'Metering', everyMs: BUDGET_EVALUATION_INTERVAL_MS, firstRun: { afterMs: 90_000, jitter: 1 } });
  }

  private get q(): Sql {
    return (sql, params) => this.txHost.tx.query(sql, params);
  }

  async list(org: OrganisationEntity, query: PageQueryDto): Promise<Page<BudgetResponse>> {
    const req = toPageRequest(query, SORT_SQL, [{ property: 'name', direction: 'ASC', ignoreCase: false }]);
    const rows: Row[] = await this.q(`${SELECT} WHERE b.organisation_id = $1 ORDER BY ${orderBySql(req, SORT_SQL, 'b.id')} LIMIT ${req.size} OFFSET ${req.offset}`, [
      org.id,
    ]);
    const [{ n }] = await this.q(`SELECT count(*)::int AS n FROM budgets WHERE organisation_id = $1`, [org.id]);
    const now = this.clock.now();
    const out: BudgetResponse[] = [];
    for (const r of rows) out.push(await this.view(r, now));
    return toPage(out, n, req, 'A');
  }

  async get(org: OrganisationEntity, identity: string): Promise<BudgetResponse> {
    return this.view(await this.find(org, identity), this.clock.now());
  }

  async create(org: OrganisationEntity, req: CreateBudgetRequest): Promise<BudgetResponse> {
    let envId: number | null = null;
    if (req.environmentSlug !== undefined) {
      const [env] = await this.q(`SELECT id FROM environments WHERE organisation_id = $1 AND slug = $2`, [org.id, req.environmentSlug]);
      if (!env) throw ValidationFailedException.forField('environmentSlug', `environment '${req.environmentSlug}' does not exist in organisation '${org.slug}'`);
      envId = Number(env.id);
    }
    await this.checkCurrency(req.currency);
    const thresholds = this.thresholds(req.thresholds ?? DEFAULT_THRESHOLDS);
    const [taken] = await this.q(`SELECT 1 FROM budgets WHERE organisation_id = $1 AND name = $2`, [org.id, req.name]);
    if (taken) throw new ConflictException(`Organisation '${org.slug}' has a budget named '${req.name}' already.`);
    const now = this.clock.now();
    const [{ identity }] = await this.q(
      `INSERT INTO budgets (organisation_id, environment_id, name, amount, currency, thresholds, created_at, modified_at, identity)
       VALUES ($1, $2, $3, $4::numeric, $5, $6::jsonb, $7, $7, $8) RETURNING identity`,
      [org.id, envId, req.name, req.amount, req.currency, JSON.stringify(thresholds), now, newIdentity('budgets')],
    );
    const row = await this.find(org, identity);
    this.recorder.record({
      type: 'BUDGET_CREATED',
      organisation: { id: Number(org.id), slug: org.slug },
      referencedEntityIdentity: identity,
      subject: row.name,
      details: auditDiff(null, this.audited(row)),
    });
    return this.view(row, now);
  }

  async update(org: OrganisationEntity, identity: string, req: UpdateBudgetRequest): Promise<BudgetResponse> {
    const row = await this.find(org, identity, true);
    const before = this.audited(row);
    const after = {
      ...before,
      name: req.name ?? row.name,
      amount: req.amount !== undefined ? (await this.q(`SELECT $1::numeric(20,2)::text AS a`, [req.amount]))[0].a : row.amount,
      thresholds: req.thresholds ? this.thresholds(req.thresholds) : row.thresholds,
    };
    const details = auditDiff(before, after);
    const now = this.clock.now();
    if (!Object.keys(details).length) return this.view(row, now);
    if (after.name !== row.name) {
      const [taken] = await this.q(`SELECT 1 FROM budgets WHERE organisation_id = $1 AND name = $2`, [org.id, after.name]);
      if (taken) throw new ConflictException(`Organisation '${org.slug}' has a budget named '${after.name}' already.`);
    }
    await this.q(
      `UPDATE budgets SET name = $2, amount = $3::numeric, thresholds = $4::jsonb, modified_at = $5, version = version + 1 WHERE id = $1`,
      [row.id, after.name, after.amount, JSON.stringify(after.thresholds), now],
    );
    const updated = await this.find(org, identity);
    this.recorder.record({ type: 'BUDGET_UPDATED', organisation: { id: Number(org.id), slug: org.slug }, referencedEntityIdentity: identity, subject: updated.name, details });
    return this.view(updated, now);
  }

  async remove(org: OrganisationEntity, identity: string): Promise<void> {
    const row = await this.find(org, identity, true);
    await this.q(`DELETE FROM budgets WHERE id = $1`, [row.id]);
    this.recorder.record({
      type: 'BUDGET_DELETED',
      organisation: { id: Number(org.id), slug: org.slug },
      referencedEntityIdentity: identity,
      subject: row.name,
      details: auditDiff(this.audited(row), null),
    });
  }

  /** One evaluation pass now (tests and the demo seed). */
  evaluateNow(): Promise<number> {
    return this.loop.runPass();
  }

  /** Evaluates every budget, each in its own transaction; returns the thresholds newly crossed. */
  async pass(): Promise<number> {
    const ids: { id: string }[] = await this.cls.run(() => this.txHost.withTransaction(() => this.q(`SELECT id FROM budgets ORDER BY id`)));
    let crossed = 0;
    for (const { id } of ids) {
      crossed += await this.cls.run(() => this.txHost.withTransaction(() => this.evaluate(Number(id))));
    }
    if (crossed) this.logger.log({ crossed }, `${crossed} budget thresholds crossed`);
    return crossed;
  }

  private async evaluate(id: number): Promise<number> {
    const [row]: Row[] = await this.q(`${SELECT} WHERE b.id = $1 FOR UPDATE OF b`, [id]);
    if (!row) return 0;
    const now = this.clock.now();
    const period = periodAt(now);
    const { actual, forecast } = await costs(this.q, Number(row.organisation_id), row.environment_id === null ? null : Number(row.environment_id), period, now);
    let crossed = 0;
    for (const t of row.thresholds) {
      const cost = t.basis === 'ACTUAL' ? actual : forecast;
      const [hit] = await this.q(
        `INSERT INTO budget_alerts (budget_id, period, basis, percent, cost, crossed_at)
         SELECT $1::bigint, $2::text, $3::text, $4::integer, $5::numeric, $6::timestamptz WHERE $5::numeric >= $7::numeric * $4::integer / 100
         ON CONFLICT DO NOTHING RETURNING percent`,
        [row.id, period.id, t.basis, t.percent, cost, now, row.amount],
      );
      if (!hit) continue;
      crossed++;
      const scope = row.environment_slug ? `environment ${row.environment_slug}` : `organisation ${row.organisation_slug}`;
      await this.audit.write(
        {
          type: 'BUDGET_THRESHOLD_CROSSED',
          organisation: { id: Number(row.organisation_id), slug: row.organisation_slug },
          environment: row.environment_id ? { id: Number(row.environment_id), slug: row.environment_slug! } : null,
          referencedEntityIdentity: row.identity,
          subject: row.name,
          details: {
            period: { old: null, new: period.id },
            basis: { old: null, new: t.basis },
            percent: { old: null, new: t.percent },
            cost: { old: null, new: cost },
            amount: { old: null, new: row.amount },
            currency: { old: null, new: row.currency },
          },
          message: `budget ${row.name} of ${scope} crossed ${t.percent} % of ${row.amount} ${row.currency} (${t.basis.toLowerCase()} cost ${cost} ${row.currency}) in ${period.id}`,
        },
        SYSTEM_ACTOR,
      );
    }
    return crossed;
  }

  private async find(org: OrganisationEntity, identity: string, lock = false): Promise<Row> {
    if (!isUuid(identity)) throw new NotFoundException(`There is no budget ${identity} in organisation '${org.slug}'.`);
    const [row] = await this.q(`${SELECT} WHERE b.organisation_id = $1 AND b.identity = $2${lock ? ' FOR UPDATE OF b' : ''}`, [org.id, identity]);
    if (!row) throw new NotFoundException(`There is no budget ${identity} in organisation '${org.slug}'.`);
    return row;
  }

  private async checkCurrency(currency: string): Promise<void> {
    const [{ book }] = await this.q(`SELECT min(currency) AS book FROM price_book_entries`);
    if (book && book !== currency) {
      throw ValidationFailedException.forField('currency', `currency must be ${book}, the price book's currency`);
    }
  }

  private thresholds(list: BudgetThreshold[]): BudgetThreshold[] {
    const seen = new Set<string>();
    const out = list.map((t) => ({ percent: t.percent, basis: t.basis }));
    for (const [i, t] of out.entries()) {
      const key = `${t.basis}:${t.percent}`;
      if (seen.has(key)) throw ValidationFailedException.forField(`thresholds.${i}`, `threshold ${t.percent} % of ${t.basis} is listed twice`);
      seen.add(key);
    }
    return out.sort((a, b) => (a.basis === b.basis ? a.percent - b.percent : a.basis < b.basis ? -1 : 1));
  }

  private audited(r: Row) {
    return { name: r.name, environmentSlug: r.environment_slug, amount: r.amount, currency: r.currency, thresholds: r.thresholds };
  }

  private async view(r: Row, now: Date): Promise<BudgetResponse> {
    const period = periodAt(now);
    const { actual, forecast } = await costs(this.q, Number(r.organisation_id), r.environment_id === null ? null : Number(r.environment_id), period, now);
    const alerts = await this.q(
      `SELECT basis, percent, cost::text AS cost, crossed_at FROM budget_alerts WHERE budget_id = $1 AND period = $2 ORDER BY crossed_at, basis, percent`,
      [r.id, period.id],
    );
    return {
      identity: r.identity,
      name: r.name,
      environmentSlug: r.environment_slug,
      amount: r.amount,
      currency: r.currency,
      thresholds: r.thresholds,
      period: period.id,
      actualCost: actual,
      forecastCost: forecast,
      crossed: alerts.map((a: Record<string, any>) => ({ percent: a.percent, basis: a.basis, cost: a.cost, crossedAt: a.crossed_at.toISOString() })),
      createdAt: r.created_at.toISOString(),
      modifiedAt: r.modified_at.toISOString(),
    };
  }
}
