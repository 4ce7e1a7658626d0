import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, NotFoundException } from '@nestjs/common';
import { Clock } from '../common/clock';
import { MAX_PAGE_SIZE, Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { StatementLine, StatementResponse, StatementSummary } from './dto/usage.dto';
import { linesSql } from './usage-sql';

/** Periods close this long after they end, so a change committed just after midnight still lands in its period. */
export const STATEMENT_CLOSE_GRACE_MS = 3600_000;
/** Closed periods checked for corrections, counted back from the last closed one. */
export const CORRECTION_MONTHS = 3;
export const PERIOD_PATTERN = /^([0-9]{4})-(0[1-9]|1[0-2])$/;

export interface Period {
  id: string;
  start: Date;
  end: Date;
}

export function periodOf(id: string): Period | null {
  const m = PERIOD_PATTERN.exec(id);
  if (!m) return null;
  const y = Number(m[1]);
  const mo = Number(m[2]) - 1;
  return { id, start: new Date(Date.UTC(y, mo, 1)), end: new Date(Date.UTC(y, mo + 1, 1)) };
}

export function periodAt(at: Date): Period {
  return periodOf(`${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, '0')}`)!;
}

/** The stable key of a line: resource, SKU and price (corrections are matched to their line by it). */
export const LINE_KEY_SQL = `concat_ws('/', l.cluster_identity::text, l.kind, COALESCE(l.node_pool_identity::text, '-'), l.cloud_provider, l.region,
  COALESCE(l.node_type, CASE WHEN l.highly_available THEN 'ha' ELSE 'standard' END), COALESCE(l.price_identity::text, 'unpriced'))`;

const LINE_COLUMNS = `kind, environment_id, environment_slug, cluster_id, cluster_identity, cluster_slug, cluster_name, node_pool_identity,
  node_pool_name, cloud_provider, region, node_type, highly_available, price_identity, currency, unit_price, list_unit_price,
  charge_period_start, charge_period_end, quantity, billed_cost, list_cost`;

/** Line rows as the API and the export read them (closed lines from the table, open ones from the ledger). */
export const STORED_LINES_SQL = `SELECT l.id, l.organisation_id, l.period, l.charge_class, l.recorded_at, l.kind, l.environment_slug, l.cluster_identity,
  l.cluster_slug, l.cluster_name, l.node_pool_identity, l.node_pool_name, l.cloud_provider, l.region, l.node_type, l.highly_available,
  l.price_identity, l.currency, trim_scale(l.unit_price)::text AS unit_price, trim_scale(l.list_unit_price)::text AS list_unit_price,
  l.charge_period_start, l.charge_period_end, l.quantity::text AS quantity, l.billed_cost::text AS billed_cost, l.list_cost::text AS list_cost
  FROM statement_lines l`;

/** The columns of a line computed from the ledger, numeric as text (the driver parses numeric into a number otherwise). */
export const OPEN_LINE_COLUMNS = `l.organisation_id, NULL::text AS charge_class, NULL::timestamptz AS recorded_at, l.kind, l.environment_slug,
  l.cluster_identity, l.cluster_slug, l.cluster_name, l.node_pool_identity, l.node_pool_name, l.cloud_provider, l.region, l.node_type,
  l.highly_available, l.price_identity, l.currency, trim_scale(l.unit_price)::text AS unit_price,
  trim_scale(l.list_unit_price)::text AS list_unit_price, l.charge_period_start, l.charge_period_end, l.quantity::text AS quantity,
  l.billed_cost::text AS billed_cost, l.list_cost::text AS list_cost`;

export function toLine(r: Record<string, any>, n: number): StatementLine {
  const nodes = r.kind === 'NODES';
  return {
    lineNumber: n,
    chargeClass: r.charge_class ?? null,
    recordedAt: r.recorded_at ? r.recorded_at.toISOString() : null,
    resource: r.kind,
    environmentSlug: r.environment_slug,
    clusterIdentity: r.cluster_identity,
    clusterSlug: r.cluster_slug,
    clusterName: r.cluster_name,
    nodePoolIdentity: r.node_pool_identity ?? null,
    nodePoolName: r.node_pool_name ?? null,
    cloudProvider: r.cloud_provider,
    region: r.region,
    nodeType: r.node_type ?? null,
    highlyAvailable: nodes ? null : r.highly_available,
    skuId: skuId(r as Parameters<typeof skuId>[0]),
    priceEntryIdentity: r.price_identity ?? null,
    unitPrice: r.unit_price ?? null,
    listUnitPrice: r.list_unit_price ?? null,
    quantity: String(r.quantity),
    unit: nodes ? 'Node-Hours' : 'Hours',
    chargePeriodStart: r.charge_period_start.toISOString(),
    chargePeriodEnd: r.charge_period_end.toISOString(),
    billedCost: String(r.billed_cost),
    listCost: String(r.list_cost),
    currency: r.currency ?? null,
  };
}

export const skuId = (r: { kind: string; cloud_provider: string; region: string; node_type: string | null; highly_available: boolean | null }) =>
  r.kind === 'NODES'
    ? `node/${r.cloud_provider}/${r.region}/${r.node_type}`
    : `control-plane/${r.cloud_provider}/${r.region}/${r.highly_available ? 'ha' : 'standard'}`;

/**
 * Monthly statements (docs/metering.md): a period is a calendar month in UTC. Until it closes (STATEMENT_CLOSE_GRACE_MS
 * after its end, by the metering job) it is computed from the ledger as of now; once closed, its lines are stored and
 * never change; a later difference becomes a correction line.
 */
@Injectable()
export class StatementsService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
  ) {}

  private get tx() {
    return this.txHost.tx;
  }

  /** The periods from the month of the organisation's first usage to the current month, latest first. */
  async list(org: OrganisationEntity, query: PageQueryDto): Promise<Page<StatementSummary>> {
    const req = toPageRequest(query, { period: 'period' }, [{ property: 'period', direction: 'DESC', ignoreCase: false }]);
    const now = this.clock.now();
    const [{ first }] = await this.tx.query(`SELECT min(started_at) AS first FROM usage_intervals WHERE organisation_id = $1`, [org.id]);
    const ids: string[] = [];
    if (first) {
      for (let p = periodAt(first); p.start.getTime() <= now.getTime(); p = periodAt(p.end)) ids.push(p.id);
    }
    const ascending = req.sort[0]?.direction === 'ASC';
    const ordered = ascending ? ids : [...ids].reverse();
    const pageIds = ordered.slice(req.offset, req.offset + req.size);
    const content: StatementSummary[] = [];
    for (const id of pageIds) {
      // Totals only: one line is read (for its currency), not the period's thousands.
      const s = await this.statement(org, periodOf(id)!, now, 0, 1);
      content.push({ period: s.period, status: s.status, closedAt: s.closedAt, currency: s.currency, billedCost: s.totals.billedCost, listCost: s.totals.listCost });
    }
    return toPage(content, ids.length, req, 'A');
  }

  /**
   * One period's statement with one page of its lines (`query`: page and size, at most MAX_PAGE_SIZE lines; the
   * default is the largest page, so a statement of up to that many lines comes whole). Lines are paged, never all held
   * at once: a month of 10,000 clusters has 50,000 of them. The totals and `lineCount` are the whole statement's.
   */
  async get(org: OrganisationEntity, id: string, query: PageQueryDto = {}): Promise<StatementResponse> {
    const period = periodOf(id);
    const now = this.clock.now();
    if (!period) throw new NotFoundException(`There is no period '${id}'; periods look like 2026-11 (a calendar month in UTC).`);
    if (period.start.getTime() > now.getTime()) throw new NotFoundException(`Period ${id} has not begun.`);
    const { page, size } = toPageRequest({ page: query.page, size: query.size ?? MAX_PAGE_SIZE }, {});
    return this.statement(org, period, now, page, size);
  }

  private async statement(org: OrganisationEntity, period: Period, now: Date, page: number, size: number): Promise<StatementResponse> {
    const offset = page * size;
    const [closed] = await this.tx.query(`SELECT organisation_type, closed_at FROM statement_periods WHERE organisation_id = $1 AND period = $2`, [
      org.id,
      period.id,
    ]);
    const [{ currency: bookCurrency }] = await this.tx.query(`SELECT min(currency) AS currency FROM price_book_entries`);
    let rows: Record<string, any>[];
    let totals: { billed: string; list: string; corrections: string; lines: number };
    if (closed) {
      rows = await this.tx.query(`${STORED_LINES_SQL} WHERE l.organisation_id = $1 AND l.period = $2 ORDER BY l.id LIMIT $3 OFFSET $4`, [
        org.id,
        period.id,
        size,
        offset,
      ]);
      [totals] = await this.tx.query(
        `SELECT COALESCE(sum(billed_cost), 0)::numeric(20,2)::text AS billed, COALESCE(sum(list_cost), 0)::numeric(20,2)::text AS list,
                COALESCE(sum(billed_cost) FILTER (WHERE charge_class = 'Correction'), 0)::numeric(20,2)::text AS corrections,
                count(*)::int AS lines
           FROM statement_lines WHERE organisation_id = $1 AND period = $2`,
        [org.id, period.id],
      );
    } else {
      const asOf = new Date(Math.min(now.getTime(), period.end.getTime()));
      const params = [org.id, period.start, period.end, asOf, org.type];
      // The page, numbered in the lines' order, with the whole statement's totals and count beside each line.
      rows = await this.tx.query(
        `SELECT * FROM (
           SELECT ${OPEN_LINE_COLUMNS}, row_number() OVER () AS line_number, count(*) OVER ()::int AS t_lines,
                  (sum(l.billed_cost) OVER ())::text AS t_billed, (sum(l.list_cost) OVER ())::text AS t_list
             FROM (${linesSql('organisation')}) l) x
          ORDER BY line_number LIMIT $6 OFFSET $7`,
        [...params, size, offset],
      );
      // A page past the last line has no row to carry them: the totals on their own.
      const [t] = rows.length
        ? [rows[0]]
        : await this.tx.query(
            `SELECT count(*)::int AS t_lines, sum(l.billed_cost)::text AS t_billed, sum(l.list_cost)::text AS t_list FROM (${linesSql('organisation')}) l`,
            params,
          );
      totals = {
        billed: t?.t_billed != null ? String(t.t_billed) : '0.00',
        list: t?.t_list != null ? String(t.t_list) : '0.00',
        corrections: '0.00',
        lines: t?.t_lines ?? 0,
      };
    }
    const lines = rows.map((r, i) => toLine(r, offset + i + 1));
    const currency = lines.find((l) => l.currency)?.currency ?? bookCurrency ?? null;
    return {
      organisation: org.slug,
      period: period.id,
      timeZone: 'UTC',
      periodStart: period.start.toISOString(),
      periodEnd: period.end.toISOString(),
      status: closed ? 'CLOSED' : 'OPEN',
      closedAt: closed ? closed.closed_at.toISOString() : null,
      asOf: (closed ? period.end : new Date(Math.min(now.getTime(), period.end.getTime()))).toISOString(),
      organisationType: closed ? closed.organisation_type : org.type,
      currency,
      lineCount: Number(totals.lines),
      page,
      size,
      lines,
      totals: { billedCost: totals.billed, listCost: totals.list, corrections: totals.corrections },
    };
  }
}

