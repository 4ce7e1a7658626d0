import 'reflect-metadata';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { CatalogLoader } from '../src/catalog/catalog-loader.service';
import { clusterInEnvironment, clusterPage, clusterViews, CLUSTER_SELECT, Sql } from '../src/clusters/cluster-read';
import { Clock } from '../src/common/clock';
import { buildDataSourceOptions, runMigrationsLocked } from '../src/database/data-source-options';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres';
import { seedClusters } from './seed';

/**
 * npm run bench:explain — EXPLAIN (ANALYZE, BUFFERS) of the hot statements, captured by running the
 * service's own read functions (src/clusters/cluster-read.ts) with an Sql function that explains each
 * statement. Prints Markdown for docs/performance-history.md.
 */
async function main(): Promise<void> {
  const size = Number(process.env.BENCH_SIZE ?? 100000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cms-explain-'));
  const pg = await startEmbeddedPostgres(dir);
  try {
    const admin = new Client({ connectionString: pg.url });
    await admin.connect();
    await admin.query('CREATE DATABASE explain');
    await admin.end();
    const u = new URL(pg.url);
    u.pathname = '/explain';
    const ds = await new DataSource(buildDataSourceOptions(u.toString())).initialize();
    await runMigrationsLocked(ds);
    const loader = new CatalogLoader(ds, new Clock());
    await loader.onApplicationBootstrap();
    await ds.query(`INSERT INTO users (username, email, platform_admin, can_create_organisations, created_at, modified_at) VALUES ('admin', 'admin@localhost', true, true, now(), now())`);
    const seed = await seedClusters(u.toString(), size);
    const [org] = await ds.query(`SELECT id FROM organisations WHERE slug = $1`, [seed.organisationSlug]);
    const out: string[] = [`Data: ${size} clusters in one organisation, two node pools each (bench/seed.ts).`, ''];
    let current = '';
    const explain: Sql = async (text, params) => {
      const plan = await ds.query(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params as unknown[]);
      out.push(`#### ${current}`, '', '```sql', text.replace(/\s+\n/g, '\n').trim(), '```', '', '```', ...plan.map((r: Record<string, string>) => r['QUERY PLAN']), '```', '');
      return ds.query(text, params as unknown[]);
    };
    current = 'List page 100 (size 50): rows and the kept count, one statement';
    const { rows } = await clusterPage(explain, { organisationId: org.id }, [['c.id', 'ASC']], 50, 5000);
    const [account] = await ds.query(`SELECT id FROM cloud_accounts WHERE organisation_id = $1`, [org.id]);
    current = 'List page 100 of a cloud account (every cluster of the data): rows and count(*), one statement';
    await clusterPage(explain, { organisationId: org.id, cloudAccountId: Number(account.id) }, [['c.id', 'ASC']], 50, 5000);
    current = 'Not used, for comparison: the same page with a window count(*) OVER ()';
    await explain(
      `SELECT count(*) OVER () AS total, ${CLUSTER_SELECT} FROM clusters c
        WHERE c.deleted_at IS NULL AND c.organisation_id = $1 AND c.cloud_account_id = $2 ORDER BY c.id ASC LIMIT 50 OFFSET 5000`,
      [org.id, account.id],
    );
    current = 'List page 100: every referenced row of the 50 clusters, one statement';
    await clusterViews(explain, rows, { showCompute: true });
    current = 'Get one: the cluster and its environment by slugs';
    await clusterInEnvironment(explain, org.id, seed.environmentSlug, seed.clusterSlugs[7]);
    process.stdout.write(out.join('\n') + '\n');
    await ds.destroy();
  } finally {
    await pg.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`explain failed: ${(e as Error).stack}\n`);
  process.exit(1);
});
