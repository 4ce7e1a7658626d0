import type { DesiredClusterSpec } from '../../src/cluster-drivers/driver-contract';
import { CLUSTER_DRIVER, ClusterDriver } from '../../src/provisioning/cluster-driver';
import { OBSERVE_BATCH_SIZE, ReconcilerService } from '../../src/provisioning/reconciler.service';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, reconciler, settle } from '../clusters/cluster-fixtures';
import { createTestDatabase, startTestApp, TestApp } from '../support/test-app';

/** Steps from `new` to `started`: provisioning, five provisioning steps, provisioned, starting, started. */
const STEPS_TO_STARTED = 9;

async function createClusters(t: TestApp, f: OrgFixture, names: string[]): Promise<void> {
  for (const name of names) {
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name }));
    expect(res.status).toBe(200);
  }
}

const driverOf = (t: TestApp) => t.app.get<ClusterDriver>(CLUSTER_DRIVER as never);

async function statuses(t: TestApp, f: OrgFixture): Promise<string[]> {
  const rows: { status: string }[] = await t.db.query(`SELECT status FROM clusters WHERE organisation_id = $1 AND deleted_at IS NULL ORDER BY slug`, [f.orgId]);
  return rows.map((r) => r.status);
}

/** Audit rows written by the reconciler, per cluster and step: each must be 1. */
async function stepsPerCluster(t: TestApp, f: OrgFixture): Promise<{ cluster_slug: string; step: string; n: number }[]> {
  return t.db.query(
    `SELECT cluster_slug, details->'step'->>'new' AS step, count(*)::int AS n
       FROM audit_events WHERE organisation_id = $1 AND actor_username = 'system' GROUP BY 1, 2`,
    [f.orgId],
  );
}

/** Copies the row of `slug` n times (slugs bulk-1..bulk-n), observed long ago with distinct ages (bulk-n oldest). */
async function cloneSettledClusters(t: TestApp, slug: string, n: number): Promise<void> {
  const columns: { column_name: string }[] = await t.db.query(
    `SELECT column_name FROM information_schema.columns WHERE table_name = 'clusters' AND column_name NOT IN ('id', 'identity', 'slug', 'name', 'observed_at')`,
  );
  const list = columns.map((c) => c.column_name).join(', ');
  await t.db.query(
    `INSERT INTO clusters (slug, name, observed_at, ${list})
     SELECT 'bulk-' || g, 'bulk-' || g, $2::timestamptz - make_interval(secs => 120 + g), ${list}
       FROM clusters, generate_series(1, $3) g WHERE slug = $1 AND deleted_at IS NULL`,
    [slug, t.clock.now(), n],
  );
}

