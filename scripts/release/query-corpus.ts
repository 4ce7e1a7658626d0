import * as fs from 'fs';
import * as path from 'path';
import { Client } from 'pg';

/**
 * A release's SQL corpus: every distinct statement the service issued while `npm run release:capture-queries` drove
 * it (scripts/release/capture-queries.ts), with the parameters it sent. The next release's schema must still run
 * every one of them (the expand/contract rule, docs/operations.md#expand-and-contract);
 * test/operations/previous-release-queries.e2e-spec.ts replays the newest corpus against the current migrations.
 */
export interface QueryCorpus {
  /** The release this is the SQL of: a CHANGELOG heading (YYYY-MM-DD). */
  release: string;
  capturedAt: string;
  /** The commit the capture ran on (with `+changes` when the work tree differed from it). */
  commit: string;
  /** The newest migration of that release: the schema the statements were captured on. */
  schema: string;
  /** How many HTTP requests and background passes the capture made. */
  drove: { requests: number; passes: number };
  queries: CorpusQuery[];
}

export interface CorpusQuery {
  /** The statement as it was first sent (line breaks kept: a `--` comment ends at one). */
  sql: string;
  /** The parameters as sent on the wire (text; bytea as `{ "bytea": base64 }`), from the first time it was issued. */
  params: CorpusParam[];
  /** What issued it, e.g. `GET /api/v1/orgs/{organisationSlug}/clusters` or `pass reconciler` (at most 3). */
  sources: string[];
}

export type CorpusParam = string | null | { bytea: string };

export const CORPUS_DIR = path.resolve(__dirname, '../../test/operations/fixtures/release-queries');

/** The corpus files, oldest first (their names are release days, so the name order is the release order). */
export function corpusFiles(dir = CORPUS_DIR): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d{4}-\d{2}-\d{2}\.json$/.test(f))
    .sort()
    .map((f) => path.join(dir, f));
}

/** The newest `## YYYY-MM-DD` heading of CHANGELOG.md: the release a build's corpus is filed under. */
export function latestRelease(changelog = path.resolve(__dirname, '../../CHANGELOG.md')): string {
  const day = /^## (\d{4}-\d{2}-\d{2})\s*$/m.exec(fs.readFileSync(changelog, 'utf8'))?.[1];
  if (!day) throw new Error('CHANGELOG.md has no dated release heading (## YYYY-MM-DD)');
  return day;
}

export function readCorpus(file: string): QueryCorpus {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as QueryCorpus;
}

/** Statements that are not the service's SQL but the transaction around it: the replay brings its own. */
const TRANSACTION_CONTROL = /^(BEGIN|START TRANSACTION|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE( SAVEPOINT)?|ROLLBACK TO)\b/i;

/**
 * The key statements are de-duplicated by: whitespace collapsed, so the same statement indented differently is one
 * entry. Only the key: the corpus keeps the text as sent, whose line breaks end `--` comments.
 */
