import { Injectable, NotFoundException, StreamableFile } from '@nestjs/common';
import { Readable } from 'stream';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { csvHeader, csvLine, FOCUS_VERSION, focusRow } from './focus';
import { OPEN_LINE_COLUMNS, periodOf } from './statements.service';
import { linesSql, UsageScope } from './usage-sql';

export const EXPORT_FORMATS = ['focus-csv', 'focus-json'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
/** Rows fetched from the cursor at a time: what the export holds in memory, whatever the month's size. */
export const EXPORT_BATCH_ROWS = 500;

const STORED_EXPORT_COLUMNS = `l.organisation_id, l.charge_class, l.recorded_at, l.kind, l.environment_slug, l.cluster_identity, l.cluster_slug,
  l.cluster_name, l.node_pool_identity, l.node_pool_name, l.cloud_provider, l.region, l.node_type, l.highly_available, l.price_identity,
  l.currency, trim_scale(l.unit_price)::text AS unit_price, trim_scale(l.list_unit_price)::text AS list_unit_price, l.charge_period_start,
  l.charge_period_end, l.quantity::text AS quantity, l.billed_cost::text AS billed_cost, l.list_cost::text AS list_cost`;

/** A literal for the cursor's statement (DECLARE takes no bind parameters): only numbers, instants and periods. */
const literal = (v: number | Date | string | null): string =>
  v === null ? 'NULL' : typeof v === 'number' ? String(Math.trunc(v)) : v instanceof Date ? `'${v.toISOString()}'::timestamptz` : `'${v.replace(/'/g, "''")}'`;

/**
 * The FOCUS export of a period (docs/metering.md): the closed lines of the organisations whose period is closed and
 * the lines computed from the ledger for the others, one FOCUS row per line, read through a server-side cursor in a
 * read-only snapshot and written as they come (EXPORT_BATCH_ROWS in memory at a time).
 */
@Injectable()
export class UsageExportService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
  ) {}

  async export(org: OrganisationEntity | null, periodId: string, format: ExportFormat): Promise<StreamableFile> {
    const period = periodOf(periodId);
    const now = this.clock.now();
    if (!period) throw new NotFoundException(`There is no period '${periodId}'; periods look like 2026-11 (a calendar month in UTC).`);
    if (period.start.getTime() > now.getTime()) throw new NotFoundException(`Period ${periodId} has not begun.`);
    const asOf = new Date(Math.min(now.getTime(), period.end.getTime()));
    const scope: UsageScope = org ? 'organisation' : 'platform';
    const params: (number | Date | string | null)[] = [org ? Number(org.id) : null, period.start, period.end, asOf, null, period.id];
    const scoped = org ? 'l.organisation_id = $1' : '$1::bigint IS NULL';
    const sql = `SELECT x.*, o.identity AS organisation_identity, o.name AS organisation_name, o.slug AS organisation_slug, r.name AS region_name,
                        $2::timestamptz AS period_start, $3::timestamptz AS period_end
                   FROM (SELECT 0 AS src, l.id AS seq, ${STORED_EXPORT_COLUMNS}
                           FROM statement_lines l WHERE l.period = $6 AND ${scoped}
                         UNION ALL
                         SELECT 1, row_number() OVER (PARTITION BY l.organisation_id ORDER BY l.cluster_id, l.kind, l.node_pool_id NULLS FIRST,
                                                      l.charge_period_start, l.price_identity NULLS FIRST), ${OPEN_LINE_COLUMNS}
                           FROM (${linesSql(scope)}) l
                          WHERE NOT EXISTS (SELECT 1 FROM statement_periods sp WHERE sp.organisation_id = l.organisation_id AND sp.period = $6)) x
                   JOIN organisations o ON o.id = x.organisation_id
                   LEFT JOIN cloud_providers cp ON cp.type = x.cloud_provider
                   LEFT JOIN cloud_provider_regions r ON r.provider_id = cp.id AND r.slug = x.region
                  ORDER BY x.organisation_id, x.src, x.seq`.replace(/\$(\d+)/g, (_, n) => literal(params[Number(n) - 1]));
    // ISO 4217 XXX ("no currency") while the price book is empty.
    const [{ currency: bookCurrency }] = await this.dataSource.query(`SELECT COALESCE(min(currency), 'XXX') AS currency FROM price_book_entries`);
    const rows = this.rows(sql);
    const json = format === 'focus-json';
    async function* encode(): AsyncGenerator<string> {
      let first = true;
      if (!json) yield csvHeader();
      else yield '[';
      for await (const r of rows) {
        const row = focusRow(r, bookCurrency);
        if (json) {
          yield `${first ? '\n' : ',\n'}${JSON.stringify(row)}`;
          first = false;
        } else yield csvLine(row);
      }
      if (json) yield first ? ']\n' : '\n]\n';
    }
    const name = `focus-${FOCUS_VERSION}-${org ? org.slug : 'platform'}-${period.id}.${json ? 'json' : 'csv'}`;
    return new StreamableFile(Readable.from(encode()), {
      type: json ? 'application/json' : 'text/csv; charset=utf-8',
      disposition: `attachment; filename="${name}"`,
    });
  }

  /** The rows of a statement through a cursor, a batch at a time, in one read-only snapshot. */
  private async *rows(sql: string): AsyncGenerator<Record<string, any>> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    let open = false;
    try {
      await runner.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      open = true;
      await runner.query(`DECLARE focus_export NO SCROLL CURSOR FOR ${sql}`);
      for (;;) {
        const batch: Record<string, any>[] = await runner.query(`FETCH ${EXPORT_BATCH_ROWS} FROM focus_export`);
        if (!batch.length) break;
        for (const r of batch) yield r;
      }
      await runner.query('COMMIT');
      open = false;
    } finally {
      if (open) await runner.query('ROLLBACK').catch(() => undefined);
      await runner.release();
    }
  }
}

/** The OpenAPI content of the export operations (FOCUS CSV and JSON). */
export { focusResponseContent } from './focus';