describe('reconciler worker pool', () => {
  it('overlaps driver latency: 20 clusters reach started with 8 workers far faster than one after another', async () => {
    const latencyMs = 300;
    const t = await startTestApp({ SIMULATED_DRIVER_LATENCY_MS: String(latencyMs), RECONCILE_CONCURRENCY: '8' });
    try {
      const f = await createOrgFixture(t, { quota: 100 });
      const names = Array.from({ length: 20 }, (_, i) => `pool-${String(i).padStart(2, '0')}`);
      await createClusters(t, f, names);
      const driver = driverOf(t);
      const original = driver.apply.bind(driver);
      let inFlight = 0;
      let maxInFlight = 0;
      const spy = jest.spyOn(driver, 'apply').mockImplementation(async (req) => {
        const { cluster: c, operation: { step } } = req;
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        try {
          return await original(req);
        } finally {
          inFlight--;
        }
      });
      try {
        await settle(t, 40);
      } finally {
        spy.mockRestore();
      }
      expect(await statuses(t, f)).toEqual(names.map(() => 'started'));
      // The calls overlapped, eight at a time (how much faster that is than one after another: the benchmarks).
      expect(maxInFlight).toBe(8);
      const perStep = await stepsPerCluster(t, f);
      expect(perStep).toHaveLength(names.length * STEPS_TO_STARTED);
      for (const s of perStep) expect(s.n).toBe(1);
    } finally {
      await t.close();
    }
  });

  it('two replicas with worker pools and driver latency still perform each step exactly once', async () => {
    const url = await createTestDatabase();
    const env = { SIMULATED_DRIVER_LATENCY_MS: '50', RECONCILE_CONCURRENCY: '6' };
    const a = await startTestApp(env, url);
    const b = await startTestApp(env, url);
    try {
      const f = await createOrgFixture(a, { quota: 100 });
      const names = Array.from({ length: 12 }, (_, i) => `twin-${String(i).padStart(2, '0')}`);
      await createClusters(a, f, names);
      const [ra, rb] = [a.get(ReconcilerService), b.get(ReconcilerService)];
      const by = [0, 0];
      let idle = 0;
      for (let round = 0; round < 40 && idle < 2; round++) {
        const moved = await Promise.all([ra.runOnce(), rb.runOnce(), ra.runOnce(), rb.runOnce()]);
        by[0] += moved[0] + moved[2];
        by[1] += moved[1] + moved[3];
        idle = moved.every((n) => n === 0) ? idle + 1 : 0;
      }
      expect(await statuses(a, f)).toEqual(names.map(() => 'started'));
      const perStep = await stepsPerCluster(a, f);
      expect(perStep).toHaveLength(names.length * STEPS_TO_STARTED);
      for (const s of perStep) expect(s.n).toBe(1);
      expect(by[0] + by[1]).toBe(names.length * STEPS_TO_STARTED);
      expect(by[0]).toBeGreaterThan(0);
      expect(by[1]).toBeGreaterThan(0);
      const [{ leases }] = await a.db.query(`SELECT count(*)::int AS leases FROM clusters WHERE reconcile_lease_token IS NOT NULL`);
      expect(leases).toBe(0);
    } finally {
      await b.close();
      await a.close();
    }
  });
});

