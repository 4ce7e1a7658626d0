import { Injectable, NotFoundException, StreamableFile } from '@nestjs/common';
import { Readable } from 'stream';
import { DataSource, QueryRunner } from 'typeorm';
import { Clock } from '../common/clock';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { csvHeader, FOCUS_COLUMNS, focusColumnsSql, focusLineSql, FOCUS_VERSION } from './focus';
import { OPEN_LINE_COLUMNS, periodOf } from './statements.service';
import { linesSql, UsageScope } from './usage-sql';

export const EXPORT_FORMATS = ['focus-csv', 'focus-json'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
/**
 * Rows fetched from the cursor at a time and written as one chunk: what the export holds in memory, whatever the
 * month's size (ADR 0204). 64 JSON lines (about 1.5 kB each) stay under V8's large-object size (128 kB), which only a
 * full collection frees.
 */
export const EXPORT_BATCH_ROWS = 64;

const STORED_EXPORT_COLUMNS = `l.organisation_id, l.charge_class, l.recorded_at, l.kind, l.environment_slug, l.cluster_identity, l.cluster_slug,
  l.cluster_name, l.node_pool_identity, l.node_pool_name, l.cloud_provider, l.region, l.node_type, l.highly_available, l.price_identity,
  l.currency, trim_scale(l.unit_price)::text AS unit_price, trim_scale(l.list_unit_price)::text AS list_unit_price, l.charge_period_start,
  l.charge_period_end, l.quantity::text AS quantity, l.billed_cost::text AS billed_cost, l.list_cost::text AS list_cost`;

/** A literal for the cursor's statement (DECLARE takes no bind parameters): only numbers, instants and periods. */
const literal = (v: number | Date | string | null): string =>
  v === null ? 'NULL' : typeof v === 'number' ? String(Math.trunc(v)) : v instanceof Date ? `'${v.toISOString()}'::timestamptz` : `'${v.replace(/'/g, "''")}'`;

/**
 * The FOCUS export of a period (docs/metering.md): the closed lines of the organisations whose period is closed and
 * the lines computed from the ledger for the others, one FOCUS row per line, written as text by PostgreSQL (focus.ts:
 * focusLineSql), read through a server-side cursor in a read-only snapshot and written as they come
 * (EXPORT_BATCH_ROWS in memory at a time; ADR 0202, 0204).
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
    // ISO 4217 XXX ("no currency") while the price book is empty.
    const [{ currency: bookCurrency }] = await this.dataSource.query(`SELECT COALESCE(min(currency), 'XXX') AS currency FROM price_book_entries`);
    const json = format === 'focus-json';
    const columns = focusColumnsSql(bookCurrency);
    const sql = `SELECT ${focusLineSql(json ? 'json' : 'csv')} AS line
                   FROM (SELECT x.*, o.identity AS organisation_identity, o.name AS organisation_name, o.slug AS organisation_slug,
                                r.name AS region_name, $2::timestamptz AS period_start, $3::timestamptz AS period_end
                           FROM (SELECT 0 AS src, l.id AS seq, ${STORED_EXPORT_COLUMNS}
                                   FROM statement_lines l WHERE l.period = $6 AND ${scoped}
                                 UNION ALL
                                 SELECT 1, row_number() OVER (PARTITION BY l.organisation_id ORDER BY l.cluster_id, l.kind, l.node_pool_id NULLS FIRST,
                                                              l.charge_period_start, l.price_identity NULLS FIRST), ${OPEN_LINE_COLUMNS}
                                   FROM (${linesSql(scope)}) l
                                  WHERE NOT EXISTS (SELECT 1 FROM statement_periods sp WHERE sp.organisation_id = l.organisation_id AND sp.period = $6)) x
                           JOIN organisations o ON o.id = x.organisation_id
                           LEFT JOIN cloud_providers cp ON cp.type = x.cloud_provider
                           LEFT JOIN cloud_provider_regions r ON r.provider_id = cp.id AND r.slug = x.region) f
                  CROSS JOIN LATERAL (SELECT ${FOCUS_COLUMNS.map((col) => `${columns[col]} AS "${col}"`).join(', ')}) c
                  ORDER BY f.organisation_id, f.src, f.seq`.replace(/\$(\d+)/g, (_, n) => literal(params[Number(n) - 1]));
    const name = `focus-${FOCUS_VERSION}-${org ? org.slug : 'platform'}-${period.id}.${json ? 'json' : 'csv'}`;
    return new StreamableFile(new FocusExportStream(this.dataSource, sql, json), {
      type: json ? 'application/json' : 'text/csv; charset=utf-8',
      disposition: `attachment; filename="${name}"`,
    });
  }
}

/**
 * The export's text, read from a cursor EXPORT_BATCH_ROWS lines at a time in one read-only snapshot (ADR 0202,
 * 0204). The next batch is fetched only when the stream is read below its mark (the reply has taken the chunk
 * before): a slow client holds one batch in memory and leaves the cursor where it is. A stream destroyed early (the
 * client went away, or a fetch failed) rolls the transaction back and releases the connection once a fetch under way
 * has returned. A Readable of its own, not Readable.from(an async generator) with its mark of 16 chunks, so that
 * read-ahead is one batch and nothing between the cursor and the reply holds lines longer than that.
 */
export class FocusExportStream extends Readable {
  private runner?: QueryRunner;
  private work: Promise<void> = Promise.resolve();
  private fetching = false;
  private ended = false;
  private rows = 0;

  constructor(
    private readonly dataSource: DataSource,
    private readonly sql: string,
    private readonly json: boolean,
  ) {
    super({ objectMode: true, highWaterMark: 1 });
  }

  override _read(): void {
    if (this.fetching || this.ended) return;
    this.fetching = true;
    this.work = this.next().then(
      () => void (this.fetching = false),
      (err: unknown) => {
        this.fetching = false;
        this.destroy(err as Error);
      },
    );
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.ended = true;
    this.work
      .then(() => this.close('ROLLBACK'))
      .then(
        () => callback(err),
        (e: unknown) => callback(err ?? (e as Error)),
      );
  }

  /** Pushes the next batch (the header first; the end once the cursor is exhausted). */
  private async next(): Promise<void> {
    if (!this.runner) {
      this.push(this.json ? '[' : csvHeader());
      this.runner = this.dataSource.createQueryRunner();
      await this.runner.connect();
      await this.runner.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      await this.runner.query(`DECLARE focus_export NO SCROLL CURSOR FOR ${this.sql}`);
    }
    const batch: { line: string }[] = await this.runner.query(`FETCH ${EXPORT_BATCH_ROWS} FROM focus_export`);
    if (this.ended) return;
    if (!batch.length) {
      await this.close('COMMIT');
      this.ended = true;
      if (this.json) this.push(this.rows ? '\n]\n' : ']\n');
      this.push(null);
      return;
    }
    const lines = batch.map((r) => r.line);
    this.push(this.json ? (this.rows ? ',\n' : '\n') + lines.join(',\n') : lines.join(''));
    this.rows += lines.length;
  }

  private async close(end: 'COMMIT' | 'ROLLBACK'): Promise<void> {
    const runner = this.runner;
    if (!runner || runner.isReleased) return;
    try {
      if (end === 'COMMIT') await runner.query('COMMIT');
      else await runner.query('ROLLBACK').catch(() => undefined);
    } finally {
      await runner.release();
    }
  }
}

/** The OpenAPI content of the export operations (FOCUS CSV and JSON). */
export { focusResponseContent } from './focus';
