import { Client } from 'pg';

/** One normalised statement of pg_stat_statements, over a measured pass. */
export interface StatementCount {
  query: string;
  calls: number;
  totalMs: number;
}

/**
 * Statement counts of the bench database from pg_stat_statements (top-level statements, BEGIN/COMMIT included;
 * what triggers run inside a statement is not a statement). A pass resets the view, sends a fixed number of
 * requests to one server and reads it back: service and baseline are measured one after the other, so each pass
 * sees only its own server's statements (background jobs are off in the bench).
 */
export class StatementCounter {
  private constructor(private readonly db: Client) {}

  static async connect(url: string): Promise<StatementCounter> {
    const db = new Client({ connectionString: url });
    await db.connect();
    return new StatementCounter(db);
  }

  async reset(): Promise<void> {
    await this.db.query('SELECT pg_stat_statements_reset()');
  }

  async read(): Promise<StatementCount[]> {
    const { rows } = await this.db.query(
      `SELECT query, calls::int AS calls, total_exec_time AS "totalMs"
         FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND query NOT ILIKE '%pg_stat_statements%'
        ORDER BY calls DESC, total_exec_time DESC`,
    );
    return rows as StatementCount[];
  }

  async close(): Promise<void> {
    await this.db.end();
  }
}

/** `calls` per request, and the statements by calls per request (query text shortened for a table). */
export function perRequest(counts: StatementCount[], requests: number) {
  const total = counts.reduce((s, c) => s + c.calls, 0);
  return {
    statementsPerRequest: +(total / requests).toFixed(2),
    dbMsPerRequest: +(counts.reduce((s, c) => s + c.totalMs, 0) / requests).toFixed(3),
    statements: counts
      .filter((c) => c.calls / requests >= 0.05)
      .map((c) => ({
        perRequest: +(c.calls / requests).toFixed(2),
        meanMs: +(c.totalMs / c.calls).toFixed(3),
        query: c.query.replace(/\s+/g, ' ').slice(0, 160),
      })),
  };
}
