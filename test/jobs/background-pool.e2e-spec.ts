import { Client } from 'pg';
import type { DataSource, QueryRunner } from 'typeorm';
import { BACKGROUND_APPLICATION_NAME, BACKGROUND_DATA_SOURCE } from '../../src/database/background-pool';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, reconciler } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * Requests and background loops have a connection pool each (src/database/background-pool.ts): with one pool's
 * connections all held, the other side still works, and a background step's shared services (audit, activity)
 * write in the step's own transaction on the background pool.
 */
describe('background connection pool', () => {
  let t: TestApp;
  let f: OrgFixture;
  let observer: Client;
  const held: QueryRunner[] = [];

  /** Takes every connection of a pool (size `n`) until `releaseAll`. */
  async function exhaust(ds: DataSource, n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const runner = ds.createQueryRunner();
      await runner.connect();
      await runner.query('SELECT 1');
      held.push(runner);
    }
  }
  async function releaseAll(): Promise<void> {
    await Promise.all(held.splice(0).map((r) => r.release()));
  }

  beforeAll(async () => {
    t = await startTestApp({ DATABASE_POOL_SIZE: '2', BACKGROUND_DATABASE_POOL_SIZE: '2', DATABASE_TIMEOUT_MS: '1500' });
    f = await createOrgFixture(t);
    observer = new Client({ connectionString: t.databaseUrl });
    await observer.connect();
  });
  afterEach(releaseAll);
  afterAll(async () => {
    await observer.end();
    if (t) await t.close();
  });

  it('a reconciler step runs and is audited in its own transaction while every request connection is taken', async () => {
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'pooled' }));
    expect(res.status).toBe(200);
    await exhaust(t.db, 2);
    // A request now waits for a connection and gives up after DATABASE_TIMEOUT_MS...
    const blocked = await t.as(f.users.member.token).get(`${clustersPath(f)}/pooled`);
    expect(blocked.status).toBe(503);
    // ...while the reconciler claims, calls the driver and records on the background pool.
    expect(await reconciler(t).runOnce()).toBe(1);
    const { rows: [cluster] } = await observer.query(`SELECT status, reconcile_lease_token FROM clusters WHERE slug = 'pooled' AND organisation_id = $1`, [f.orgId]);
    expect(cluster).toEqual({ status: 'provisioning', reconcile_lease_token: null });
    const { rows: audits } = await observer.query(
      `SELECT type, details->'step'->>'new' AS step FROM audit_events WHERE cluster_slug = 'pooled' AND actor_username = 'system'`,
    );
    expect(audits).toEqual([{ type: 'CLUSTER_PROVISIONING_STEP_COMPLETED', step: 'provisioning' }]);
    const { rows: [{ n }] } = await observer.query(`SELECT count(*)::int AS n FROM activity_events WHERE organisation_id = $1 AND actor_username = 'system'`, [
      f.orgId,
    ]);
    expect(n).toBe(1);
    const { rows: sessions } = await observer.query(`SELECT DISTINCT application_name FROM pg_stat_activity WHERE datname = current_database()`);
    expect(sessions.map((s: { application_name: string }) => s.application_name)).toContain(BACKGROUND_APPLICATION_NAME);
  });

  it('requests are served while every background connection is taken', async () => {
    await exhaust(t.app.get<DataSource>(BACKGROUND_DATA_SOURCE), 2);
    const res = await t.as(f.users.member.token).get(`${clustersPath(f)}/pooled`);
    // Served from the request pool: waiting for a background connection would have answered 503 after
    // DATABASE_TIMEOUT_MS (1.5 s).
    expect(res.status).toBe(200);
    expect(res.body.name).toBe('pooled');
    // A background pass, by contrast, cannot get a connection now.
    await expect(reconciler(t).runOnce()).rejects.toThrow();
  });

  it('both pools close with the application', async () => {
    const background = t.app.get<DataSource>(BACKGROUND_DATA_SOURCE);
    const requests = t.db;
    expect(background.isInitialized).toBe(true);
    expect(background.options).toMatchObject({ extra: { max: 2, application_name: BACKGROUND_APPLICATION_NAME } });
    await t.close();
    expect(background.isInitialized).toBe(false);
    expect(requests.isInitialized).toBe(false);
    t = undefined as unknown as TestApp;
  });
});
