import { CLUSTER_DRIVER, ClusterDriver } from '../../src/provisioning/cluster-driver';
import { ReconcilerService } from '../../src/provisioning/reconciler.service';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, reconciler, settle } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

async function createCluster(t: TestApp, f: OrgFixture, name: string, extra: Record<string, unknown> = {}) {
  const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name, ...extra }));
  expect(res.status).toBe(200);
  return res.body as { id: number; identity: string };
}

async function row(t: TestApp, slug: string) {
  const [r] = await t.db.query(
    `SELECT id, status, provision_status, status_before_fault, last_error, attempts, next_attempt_at, observed_status, observed_version
       FROM clusters WHERE slug = $1 AND deleted_at IS NULL`,
    [slug],
  );
  return r;
}

async function fault(t: TestApp, slug: string, step: string, remaining = 1) {
  await t.db.query(
    `INSERT INTO simulated_driver_faults (cluster_id, step, remaining, created_at) SELECT id, $2, $3, now() FROM clusters WHERE slug = $1 AND deleted_at IS NULL`,
    [slug, step, remaining],
  );
}

describe('provisioning reconciler', () => {
  let t: TestApp;
  let f: OrgFixture;

  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
  });
  afterAll(() => t.close());

  it('a failed driver step sets unknown with the error and a backoff; the next successful observation recovers and continues', async () => {
    await createCluster(t, f, 'flaky');
    await fault(t, 'flaky', 'CLUSTER_PROVISIONED');
    await reconciler(t).runOnce(); // provisioning/ACCEPTED
    await reconciler(t).runOnce(); // OIDC_PROVISIONED
    expect(await reconciler(t).runOnce()).toBe(1); // CLUSTER_PROVISIONED fails
    const failed = await row(t, 'flaky');
    expect(failed).toMatchObject({
      status: 'unknown',
      provision_status: 'OIDC_PROVISIONED',
      status_before_fault: 'provisioning',
      last_error: 'Simulated driver failure in step CLUSTER_PROVISIONED',
      attempts: 1,
      observed_status: 'unknown',
    });
    expect(failed.next_attempt_at.getTime()).toBeGreaterThan(t.clock.now().getTime());
    const seen = await t.as(f.users.viewer.token).get(`${clustersPath(f)}/flaky?includeDetails=true`);
    expect(seen.body).toMatchObject({ status: 'unknown', actualState: { status: 'unknown' } });
    // a cluster in unknown may only be deleted
    const stop = await t.as(f.users.member.token).patch(`${clustersPath(f)}/flaky`).send({ status: 'stopping' });
    expect(stop.status).toBe(409);

    expect(await reconciler(t).runOnce()).toBe(0); // backoff not over
    t.clock.advance(6_000);
    expect(await reconciler(t).runOnce()).toBe(1); // observed healthy: recovered
    expect(await row(t, 'flaky')).toMatchObject({ status: 'provisioning', provision_status: 'OIDC_PROVISIONED', status_before_fault: null, last_error: null, attempts: 0 });
    expect(await reconciler(t).runOnce()).toBe(1); // the step is retried and succeeds
    expect((await row(t, 'flaky')).provision_status).toBe('CLUSTER_PROVISIONED');
    await settle(t);
    expect(await row(t, 'flaky')).toMatchObject({ status: 'started', provision_status: 'DONE' });

    const events = await t.db.query(
      `SELECT type, details FROM audit_events WHERE cluster_slug = 'flaky' AND type IN ('CLUSTER_FAILED', 'CLUSTER_RECOVERED') ORDER BY id`,
    );
    expect(events).toEqual([
      {
        type: 'CLUSTER_FAILED',
        details: {
          status: { old: 'provisioning', new: 'unknown' },
          step: { old: null, new: 'CLUSTER_PROVISIONED' },
          error: { old: null, new: 'Simulated driver failure in step CLUSTER_PROVISIONED' },
        },
      },
      { type: 'CLUSTER_RECOVERED', details: { status: { old: 'unknown', new: 'provisioning' } } },
    ]);
    const [activity] = await t.db.query(`SELECT message, actor_username FROM activity_events WHERE type = 'CLUSTER_FAILED'`);
    expect(activity).toEqual({ actor_username: 'system', message: expect.stringContaining('production/flaky') });
    const [{ remaining }] = await t.db.query(`SELECT remaining FROM simulated_driver_faults WHERE step = 'CLUSTER_PROVISIONED'`);
    expect(remaining).toBe(0);
  });

  it('lost contact keeps the cluster unknown with growing backoff until an observation succeeds', async () => {
    await createCluster(t, f, 'remote');
    await fault(t, 'remote', 'provisioning');
    await fault(t, 'remote', 'observe', 2);
    expect(await reconciler(t).runOnce()).toBe(1);
    expect(await row(t, 'remote')).toMatchObject({ status: 'unknown', status_before_fault: 'new', attempts: 1 });
    t.clock.advance(6_000);
    expect(await reconciler(t).runOnce()).toBe(0); // observation fails: still unknown
    expect(await row(t, 'remote')).toMatchObject({ status: 'unknown', attempts: 2, last_error: 'Simulated driver lost contact with the cluster' });
    t.clock.advance(11_000);
    await reconciler(t).runOnce();
    expect((await row(t, 'remote')).attempts).toBe(3);
    t.clock.advance(21_000);
    expect(await reconciler(t).runOnce()).toBe(1);
    expect(await row(t, 'remote')).toMatchObject({ status: 'new', attempts: 0 });
    await settle(t);
    expect((await row(t, 'remote')).status).toBe('started');
  });

  it('a cluster in unknown can be deleted', async () => {
    await createCluster(t, f, 'doomed');
    await fault(t, 'doomed', 'provisioning');
    await reconciler(t).runOnce();
    expect((await row(t, 'doomed')).status).toBe('unknown');
    const del = await t.as(f.users.member.token).delete(`${clustersPath(f)}/doomed`);
    expect(del.status).toBe(200);
    await settle(t);
    expect(await row(t, 'doomed')).toBeUndefined();
    const [gone] = await t.db.query(`SELECT status FROM clusters WHERE slug = 'doomed'`);
    expect(gone.status).toBe('deleted');
  });

  it('upgrades a started cluster (CLUSTER_UPGRADED); a failed upgrade leaves unknown with last_error, then retries', async () => {
    await createCluster(t, f, 'upgradable');
    await settle(t);
    await fault(t, 'upgradable', 'upgrade');
    const res = await t.as(f.users.member.token).patch(`${clustersPath(f)}/upgradable`).send({ version: '1.31.6' });
    expect(res.status).toBe(200);
    expect(await reconciler(t).runOnce()).toBe(1);
    expect(await row(t, 'upgradable')).toMatchObject({
      status: 'unknown',
      status_before_fault: 'started',
      last_error: 'Simulated driver failure in step upgrade',
      observed_version: '1.31.5',
    });
    t.clock.advance(6_000);
    await reconciler(t).runOnce(); // recovered to started
    expect((await row(t, 'upgradable')).status).toBe('started');
    await reconciler(t).runOnce(); // upgrade again, succeeds
    expect(await row(t, 'upgradable')).toMatchObject({ status: 'started', observed_version: '1.31.6', last_error: null });
    expect(await reconciler(t).runOnce()).toBe(0);
    const types = await t.db.query(`SELECT type FROM audit_events WHERE cluster_slug = 'upgradable' AND actor_username = 'system' AND type IN ('CLUSTER_FAILED','CLUSTER_RECOVERED','CLUSTER_UPGRADED') ORDER BY id`);
    expect(types.map((x: { type: string }) => x.type)).toEqual(['CLUSTER_FAILED', 'CLUSTER_RECOVERED', 'CLUSTER_UPGRADED']);
  });

  it('observes settled clusters periodically: lost contact sets unknown, the next successful observation recovers', async () => {
    await createCluster(t, f, 'watched');
    await settle(t);
    const before = await t.db.query(`SELECT observed_at FROM clusters WHERE slug = 'watched'`);
    expect(await reconciler(t).runOnce()).toBe(0); // observed moments ago: nothing to do
    t.clock.advance(61_000);
    expect(await reconciler(t).runOnce()).toBe(0); // healthy: only actualState is refreshed
    const after = await t.db.query(`SELECT observed_at FROM clusters WHERE slug = 'watched'`);
    expect(after[0].observed_at.getTime()).toBeGreaterThan(before[0].observed_at.getTime());

    await fault(t, 'watched', 'observe');
    t.clock.advance(61_000);
    expect(await reconciler(t).runOnce()).toBeGreaterThanOrEqual(1);
    expect(await row(t, 'watched')).toMatchObject({ status: 'unknown', status_before_fault: 'started', last_error: 'Simulated driver lost contact with the cluster' });
    t.clock.advance(6_000);
    await reconciler(t).runOnce();
    expect(await row(t, 'watched')).toMatchObject({ status: 'started', status_before_fault: null, last_error: null });
    const types = await t.db.query(`SELECT type, details->'step'->>'new' AS step FROM audit_events WHERE cluster_slug = 'watched' AND type IN ('CLUSTER_FAILED', 'CLUSTER_RECOVERED') ORDER BY id`);
    expect(types).toEqual([
      { type: 'CLUSTER_FAILED', step: 'observe' },
      { type: 'CLUSTER_RECOVERED', step: null },
    ]);
  });

  it('an unexpected error while reconciling one cluster rolls its step back, backs off, and does not stop the pass', async () => {
    await createCluster(t, f, 'crashy');
    await createCluster(t, f, 'steady');
    const driver = t.app.get<ClusterDriver>(CLUSTER_DRIVER as never);
    const original = driver.apply.bind(driver);
    let thrown = false;
    const spy = jest.spyOn(driver, 'apply').mockImplementation(async (req) => {
        const { cluster: c, operation: { step } } = req;
      if (c.slug === 'crashy' && !thrown) {
        thrown = true;
        throw new Error('boom');
      }
      return original(req);
    });
    try {
      expect(await reconciler(t).runOnce()).toBe(1); // steady moved, crashy did not
      expect(await row(t, 'crashy')).toMatchObject({ status: 'new', last_error: 'Internal error while reconciling: boom', attempts: 1 });
      expect((await row(t, 'crashy')).next_attempt_at.getTime()).toBeGreaterThan(t.clock.now().getTime());
      expect((await row(t, 'steady')).status).toBe('provisioning');
      const audits = await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE cluster_slug = 'crashy' AND actor_username = 'system'`);
      expect(audits[0].n).toBe(0);
    } finally {
      spy.mockRestore();
    }
    t.clock.advance(11_000);
    await settle(t);
    expect(await row(t, 'crashy')).toMatchObject({ status: 'started', last_error: null, attempts: 0 });
  });

  it('compute sums: clusters, environment and organisation totals over non-deleted clusters', async () => {
    const g = await createOrgFixture(t);
    await createCluster(t, g, 'small', { nodePools: [{ name: 'a', nodeSize: 't3.medium', minSize: 3, maxSize: 5 }] }); // 3 x (2, 4096)
    await createCluster(t, g, 'big', {
      nodePools: [
        { name: 'a', nodeSize: 'r5.xlarge', minSize: 2, maxSize: 2 }, // 2 x (4, 32768)
        { name: 'b', nodeSize: 'c5.2xlarge', minSize: 0, maxSize: 9 }, // 0
      ],
    });
    const list = await t.as(g.users.viewer.token).get(`${clustersPath(g)}?show-compute=true&sort=name`);
    expect(list.body.content.map((c: { name: string; cpu: number; memory: number }) => [c.name, c.cpu, c.memory])).toEqual([
      ['big', 8, 65536],
      ['small', 6, 12288],
    ]);
    const env = await t.as(g.users.viewer.token).get(`/api/v1/orgs/${g.orgSlug}/environments/${g.envSlug}?show-compute=true`);
    expect(env.status).toBe(200);
    expect(env.body).toMatchObject({ totalClusters: 2, totalCpu: 14, totalMemory: 77824 });
    const org = await t.as(g.users.viewer.token).get(`/api/v1/compute-information/organisation/${g.orgSlug}`);
    expect(org.status).toBe(200);
    expect(org.body).toEqual({ totalClusters: 2, totalCpu: 14, totalMemory: 77824 });
    await settle(t);
    await t.as(g.users.member.token).delete(`${clustersPath(g)}/small`);
    await settle(t);
    const after = await t.as(g.users.viewer.token).get(`/api/v1/compute-information/organisation/${g.orgSlug}`);
    expect(after.body).toEqual({ totalClusters: 1, totalCpu: 8, totalMemory: 65536 });
  });
});

describe('provisioning reconciler: time, replicas and the background loop', () => {
  it('completes a step only after PROVISIONING_STEP_SECONDS (Clock), then one step per pass', async () => {
    const t = await startTestApp({ PROVISIONING_STEP_SECONDS: '30' });
    try {
      const f = await createOrgFixture(t);
      await createCluster(t, f, 'slow');
      expect(await reconciler(t).runOnce()).toBe(0);
      const pending = await row(t, 'slow');
      expect(pending.status).toBe('new');
      expect(pending.next_attempt_at).not.toBeNull();
      t.clock.advance(31_000);
      expect(await reconciler(t).runOnce()).toBe(1);
      expect((await row(t, 'slow')).status).toBe('provisioning');
      expect(await reconciler(t).runOnce()).toBe(0);
      t.clock.advance(31_000);
      expect(await reconciler(t).runOnce()).toBe(1);
      expect((await row(t, 'slow')).provision_status).toBe('OIDC_PROVISIONED');
    } finally {
      await t.close();
    }
  });

  it('two reconciler instances on one database never apply a step twice', async () => {
    const a = await startTestApp();
    const b = await startTestApp({}, a.databaseUrl);
    try {
      const f = await createOrgFixture(a);
      const names = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6'];
      for (const n of names) await createCluster(a, f, n);
      const ra = a.get(ReconcilerService);
      const rb = b.get(ReconcilerService);
      for (let i = 0; i < 14; i++) await Promise.all([ra.runOnce(), rb.runOnce(), ra.runOnce(), rb.runOnce()]);
      // stop them all concurrently too
      for (const n of names) await a.as(f.users.member.token).patch(`${clustersPath(f)}/${n}`).send({ status: 'stopping' });
      for (let i = 0; i < 4; i++) await Promise.all([ra.runOnce(), rb.runOnce(), ra.runOnce(), rb.runOnce()]);

      const states = await a.db.query(`SELECT slug, status FROM clusters WHERE organisation_id = $1 ORDER BY slug`, [f.orgId]);
      expect(states).toEqual(names.map((slug) => ({ slug, status: 'stopped' })));
      const perStep = await a.db.query(
        `SELECT cluster_slug, details->'step'->>'new' AS step, count(*)::int AS n
           FROM audit_events WHERE organisation_id = $1 AND actor_username = 'system'
          GROUP BY 1, 2`,
        [f.orgId],
      );
      expect(perStep).toHaveLength(names.length * 11);
      for (const s of perStep) expect(s).toMatchObject({ n: 1 });
      const [{ audits }] = await a.db.query(`SELECT count(*)::int AS audits FROM audit_events WHERE organisation_id = $1 AND actor_username = 'system'`, [f.orgId]);
      const [{ activities }] = await a.db.query(`SELECT count(*)::int AS activities FROM activity_events WHERE organisation_id = $1 AND actor_username = 'system'`, [f.orgId]);
      expect(audits).toBe(names.length * 11);
      expect(activities).toBe(audits);
    } finally {
      await b.close();
      await a.close();
    }
  });

  it('the background loop drives clusters to started when BACKGROUND_JOBS_ENABLED, and stops with the app', async () => {
    const t = await startTestApp({ BACKGROUND_JOBS_ENABLED: 'true', RECONCILE_INTERVAL_SECONDS: '0.05' });
    try {
      const f = await createOrgFixture(t);
      await createCluster(t, f, 'auto');
      const deadline = Date.now() + 15_000;
      let status = '';
      while (Date.now() < deadline) {
        status = (await row(t, 'auto')).status;
        if (status === 'started') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(status).toBe('started');
    } finally {
      await t.close();
    }
  });
});
