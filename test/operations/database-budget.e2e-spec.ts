import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { buildDataSourceOptions, runMigrationsLocked } from '../../src/database/data-source-options';
import { EmbeddedDatabase, startEmbeddedPostgres } from '../../src/database/embedded-postgres';
import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';

// Short, yet long enough that 20% of it (400 ms) absorbs a loaded machine's scheduling delays.
const BUDGET_MS = 2000;

/** The postmaster and every process it started (backends, checkpointer, ...), from /proc. */
function postgresProcesses(postmaster: number): number[] {
  const pids = [postmaster];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === postmaster) pids.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return pids;
}

function signalPostgres(postmaster: number, signal: 'SIGSTOP' | 'SIGCONT'): void {
  for (const pid of postgresProcesses(postmaster)) {
    try {
      process.kill(pid, signal);
    } catch {
      // ended meanwhile
    }
  }
}

/**
 * A hung database: its own PostgreSQL, stopped with SIGSTOP (postmaster and backends), so connections are
 * accepted by the kernel and statements are sent, but nothing answers.
 */
describe('DATABASE_TIMEOUT_MS bounds the whole wait of a request on the database', () => {
  jest.setTimeout(180_000);
  let dataDir: string;
  let db: EmbeddedDatabase;
  let postmaster: number;
  let t: TestApp;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cms-hung-'));
    db = await startEmbeddedPostgres(dataDir, undefined, { fsync: false, superviseEveryMs: 600_000 });
    postmaster = Number(fs.readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const admin = new Client({ connectionString: db.url });
    await admin.connect();
    await admin.query('CREATE DATABASE budget');
    await admin.end();
    const url = new URL(db.url);
    url.pathname = '/budget';
    // Migrations first, with room to spare on a loaded machine; the app then starts with the short budget.
    const ds = await new DataSource(buildDataSourceOptions(url.toString(), { timeoutMs: 60_000 })).initialize();
    await runMigrationsLocked(ds);
    await ds.destroy();
    t = await startTestApp({ DATABASE_TIMEOUT_MS: String(BUDGET_MS), DATABASE_POOL_SIZE: '2' }, url.toString());
  });

  afterAll(async () => {
    signalPostgres(postmaster, 'SIGCONT');
    await t?.close();
    await db?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers every request 503 (its database budget spent) while PostgreSQL is stopped, and recovers after SIGCONT', async () => {
    // Both pooled connections are open and idle before the database stops.
    await Promise.all([t.admin().get('/sts/v1/personal-access-tokens').expect(200), t.admin().get('/api/v1/memberships').expect(200)]);

    signalPostgres(postmaster, 'SIGSTOP');
    const timed = async (send: () => PromiseLike<{ status: number; body: Record<string, unknown> }>) => {
      const started = performance.now();
      const res = await send();
      return { status: res.status, body: res.body, ms: performance.now() - started };
    };
    // More requests than connections: some wait for a statement (and then its ROLLBACK), some for a connection.
    const round = () => [
      timed(() => t.admin().get('/sts/v1/personal-access-tokens')),
      timed(() => t.admin().post('/sts/v1/personal-access-tokens').send({ name: 'during-hang' })),
      timed(() => t.admin().get('/api/v1/memberships')),
      timed(() => t.admin().post('/sts/v1/personal-access-tokens').send({ name: 'during-hang' })),
      timed(() => t.admin().get('/sts/v1/personal-access-tokens')),
      timed(() => t.admin().get('/api/v1/memberships')),
    ];
    const first = await Promise.all(round());
    // Then with the hung connections discarded: new connections are opened and never answered.
    const second = await Promise.all(round());
    const single = await timed(() => t.admin().post('/sts/v1/personal-access-tokens').send({ name: 'during-hang' }));
    // A stopped PostgreSQL never answers: every answer here is the budget firing (one budget for all of a request's
    // waits, added up as test/unit/database-wait-budget.spec.ts shows; how close to it a loaded machine answers is
    // not a test's to assert).
    for (const res of [...first, ...second, single]) {
      expect(res.status).toBe(503);
      expectErrorBody(res.body, 503);
    }
    if (process.env.CMS_TEST_VERBOSE) process.stdout.write(`waits: ${[...first, ...second, single].map((r) => Math.round(r.ms)).join(' ')} ms\n`);
    await t.http().get('/health').expect(200);

    signalPostgres(postmaster, 'SIGCONT');
    let recovered = 0;
    for (let i = 0; i < 100 && recovered !== 200; i++) {
      recovered = (await t.admin().get('/sts/v1/personal-access-tokens')).status;
      if (recovered !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(recovered).toBe(200);
    await t.admin().post('/sts/v1/personal-access-tokens').send({ name: 'after-hang' }).expect(200);
    // Nothing a refused request began was committed later by another request on a reused connection.
    const rows = await t.db.query(`SELECT name, count(*)::int AS n FROM personal_access_tokens WHERE name IN ('during-hang', 'after-hang') GROUP BY name`);
    expect(rows).toEqual([{ name: 'after-hang', n: 1 }]);
  });
});