/**
 * Closing and correcting periods, in SQL, for one organisation and period, inside the caller's transaction (which
 * holds the organisation's advisory lock). Returns the lines written.
 */
export async function closePeriod(
  q: (sql: string, params: unknown[]) => Promise<any>,
  orgId: number,
  period: Period,
  now: Date,
): Promise<number> {
  const inserted = await q(
    `INSERT INTO statement_periods (organisation_id, period, organisation_type, closed_at)
     SELECT id, $2, type, $3 FROM organisations WHERE id = $1
     ON CONFLICT DO NOTHING RETURNING organisation_type`,
    [orgId, period.id, now],
  );
  if (!inserted.length) return correctPeriod(q, orgId, period, now);
  const rows = await q(
    `INSERT INTO statement_lines (organisation_id, period, line_key, charge_class, recorded_at, ${LINE_COLUMNS})
     SELECT $1, $6, ${LINE_KEY_SQL}, NULL, $7, ${LINE_COLUMNS.replace(/(\w+)/g, 'l.$1')}
       FROM (${linesSql('organisation')}) l
     RETURNING id`,
    [orgId, period.start, period.end, period.end, inserted[0].organisation_type, period.id, now],
  );
  return rows.length;
}

/** Appends a correction line for every line key whose recomputed amounts differ from what the period holds. */
export async function correctPeriod(q: (sql: string, params: unknown[]) => Promise<any>, orgId: number, period: Period, now: Date): Promise<number> {
  const rows = await q(
    `WITH cur AS (
       SELECT ${LINE_KEY_SQL} AS line_key, l.* FROM (${linesSql('organisation')}) l
     ),
     held AS (
       SELECT line_key, sum(quantity) AS quantity, sum(billed_cost) AS billed_cost, sum(list_cost) AS list_cost
         FROM statement_lines WHERE organisation_id = $1 AND period = $6 GROUP BY line_key
     ),
     described AS (
       SELECT DISTINCT ON (line_key) * FROM statement_lines WHERE organisation_id = $1 AND period = $6 ORDER BY line_key, id
     )
     INSERT INTO statement_lines (organisation_id, period, line_key, charge_class, recorded_at, ${LINE_COLUMNS})
     SELECT $1, $6, COALESCE(cur.line_key, held.line_key), 'Correction', $7,
            ${LINE_COLUMNS.split(',')
              .map((c) => c.trim())
              .map((c) =>
                c === 'quantity' || c === 'billed_cost' || c === 'list_cost'
                  ? `COALESCE(cur.${c}, 0) - COALESCE(held.${c}, 0)`
                  : `COALESCE(cur.${c}, d.${c})`,
              )
              .join(', ')}
       FROM cur FULL JOIN held ON held.line_key = cur.line_key
       LEFT JOIN described d ON d.line_key = COALESCE(cur.line_key, held.line_key)
      WHERE COALESCE(cur.quantity, 0) <> COALESCE(held.quantity, 0)
         OR COALESCE(cur.billed_cost, 0) <> COALESCE(held.billed_cost, 0)
         OR COALESCE(cur.list_cost, 0) <> COALESCE(held.list_cost, 0)
      ORDER BY 3
     RETURNING id`,
    [orgId, period.start, period.end, period.end, await typeOf(q, orgId, period), period.id, now],
  );
  return rows.length;
}

async function typeOf(q: (sql: string, params: unknown[]) => Promise<any>, orgId: number, period: Period): Promise<string> {
  const [row] = await q(`SELECT organisation_type FROM statement_periods WHERE organisation_id = $1 AND period = $2`, [orgId, period.id]);
  return row.organisation_type;
}