describe('a hung driver call', () => {
  it('does not hold back the other clusters; it is given up after half the lease and that cluster backs off', async () => {
    const t = await startTestApp({ RECONCILE_CONCURRENCY: '4', RECONCILE_LEASE_SECONDS: '2' });
    try {
      const f = await createOrgFixture(t, { quota: 100 });
      const others = ['free-1', 'free-2', 'free-3', 'free-4', 'free-5'];
      await createClusters(t, f, ['stuck', ...others]);
      const driver = driverOf(t);
      const original = driver.apply.bind(driver);
      let hung: Promise<unknown> = Promise.resolve();
      const spy = jest.spyOn(driver, 'apply').mockImplementation(async (req) => {
        const { cluster: c, operation: { step } } = req;
        if (c.slug === 'stuck') {
          hung = new Promise((r) => setTimeout(r, 2500)); // answers long after the 1 s limit
          await hung;
        }
        return original(req);
      });
      try {
        const started = Date.now();
        let hungAnswered = false;
        const pass = reconciler(t).runOnce();
        // While the stuck call hangs, the other clusters make their step.
        const meanwhile = async () =>
          (
            (await t.db.query(`SELECT status FROM clusters WHERE organisation_id = $1 AND slug <> 'stuck' ORDER BY slug`, [f.orgId])) as { status: string }[]
          ).every((r) => r.status === 'provisioning');
        for (let ok = false; !ok; ) if (!(ok = await meanwhile())) await new Promise((r) => setTimeout(r, 50));
        void hung.then(() => (hungAnswered = true));
        expect(hungAnswered).toBe(false);
        expect(await pass).toBe(others.length);
        // The pass ended at the call's limit (1 s), not when the hung call answered (2.5 s).
        expect(Date.now() - started).toBeGreaterThanOrEqual(900);
        expect(hungAnswered).toBe(false);
        await hung; // the abandoned call answers late; its answer is dropped
      } finally {
        spy.mockRestore();
      }
      const [stuck] = await t.db.query(
        `SELECT status, attempts, last_error, next_attempt_at, reconcile_lease_until, reconcile_lease_token FROM clusters WHERE slug = 'stuck' AND organisation_id = $1`,
        [f.orgId],
      );
      expect(stuck).toMatchObject({
        status: 'new',
        attempts: 1,
        last_error: 'Internal error while reconciling: The cluster driver did not answer provisioning within 1 s',
      });
      expect(stuck.next_attempt_at.getTime()).toBeGreaterThan(t.clock.now().getTime());
      // The abandoned call might still be working: the lease is kept until it runs out.
      expect(stuck.reconcile_lease_token).not.toBeNull();
      expect(stuck.reconcile_lease_until.getTime()).toBeGreaterThan(t.clock.now().getTime() - 1000);
      const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE cluster_slug = 'stuck' AND actor_username = 'system'`);
      expect(n).toBe(0);
      // After its backoff it is driven like the others.
      t.clock.advance(11_000);
      await settle(t);
      expect(await statuses(t, f)).toEqual(['started', 'started', 'started', 'started', 'started', 'started']);
    } finally {
      await t.close();
    }
  });
});

describe('reconciler leases: claim, call outside a transaction, record', () => {
  let t: TestApp;
  let f: OrgFixture;
  beforeAll(async () => {
    t = await startTestApp({ RECONCILE_LEASE_SECONDS: '60' });
    f = await createOrgFixture(t, { quota: 100 });
  });
  afterAll(() => t.close());

  const row = async (slug: string) =>
    (
      await t.db.query(
        `SELECT status, provision_status, desired_status, reconcile_lease_until, reconcile_lease_token FROM clusters WHERE slug = $1 AND organisation_id = $2`,
        [slug, f.orgId],
      )
    )[0];

  it('the driver is called while no transaction holds the cluster row', async () => {
    await createClusters(t, f, ['unlocked']);
    const driver = driverOf(t);
    const original = driver.apply.bind(driver);
    const seenDuringCall: { locked: boolean; lease: Date | null }[] = [];
    const spy = jest.spyOn(driver, 'apply').mockImplementation(async (req) => {
        const { cluster: c, operation: { step } } = req;
      const runner = t.db.createQueryRunner();
      try {
        await runner.startTransaction();
        // NOWAIT fails at once if any transaction holds the row.
        const [r] = await runner.query(`SELECT reconcile_lease_until AS lease FROM clusters WHERE identity = $1 FOR UPDATE NOWAIT`, [c.identity]);
        seenDuringCall.push({ locked: false, lease: r.lease });
      } catch {
        seenDuringCall.push({ locked: true, lease: null });
      } finally {
        await runner.rollbackTransaction().catch(() => undefined);
        await runner.release();
      }
      return original(req);
    });
    try {
      expect(await reconciler(t).runOnce()).toBe(1);
    } finally {
      spy.mockRestore();
    }
    expect(seenDuringCall).toHaveLength(1);
    expect(seenDuringCall[0].locked).toBe(false);
    // The lease runs RECONCILE_LEASE_SECONDS from the claim (Clock time) while the driver works...
    expect(seenDuringCall[0].lease!.getTime()).toBeGreaterThan(t.clock.now().getTime() + 50_000);
    // ...and is cleared by the record.
    expect(await row('unlocked')).toMatchObject({ status: 'provisioning', reconcile_lease_until: null, reconcile_lease_token: null });
    await settle(t);
  });

  it('a lease left by a crashed replica holds the cluster until it expires, then another replica takes it over', async () => {
    await createClusters(t, f, ['orphan']);
    // A replica claimed the cluster and died before recording.
    await t.db.query(
      `UPDATE clusters SET reconcile_lease_until = $2, reconcile_lease_token = gen_random_uuid() WHERE slug = $1 AND organisation_id = $3`,
      ['orphan', new Date(t.clock.now().getTime() + 60_000), f.orgId],
    );
    expect(await reconciler(t).runOnce()).toBe(0);
    expect((await row('orphan')).status).toBe('new');
    t.clock.advance(30_000);
    expect(await reconciler(t).runOnce()).toBe(0); // still held
    expect((await row('orphan')).status).toBe('new');
    t.clock.advance(31_000);
    expect(await reconciler(t).runOnce()).toBe(1); // expired: taken over
    expect(await row('orphan')).toMatchObject({ status: 'provisioning', reconcile_lease_token: null });
    await settle(t);
    expect((await row('orphan')).status).toBe('started');
    const perStep = (await stepsPerCluster(t, f)).filter((s) => s.cluster_slug === 'orphan');
    expect(perStep).toHaveLength(STEPS_TO_STARTED);
    for (const s of perStep) expect(s.n).toBe(1);
  });

  it('a step whose lease was taken over while the driver worked is not recorded (the new holder records it once)', async () => {
    await createClusters(t, f, ['slowpoke']);
    const driver = driverOf(t);
    const original = driver.apply.bind(driver);
    let stolen = false;
    const spy = jest.spyOn(driver, 'apply').mockImplementation(async (req) => {
        const { cluster: c, operation: { step } } = req;
      if (c.slug === 'slowpoke' && !stolen) {
        stolen = true;
        // Meanwhile the lease expired and another replica claimed the cluster.
        await t.db.query(`UPDATE clusters SET reconcile_lease_token = gen_random_uuid() WHERE identity = $1`, [c.identity]);
      }
      return original(req);
    });
    try {
      expect(await reconciler(t).runOnce()).toBe(0);
    } finally {
      spy.mockRestore();
    }
    expect((await row('slowpoke')).status).toBe('new');
    const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE cluster_slug = 'slowpoke' AND actor_username = 'system'`);
    expect(n).toBe(0);
    // The other holder's lease ends; the step is then performed and recorded once.
    await t.db.query(`UPDATE clusters SET reconcile_lease_until = $2 WHERE slug = $1`, ['slowpoke', new Date(t.clock.now().getTime() - 1000)]);
    expect(await reconciler(t).runOnce()).toBe(1);
    expect((await row('slowpoke')).status).toBe('provisioning');
    await settle(t);
  });

  it('a cluster changed while the driver worked (delete requested) does not get the old step; the new one follows', async () => {
    await createClusters(t, f, ['changing']);
    await settle(t);
    await t.as(f.users.member.token).patch(`${clustersPath(f)}/changing`).send({ status: 'stopping' }).expect(200);
    const driver = driverOf(t);
    const original = driver.apply.bind(driver);
    let deleted = false;
    const spy = jest.spyOn(driver, 'apply').mockImplementation(async (req) => {
        const { cluster: c, operation: { step } } = req;
      if (c.slug === 'changing' && !deleted) {
        deleted = true;
        expect(step).toBe('stopping');
        await t.as(f.users.member.token).delete(`${clustersPath(f)}/changing`).expect(200);
      }
      return original(req);
    });
    try {
      expect(await reconciler(t).runOnce()).toBe(0); // the stopping step is superseded by the delete request
    } finally {
      spy.mockRestore();
    }
    expect(await row('changing')).toMatchObject({ status: 'started', desired_status: 'deleting', reconcile_lease_token: null });
    await settle(t);
    const types = await t.db.query(
      `SELECT type FROM audit_events WHERE cluster_slug = 'changing' AND actor_username = 'system' AND type IN ('CLUSTER_STOPPING', 'CLUSTER_DELETING', 'CLUSTER_DELETED') ORDER BY id`,
    );
    expect(types.map((x: { type: string }) => x.type)).toEqual(['CLUSTER_DELETING', 'CLUSTER_DELETED']);
  });
});

