import 'reflect-metadata';
import type { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import { AbstractLogger, DataSource, LogLevel, LogMessage, QueryRunner } from 'typeorm';
import { AuditEventsService } from '../src/audit/audit-events.service';
import { PageQueryDto } from '../src/common/paging';
import { buildDataSourceOptions, runMigrationsLocked } from '../src/database/data-source-options';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres';
import { RETENTION_SQL } from '../src/retention/retention-tables';

/**
 * npm run bench:audit-explain — the audit lists and the retention delete at 10 million audit rows.
 *
 * A fresh embedded PostgreSQL (fsync off: throwaway data), the migrations, then BENCH_AUDIT_ROWS (default
 * 10,000,000) audit rows from generate_series over 1,000 organisations, 20,000 clusters (20 per organisation,
 * in two environments; a seventh of the events are organisation-wide, without a cluster) and two years of
 * created_at (in id order, as the rows are written), VACUUM ANALYZE. Then EXPLAIN (ANALYZE, BUFFERS) of the
 * SQL the service runs: AuditEventsService is called with a logger that captures its statements (list rows
 * and count), and the retention batch is RETENTION_SQL.audit_events itself (run in a rolled-back
 * transaction). The per-cluster list and the retention batch are also explained with their index dropped
 * (in a rolled-back transaction) to show what the index is for. Prints Markdown for docs/performance-history.md.
 */
const ROWS = Number(process.env.BENCH_AUDIT_ROWS ?? 10_000_000);
const ORGS = 1000;
const CLUSTERS = 20_000;
const SPAN_DAYS = 730;
const CHUNK = 1_000_000;

class Capture extends AbstractLogger {
  statements: { sql: string; params: unknown[] }[] = [];
  protected writeLog(): void {}
  override logQuery(query: string, parameters?: unknown[], _runner?: QueryRunner): void {
    this.statements.push({ sql: query, params: parameters ?? [] });
  }
  override log(_level: LogLevel, _message: string | number | LogMessage | (string | number | LogMessage)[]): void {}
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function main(): Promise<void> {
  const started = Date.now();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cms-audit-explain-'));
  const pg = await startEmbeddedPostgres(dir, undefined, { fsync: false });
  const out: string[] = [];
  const progress = (msg: string) => process.stderr.write(`[${seconds(Date.now() - started)}] ${msg}\n`);
  try {
    const admin = new Client({ connectionString: pg.url });
    await admin.connect();
    await admin.query('CREATE DATABASE audit_explain');
    await admin.end();
    const u = new URL(pg.url);
    u.pathname = '/audit_explain';
    const capture = new Capture();
    const ds = await new DataSource({
      ...buildDataSourceOptions(u.toString(), { timeoutMs: 3_600_000, poolSize: 2 }),
      logging: ['query'],
      logger: capture,
    }).initialize();
    await runMigrationsLocked(ds);
    progress('migrated');

    // Load with the secondary indexes dropped and rebuilt afterwards (their definitions as the migrations left them).
    const indexes: { indexname: string; indexdef: string }[] = await ds.query(
      `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'audit_events' AND indexname <> 'audit_events_pkey' ORDER BY indexname`,
    );
    for (const i of indexes) await ds.query(`DROP INDEX ${i.indexname}`);
    const now = new Date();
    const spanMs = SPAN_DAYS * 86_400_000;
    const loadStarted = Date.now();
    for (let from = 1; from <= ROWS; from += CHUNK) {
      const to = Math.min(ROWS, from + CHUNK - 1);
      // Cluster c belongs to organisation c % 1000 + 1, environment env-(c / 1000 % 2); every seventh event has no cluster.
      await ds.query(
        `INSERT INTO audit_events (type, actor_id, actor_username, organisation_id, organisation_slug, environment_id, environment_slug,
                                   cluster_id, cluster_slug, referenced_entity_identity, details, created_at)
         SELECT (ARRAY['CLUSTER_UPDATED','CLUSTER_CREATED','NODE_POOL_UPDATED','MEMBER_ADDED','ALERTS_RECEIVED'])[1 + g % 5],
                1 + g % 5000, 'user-' || (g % 5000),
                c % ${ORGS} + 1, 'org-' || (c % ${ORGS} + 1),
                CASE WHEN g % 7 = 0 THEN NULL ELSE (c / ${ORGS}) % 2 + 1 END,
                CASE WHEN g % 7 = 0 THEN NULL ELSE 'env-' || ((c / ${ORGS}) % 2) END,
                CASE WHEN g % 7 = 0 THEN NULL ELSE c + 1 END,
                CASE WHEN g % 7 = 0 THEN NULL ELSE 'cluster-' || c END,
                md5(g::text)::uuid::text,
                jsonb_build_object('description', jsonb_build_object('old', 'v' || g, 'new', 'v' || (g + 1))),
                $1::timestamptz - make_interval(secs => ($2::float8 - g) * $3::float8)
           FROM (SELECT g, (g * 7919) % ${CLUSTERS} AS c FROM generate_series($4::bigint, $5::bigint) g) s`,
        [now, ROWS, spanMs / 1000 / ROWS, from, to],
      );
      progress(`inserted ${to} rows`);
    }
    const loadMs = Date.now() - loadStarted;
    await ds.query(`SET maintenance_work_mem = '1GB'`);
    const indexStarted = Date.now();
    const indexTimes: string[] = [];
    for (const i of indexes) {
      const t0 = Date.now();
      await ds.query(i.indexdef);
      indexTimes.push(`${i.indexname} ${seconds(Date.now() - t0)}`);
      progress(`built ${i.indexname}`);
    }
    const indexMs = Date.now() - indexStarted;
    const vacuumStarted = Date.now();
    await ds.query(`VACUUM ANALYZE audit_events`);
    const vacuumMs = Date.now() - vacuumStarted;
    progress('vacuumed and analyzed');
    const [size] = await ds.query(
      `SELECT pg_size_pretty(pg_table_size('audit_events')) AS heap, pg_size_pretty(pg_indexes_size('audit_events')) AS indexes`,
    );
    const sizes: { indexname: string; size: string }[] = await ds.query(
      `SELECT indexrelname AS indexname, pg_size_pretty(pg_relation_size(indexrelid)) AS size FROM pg_stat_user_indexes
        WHERE relname = 'audit_events' ORDER BY indexrelname`,
    );

    out.push(
      `Data: ${ROWS.toLocaleString('en')} audit rows over ${ORGS} organisations and ${CLUSTERS.toLocaleString('en')} clusters, ` +
        `${SPAN_DAYS} days of created_at; heap ${size.heap}, indexes ${size.indexes} ` +
        `(${sizes.map((s) => `${s.indexname} ${s.size}`).join(', ')}).`,
      `Load ${seconds(loadMs)}, index builds ${seconds(indexMs)} (${indexTimes.join(', ')}), VACUUM ANALYZE ${seconds(vacuumMs)}.`,
      '',
    );

    const explain: Explain = async (title, sql, params, opts = {}) => {
      const runner = ds.createQueryRunner();
      await runner.connect();
      try {
        await runner.query('BEGIN');
        if (opts.without) await runner.query(`DROP INDEX ${opts.without}`);
        for (const step of opts.setup ?? []) await runner.query(step.sql, step.params);
        const plan = (await runner.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, params)) as Record<string, string>[];
        await runner.query(opts.rollback || opts.without ? 'ROLLBACK' : 'COMMIT');
        out.push(
          `#### ${title}`,
          '',
          '```sql',
          sql.trim(),
          '```',
          '',
          `Parameters: ${shortenParams(params)}`,
          '',
          '```',
          ...plan.map((r) => shortenArrays(r['QUERY PLAN'])),
          '```',
          '',
        );
      } finally {
        await runner.release();
      }
      progress(`explained: ${title}`);
    };

    // The service's own statements, as TypeORM sends them.
    const tx = { tx: ds.manager } as unknown as TransactionHost<TransactionalAdapterTypeOrm>;
    const service = new AuditEventsService(tx);
    const capturePage = async (run: () => Promise<unknown>) => {
      capture.statements = [];
      await run();
      const statements = capture.statements.filter((s) => /audit_events/.test(s.sql));
      capture.statements = [];
      return statements;
    };
    const org = 417;
    const [{ n: orgRows }] = await ds.query(`SELECT count(*)::int AS n FROM audit_events WHERE organisation_id = $1`, [org]);
    const cluster = { environmentSlug: 'env-0', clusterSlug: `cluster-${org - 1}` }; // cluster 416 belongs to organisation 417
    const [{ n: clusterRows }] = await ds.query(
      `SELECT count(*)::int AS n FROM audit_events WHERE organisation_id = $1 AND environment_slug = $2 AND cluster_slug = $3`,
      [org, cluster.environmentSlug, cluster.clusterSlug],
    );
    out.push(`Organisation ${org} has ${orgRows} events; its cluster ${cluster.environmentSlug}/${cluster.clusterSlug} has ${clusterRows}.`, '');

    const page = (p: number) => Object.assign(new PageQueryDto(), { page: p });
    for (const [label, p] of [['first page', 0], ['page 100', 100]] as const) {
      const statements = await capturePage(() => service.forOrganisation(org, page(p)));
      for (const s of statements) await explain(`Organisation audit list, ${label} (default sort): ${/COUNT\(/i.test(s.sql) ? 'count' : 'rows'}`, s.sql, s.params);
    }
    const clusterPage = (svc: AuditEventsService) =>
      (svc as unknown as { page(o: number, q: PageQueryDto, c: typeof cluster): Promise<unknown> }).page(org, page(0), cluster);
    const clusterStatements = await capturePage(() => clusterPage(service));
    for (const s of clusterStatements) await explain(`Cluster audit list, first page: ${/COUNT\(/i.test(s.sql) ? 'count' : 'rows'}`, s.sql, s.params);
    const rowsStatement = clusterStatements.find((s) => !/COUNT\(/i.test(s.sql))!;
    await explain('Cluster audit list, first page: rows, without audit_events_cluster_slug_idx (before this change)', rowsStatement.sql, rowsStatement.params, {
      without: 'audit_events_cluster_slug_idx',
    });

    // The retention batch: 400 days (the default), 5,000 rows; rolled back so every run sees the same data.
    const cutoff = new Date(now.getTime() - 400 * 86_400_000);
    await explain('Retention batch (AUDIT_RETENTION_DAYS=400, 5,000 rows)', RETENTION_SQL.audit_events, [cutoff, 5000], { rollback: true });
    await explain('Retention batch with nothing to delete (cutoff before the oldest row)', RETENTION_SQL.audit_events, [new Date(now.getTime() - 1000 * 86_400_000), 5000], {
      rollback: true,
    });
    await explain('Retention batch without audit_events_created_idx (before this change)', RETENTION_SQL.audit_events, [cutoff, 5000], {
      without: 'audit_events_created_idx',
    });

    // A few real batches, committed one by one as the job runs them (without its pauses).
    const batchTimes: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = Date.now();
      await ds.query(RETENTION_SQL.audit_events, [cutoff, 5000]);
      batchTimes.push(Date.now() - t0);
    }
    batchTimes.sort((a, b) => a - b);
    out.push(
      `20 committed batches of 5,000 rows: median ${batchTimes[10]} ms, slowest ${batchTimes[19]} ms ` +
        `(${Math.round((5000 * 1000) / batchTimes[10]).toLocaleString('en')} rows/s before the 100 ms pauses).`,
      '',
    );

    if (process.env.BENCH_OTHER_TABLES !== '0') await otherTables(ds, now, explain, out, progress);
    out.push(`Total run time: ${seconds(Date.now() - started)}.`);
    process.stdout.write(out.join('\n') + '\n');
    await ds.destroy();
  } finally {
    await pg.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

interface ExplainOptions {
  /** Roll the statement back (a delete explained on the same data again later). */
  rollback?: boolean;
  /** Drop this index first, in the same rolled-back transaction ("before" plans). */
  without?: string;
  /** Statements run first in the same transaction (a batch's earlier steps). */
  setup?: { sql: string; params: unknown[] }[];
}
type Explain = (title: string, sql: string, params: unknown[], opts?: ExplainOptions) => Promise<void>;
/** Long id lists in plans are shortened to their count. */
const shortenArrays = (line: string) => line.replace(/'\{[0-9,]{100,}\}'/g, (m) => `'{... ${m.split(',').length} ids}'`);
const shortenParams = (params: unknown[]) => JSON.stringify(params.map((p) => (Array.isArray(p) && p.length > 10 ? `[... ${p.length} ids]` : p)));

/**
 * The other tables' retention statements on smaller volumes: 2,000,000 activity events (two years), 500,000
 * alerts (a fifth firing; the rest resolved, ended over two years) and 1,000,000 webhook events over 60 days
 * with one delivery each (delivered, failed, or for one expired event in a hundred still pending). Foreign key
 * triggers are off while loading (session_replication_role = replica): the rows reference organisations,
 * tenants and subscriptions that are not there, which the statements explained here never look at.
 */
async function otherTables(ds: DataSource, now: Date, explain: Explain, out: string[], progress: (msg: string) => void): Promise<void> {
  const runner = ds.createQueryRunner();
  await runner.connect();
  const loadStarted = Date.now();
  try {
    await runner.query(`SET session_replication_role = replica`);
    await runner.query(
      `INSERT INTO activity_events (organisation_id, type, message, actor_username, created_at)
       SELECT g % 1000 + 1, 'CLUSTER_UPDATED', 'Cluster web was updated', 'user-' || (g % 5000),
              $1::timestamptz - make_interval(secs => (2000000 - g) * (730 * 86400.0 / 2000000))
         FROM generate_series(1, 2000000) g`,
      [now],
    );
    progress('loaded activity_events');
    await runner.query(
      `INSERT INTO tenant_alerts (tenant_id, fingerprint, status, labels, starts_at, ends_at, created_at, modified_at)
       SELECT g % 2000 + 1, md5(g::text), CASE WHEN g % 5 = 0 THEN 'firing' ELSE 'resolved' END, '{"alertname":"A"}',
              t - interval '1 hour', CASE WHEN g % 5 = 0 THEN NULL ELSE t END, t - interval '1 hour', t
         FROM (SELECT g, $1::timestamptz - make_interval(secs => (500000 - g) * (730 * 86400.0 / 500000)) AS t
                 FROM generate_series(1, 500000) g) s`,
      [now],
    );
    progress('loaded tenant_alerts');
    await runner.query(
      `INSERT INTO webhook_events (organisation_id, type, source, data, created_at)
       SELECT g % 1000 + 1, 'CLUSTER_UPDATED', '/orgs/x', '{}'::jsonb,
              $1::timestamptz - make_interval(secs => (1000000 - g) * (60 * 86400.0 / 1000000))
         FROM generate_series(1, 1000000) g`,
      [now],
    );
    await runner.query(
      `INSERT INTO webhook_deliveries (subscription_id, event_id, status, attempts, next_attempt_at, created_at)
       SELECT e.id % 3000 + 1, e.id,
              CASE WHEN e.id % 100 = 0 AND e.created_at < $1::timestamptz - interval '30 days' THEN 'PENDING'
                   WHEN e.id % 10 = 0 THEN 'FAILED' ELSE 'DELIVERED' END,
              1, CASE WHEN e.id % 100 = 0 THEN $1::timestamptz + interval '1 hour' END, e.created_at
         FROM webhook_events e`,
      [now],
    );
    progress('loaded webhook_events and webhook_deliveries');
  } finally {
    await runner.query(`RESET session_replication_role`).catch(() => undefined);
    await runner.release();
  }
  await ds.query(`VACUUM ANALYZE activity_events, tenant_alerts, webhook_events, webhook_deliveries`);
  out.push(
    '### Other tables',
    '',
    `2,000,000 activity events over two years; 500,000 alerts (a fifth firing, the rest ended over two years); 1,000,000 ` +
      `webhook events over 60 days with one delivery each (1 % of the expired ones still PENDING). Load and VACUUM ANALYZE ` +
      `${seconds(Date.now() - loadStarted)}.`,
    '',
  );
  const days = (n: number) => new Date(now.getTime() - n * 86_400_000);
  await explain('Activity retention batch (90 days, 5,000 rows)', RETENTION_SQL.activity_events, [days(90), 5000], { rollback: true });
  await explain('Resolved alert retention batch (30 days, 5,000 rows)', RETENTION_SQL.tenant_alerts, [days(30), 5000], { rollback: true });
  await explain('Webhook retention batch: pick (30 days, 5,000 events)', RETENTION_SQL.webhook_events_pick, [days(30), 5000], { rollback: true });
  const ids = ((await ds.query(RETENTION_SQL.webhook_events_pick.replace(' FOR UPDATE OF e SKIP LOCKED', ''), [days(30), 5000])) as { id: number }[]).map(
    (r) => r.id,
  );
  await explain('Webhook retention batch: their deliveries', RETENTION_SQL.webhook_deliveries, [ids], { rollback: true });
  await explain('Webhook retention batch: the events (after their deliveries, same transaction)', RETENTION_SQL.webhook_events, [ids], {
    rollback: true,
    setup: [{ sql: RETENTION_SQL.webhook_deliveries, params: [ids] }],
  });
}

main().catch((e) => {
  process.stderr.write(`audit-explain failed: ${(e as Error).stack}\n`);
  process.exit(1);
});