export function normaliseSql(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

// pg's own conversion of a parameter to what it sends (Date with its offset, arrays as array literals, objects as
// JSON), so a replay sends the same text the service sent. Not in pg's typings.
const { prepareValue } = require('pg/lib/utils') as { prepareValue(value: unknown): string | Buffer | null };

function wireParam(value: unknown): CorpusParam {
  const sent = prepareValue(value);
  if (Buffer.isBuffer(sent)) return { bytea: sent.toString('base64') };
  return sent === undefined ? null : sent;
}

/**
 * Collects the statements every pg client of this process sends while it is on, de-duplicated by their text.
 * It wraps `Client.prototype.query` for the time of a capture only (the service itself never loads this), so the
 * pools, the LISTEN connections and any client made with `new Client` are all seen, and nothing in the service
 * changes or slows down outside a capture.
 */
export class QueryRecorder {
  private readonly byText = new Map<string, CorpusQuery>();
  private restore?: () => void;
  /** What is being driven now; every statement seen is attributed to it. */
  source = 'start-up';

  start(): void {
    if (this.restore) return;
    const proto = Client.prototype as unknown as { query: (config: unknown, values?: unknown, callback?: unknown) => unknown };
    const original = proto.query;
    const recorder = this;
    proto.query = function (this: unknown, config: unknown, values?: unknown, callback?: unknown) {
      recorder.seen(config, values);
      return original.call(this, config, values, callback);
    };
    this.restore = () => (proto.query = original);
  }

  stop(): void {
    this.restore?.();
    this.restore = undefined;
  }

  get queries(): CorpusQuery[] {
    return [...this.byText.values()];
  }

  private seen(config: unknown, values: unknown): void {
    const text = typeof config === 'string' ? config : (config as { text?: unknown } | null)?.text;
    if (typeof text !== 'string') return;
    const key = normaliseSql(text);
    if (!key || TRANSACTION_CONTROL.test(key)) return;
    const given = Array.isArray(values) ? values : (config as { values?: unknown })?.values;
    const entry = this.byText.get(key);
    if (entry) {
      if (entry.sources.length < 3 && !entry.sources.includes(this.source)) entry.sources.push(this.source);
      return;
    }
    this.byText.set(key, { sql: text, params: Array.isArray(given) ? given.map(wireParam) : [], sources: [this.source] });
  }
}

/**
 * Errors a replayed statement may end with that say something about the data, not about the schema: the replay
 * runs each statement once, out of the request that issued it, against the rows of a fresh database, so its
 * parameters name rows that are missing or already there. Everything else fails the check: above all class 42
 * (undefined column, table or function, a type the statement no longer fits), and also a NOT NULL violation
 * (23502: a column added without a default that the previous release does not write) and data exceptions (class 22:
 * a column whose type changed under a value the previous release sends).
 */
export const TOLERATED_SQLSTATES: Record<string, string> = {
  '23503': 'foreign_key_violation: the parameters name a row this database does not have (or another still refers to it)',
  '23505': 'unique_violation: the row was created already (by the demo data, or an earlier statement of the replay)',
  '23P01': 'exclusion_violation: a maintenance window overlapping one created earlier in the replay',
};

export interface ReplayFailure {
  sql: string;
  sources: string[];
  code: string;
  message: string;
}

export interface ReplayReport {
  ran: number;
  /** How many ended with each tolerated SQLSTATE. */
  tolerated: Record<string, number>;
  failures: ReplayFailure[];
}

/**
 * Runs every statement of `queries`, in order, inside one transaction that is rolled back at the end (writes are
 * fine), each under a savepoint so one that fails does not stop the rest; what succeeds stays for the statements
 * after it, as it did when they were captured. `before` runs first in the same transaction (a test applies a
 * deliberately contracting change there). The client must not be in a transaction.
 */
export async function replayCorpus(client: Client, queries: CorpusQuery[], options: { before?: string[]; statementTimeoutMs?: number } = {}): Promise<ReplayReport> {
  const report: ReplayReport = { ran: 0, tolerated: {}, failures: [] };
  await client.query('BEGIN');
  try {
    // A statement waiting on a lock held elsewhere fails the check instead of holding it.
    await client.query(`SET LOCAL statement_timeout = ${options.statementTimeoutMs ?? 5000}`);
    await client.query(`SET LOCAL lock_timeout = ${options.statementTimeoutMs ?? 5000}`);
    for (const sql of options.before ?? []) await client.query(sql);
    for (const q of queries) {
      report.ran++;
      // Each captured DECLARE ran in a transaction of its own, which ended its cursor; here they share one.
      if (/^\s*DECLARE\b/i.test(q.sql)) await client.query('CLOSE ALL');
      await client.query('SAVEPOINT replay');
      try {
        await client.query({ text: q.sql, values: q.params.map((p) => (p !== null && typeof p === 'object' ? Buffer.from(p.bytea, 'base64') : p)) });
        await client.query('RELEASE SAVEPOINT replay');
      } catch (e) {
        await client.query('ROLLBACK TO SAVEPOINT replay');
        const err = e as { code?: string; message?: string };
        const code = err.code ?? 'none';
        if (code in TOLERATED_SQLSTATES) report.tolerated[code] = (report.tolerated[code] ?? 0) + 1;
        else report.failures.push({ sql: q.sql, sources: q.sources, code, message: err.message ?? String(e) });
      }
    }
  } finally {
    await client.query('ROLLBACK');
  }
  return report;
}