describe('batch observation of settled clusters', () => {
  let t: TestApp;
  let f: OrgFixture;
  const METRICS_TOKEN = 'prometheus-scrape-token-0123456789';
  beforeAll(async () => {
    t = await startTestApp({ METRICS_TOKEN, OBSERVE_EVERY_SECONDS: '60', FLEET_METRICS_ENABLED: 'true' });
    f = await createOrgFixture(t, { quota: 100 });
  });
  afterAll(() => t.close());

  const oldestAge = async (): Promise<number> => {
    const res = await t.http().get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
    expect(res.status).toBe(200);
    const m = /^cms_reconciler_oldest_observation_age_seconds ([\d.e+-]+)$/m.exec(res.text);
    expect(m).not.toBeNull();
    return Number(m![1]);
  };

  it('observes every due settled cluster, oldest first, with one driver call per batch; the gauge reports the oldest age', async () => {
    await createClusters(t, f, ['seed']);
    const settling = Date.now();
    await settle(t);
    // Observed while settling: no older than the time since.
    expect(await oldestAge()).toBeLessThanOrEqual((Date.now() - settling) / 1000 + 1);
    const extra = 2 * OBSERVE_BATCH_SIZE + 100;
    const cloned = Date.now();
    await cloneSettledClusters(t, 'seed', extra);
    const total = extra + 1;
    // bulk-<extra> was observed 120 + extra seconds before it was cloned: the gauge says so.
    const age = await oldestAge();
    expect(age).toBeGreaterThanOrEqual(120 + extra);
    expect(age).toBeLessThanOrEqual(120 + extra + (Date.now() - cloned) / 1000 + 1);

    await t.db.query(
      `INSERT INTO simulated_driver_faults (cluster_id, step, remaining, created_at) SELECT id, 'observe', 1, now() FROM clusters WHERE slug = 'bulk-7' AND organisation_id = $1`,
      [f.orgId],
    );
    const driver = driverOf(t);
    const batches: DesiredClusterSpec[][] = [];
    const original = driver.observeMany.bind(driver);
    const many = jest.spyOn(driver, 'observeMany').mockImplementation(async (requests) => {
      batches.push(requests.map((r) => r.cluster));
      return original(requests);
    });
    const single = jest.spyOn(driver, 'observe');
    const observing = Date.now();
    try {
      t.clock.advance(61_000); // the seed is due too now
      expect(await reconciler(t).runOnce()).toBe(1); // bulk-7 lost contact
    } finally {
      many.mockRestore();
      single.mockRestore();
    }
    expect(single).not.toHaveBeenCalled();
    // Claims of at most OBSERVE_BATCH_SIZE; claims run side by side, so on a busy machine a claim may come back short
    // while another holds rows it skipped (seen: 500 + 476 + ...), never more calls than the pass runs at once.
    const sizes = batches.map((b) => b.length).sort((x, y) => y - x);
    expect(sizes[0]).toBe(OBSERVE_BATCH_SIZE);
    expect(sizes.every((n) => n <= OBSERVE_BATCH_SIZE)).toBe(true);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(total);
    expect(sizes.length).toBeLessThanOrEqual(4);
    // Each cluster exactly once, and the oldest observations went first.
    const ids = batches.flat().map((c) => c.identity);
    expect(new Set(ids).size).toBe(total);
    const firstBatch = batches.find((b) => b.some((c) => c.slug === `bulk-${extra}`));
    expect(firstBatch).toBeDefined();
    // Oldest first: the batch holding the oldest observation holds only clusters of the first round of claims (the
    // two batches' worth of oldest; claims running side by side may share that range between them under load).
    const numbers = firstBatch!.map((c) => Number(/^bulk-(\d+)$/.exec(c.slug)?.[1] ?? 0)).sort((x, y) => x - y);
    expect(numbers[0]).toBeGreaterThan(extra - 2 * OBSERVE_BATCH_SIZE);
    expect(numbers[numbers.length - 1]).toBe(extra);
    expect(batches.find((b) => b.some((c) => c.slug === 'seed'))).not.toBe(firstBatch);

    const [{ stale }] = await t.db.query(
      `SELECT count(*)::int AS stale FROM clusters WHERE organisation_id = $1 AND status IN ('started','stopped') AND observed_at < $2`,
      [f.orgId, new Date(t.clock.now().getTime() - 60_000)],
    );
    expect(stale).toBe(0);
    const [lost] = await t.db.query(`SELECT status, last_error, reconcile_lease_token FROM clusters WHERE slug = 'bulk-7'`);
    expect(lost).toEqual({ status: 'unknown', last_error: 'Simulated driver lost contact with the cluster', reconcile_lease_token: null });
    const audits = await t.db.query(
      `SELECT cluster_slug, type, details->'step'->>'new' AS step FROM audit_events WHERE organisation_id = $1 AND type = 'CLUSTER_FAILED'`,
      [f.orgId],
    );
    expect(audits).toEqual([{ cluster_slug: 'bulk-7', type: 'CLUSTER_FAILED', step: 'observe' }]);
    const [{ leases }] = await t.db.query(`SELECT count(*)::int AS leases FROM clusters WHERE reconcile_lease_token IS NOT NULL`);
    expect(leases).toBe(0);
    // Everything was just observed: the oldest observation is no older than this pass.
    expect(await oldestAge()).toBeLessThanOrEqual((Date.now() - observing) / 1000 + 1);
    // Nothing is due again within OBSERVE_EVERY_SECONDS.
    const again = jest.spyOn(driver, 'observeMany');
    try {
      t.clock.advance(30_000);
      await reconciler(t).runOnce();
      expect(again).not.toHaveBeenCalled();
    } finally {
      again.mockRestore();
    }
  });
});
