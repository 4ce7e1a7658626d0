import { CLUSTER_DRIVER, ClusterDriver } from '../../src/provisioning/cluster-driver';
import { ClusterStepEffects } from '../../src/provisioning/cluster-step-effects';
import { ClusterStepRecorder } from '../../src/provisioning/cluster-step-recorder';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, reconciler, settle } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

/** The steps from `new` to `started`, in the order the state machine takes them. */
const STEPS = ['provisioning', 'OIDC_PROVISIONED', 'CLUSTER_PROVISIONED', 'INITIAL_NODE_POOLS_PROVISIONED', 'INITIAL_ADDONS_PROVISIONED', 'DONE', 'provisioned', 'starting', 'started'];

async function createClusters(t: TestApp, f: OrgFixture, names: string[]): Promise<void> {
  for (const name of names) {
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name }));
    expect(res.status).toBe(200);
  }
}

const driverOf = (t: TestApp) => t.app.get<ClusterDriver>(CLUSTER_DRIVER as never);

/** The reconciler's audit rows of a cluster, oldest first: the step each one records. */
async function auditedSteps(t: TestApp, f: OrgFixture, slug: string): Promise<string[]> {
  const rows: { step: string }[] = await t.db.query(
    `SELECT details->'step'->>'new' AS step FROM audit_events WHERE organisation_id = $1 AND cluster_slug = $2 AND actor_username = 'system' ORDER BY id`,
    [f.orgId, slug],
  );
  return rows.map((r) => r.step);
}

/** Sizes of the record transactions (steps per `recordMany`), calling through; the first one waits `holdFirstMs` first. */
function watchRecords(t: TestApp, holdFirstMs = 0) {
  const recorder = t.get(ClusterStepRecorder);
  const original = recorder.recordMany.bind(recorder);
  const batches: string[][] = [];
  const spy = jest.spyOn(recorder, 'recordMany').mockImplementation(async (steps) => {
    batches.push(steps.map((s) => (s.claim as { cluster?: { slug: string } }).cluster?.slug ?? String(s.claim.id)));
    // Held so the steps that end meanwhile queue up for the next record transaction.
    if (batches.length === 1 && holdFirstMs > 0) await new Promise((r) => setTimeout(r, holdFirstMs));
    return original(steps);
  });
  return { batches, restore: () => spy.mockRestore() };
}

describe('reconciler records: the steps of several workers in one transaction', () => {
  // One background connection for records (the pool's other one is left to claims): records queue and are batched.
  const env = { RECONCILE_CONCURRENCY: '6', BACKGROUND_DATABASE_POOL_SIZE: '2', SIMULATED_DRIVER_LATENCY_MS: '20' };

  it('writes one audit row per step and cluster, in step order; a lease lost in a batch writes nothing for that cluster only', async () => {
    const t = await startTestApp(env);
    try {
      const f = await createOrgFixture(t, { quota: 100 });
      const names = Array.from({ length: 6 }, (_, i) => `batched-${i}`);
      await createClusters(t, f, names);
      const driver = driverOf(t);
      const original = driver.apply.bind(driver);
      let stolen = false;
      const advance = jest.spyOn(driver, 'apply').mockImplementation(async (req) => {
        const { cluster: c, operation: { step } } = req;
        if (c.slug === 'batched-3' && !stolen) {
          stolen = true;
          // Meanwhile the lease expired and another replica claimed the cluster; this call ends after the others',
          // so its record waits in the queue behind the first (held) one.
          await new Promise((r) => setTimeout(r, 100));
          await t.db.query(`UPDATE clusters SET reconcile_lease_token = gen_random_uuid() WHERE identity = $1`, [c.identity]);
        }
        return original(req);
      });
      const records = watchRecords(t, 300);
      try {
        expect(await reconciler(t).runOnce()).toBe(5);
        // The stolen lease's step was in a batch with others, and only it was left out.
        const withStolen = records.batches.find((b) => b.includes('batched-3'));
        expect(withStolen!.length).toBeGreaterThan(1);
        expect(await auditedSteps(t, f, 'batched-3')).toEqual([]);
        const [{ status }] = await t.db.query(`SELECT status FROM clusters WHERE slug = 'batched-3' AND organisation_id = $1`, [f.orgId]);
        expect(status).toBe('new');
        // The other holder's lease ends; then the cluster goes on like the others.
        await t.db.query(`UPDATE clusters SET reconcile_lease_until = $2 WHERE slug = $1`, ['batched-3', new Date(t.clock.now().getTime() - 1000)]);
        await settle(t);
      } finally {
        advance.mockRestore();
        records.restore();
      }
      expect(Math.max(...records.batches.map((b) => b.length))).toBeGreaterThan(1);
      for (const name of names) expect(await auditedSteps(t, f, name)).toEqual(STEPS);
      const [{ activities }] = await t.db.query(`SELECT count(*)::int AS activities FROM activity_events WHERE organisation_id = $1 AND actor_username = 'system'`, [f.orgId]);
      expect(activities).toBe(names.length * STEPS.length);
      const [{ leases }] = await t.db.query(`SELECT count(*)::int AS leases FROM clusters WHERE organisation_id = $1 AND reconcile_lease_token IS NOT NULL`, [f.orgId]);
      expect(leases).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('a step whose record fails rolls back only itself: the other steps of its batch are recorded once each, it backs off', async () => {
    const t = await startTestApp(env);
    try {
      const f = await createOrgFixture(t, { quota: 100 });
      const names = Array.from({ length: 6 }, (_, i) => `mixed-${i}`);
      await createClusters(t, f, names);
      const driver = driverOf(t);
      const original = driver.apply.bind(driver);
      // The broken cluster's driver call ends last, so its record is not the first (held) one but waits in the queue.
      const advance = jest.spyOn(driver, 'apply').mockImplementation(async (req) => {
        const { cluster: c, operation: { step } } = req;
        if (c.slug === 'mixed-4') await new Promise((r) => setTimeout(r, 150));
        return original(req);
      });
      const effects = t.get(ClusterStepEffects);
      const afterStep = jest.spyOn(effects, 'afterStep').mockImplementation(async (c) => {
        if (c.slug === 'mixed-4') throw new Error('effects broke');
      });
      const records = watchRecords(t, 600);
      try {
        expect(await reconciler(t).runOnce()).toBe(5);
      } finally {
        advance.mockRestore();
        afterStep.mockRestore();
        records.restore();
      }
      // The batch with the broken step failed as a whole, then each of its steps was recorded alone.
      const batched = records.batches.find((b) => b.length > 1 && b.includes('mixed-4'));
      expect(batched).toBeDefined();
      for (const other of batched!.filter((s) => s !== 'mixed-4')) expect(records.batches.filter((b) => b.length === 1 && b[0] === other)).toHaveLength(1);
      const [broken] = await t.db.query(`SELECT status, attempts, last_error, reconcile_lease_token FROM clusters WHERE slug = 'mixed-4' AND organisation_id = $1`, [f.orgId]);
      expect(broken).toEqual({ status: 'new', attempts: 1, last_error: 'Internal error while reconciling: effects broke', reconcile_lease_token: null });
      expect(await auditedSteps(t, f, 'mixed-4')).toEqual([]);
      for (const name of names.filter((n) => n !== 'mixed-4')) expect(await auditedSteps(t, f, name)).toEqual(['provisioning']);
    } finally {
      await t.close();
    }
  });
});
