import { Client } from 'pg';
import { CLUSTER_DRIVER, ClusterDriver } from '../../src/provisioning/cluster-driver';
import { ClusterLeases } from '../../src/provisioning/cluster-leases';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, reconciler } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

async function createClusters(t: TestApp, f: OrgFixture, names: string[]): Promise<void> {
  for (const name of names) {
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name }));
    expect(res.status).toBe(200);
  }
}

const driverOf = (t: TestApp) => t.app.get<ClusterDriver>(CLUSTER_DRIVER as never);

/** Audit rows written by the reconciler, per cluster and step. */
async function steps(db: Client, orgId: number): Promise<{ cluster_slug: string; n: number }[]> {
  const { rows } = await db.query(
    `SELECT cluster_slug, details->'step'->>'new' AS step, count(*)::int AS n FROM audit_events WHERE organisation_id = $1 AND actor_username = 'system' GROUP BY 1, 2`,
    [orgId],
  );
  return rows;
}

describe('reconciler pipeline: claims ahead and records behind the next driver call', () => {
  it('claims one cluster ahead per worker while the driver works, and shutdown gives those leases back', async () => {
    const t = await startTestApp({ RECONCILE_CONCURRENCY: '2', SIMULATED_DRIVER_LATENCY_MS: '400' });
    const db = new Client({ connectionString: t.databaseUrl });
    await db.connect();
    let closed = false;
    try {
      const f = await createOrgFixture(t, { quota: 100 });
      const names = Array.from({ length: 8 }, (_, i) => `ahead-${i}`);
      await createClusters(t, f, names);
      const driver = driverOf(t);
      const original = driver.apply.bind(driver);
      let inFlight = 0;
      let maxInFlight = 0;
      let leasesDuringCalls = 0;
      const spy = jest.spyOn(driver, 'apply').mockImplementation(async (req) => {
        const { cluster: c, operation: { step } } = req;
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        try {
          // The driver answers after its latency; by then the worker's next cluster is claimed.
          const answer = await original(req);
          const { rows: [{ n }] } = await db.query(`SELECT count(*)::int AS n FROM clusters WHERE reconcile_lease_token IS NOT NULL`);
          leasesDuringCalls = Math.max(leasesDuringCalls, n);
          return answer;
        } finally {
          inFlight--;
        }
      });
      const pass = reconciler(t).runOnce().catch(() => undefined);
      // Shut down while both workers are in their driver calls, with claims ahead taken.
      const deadline = Date.now() + 20_000;
      while (leasesDuringCalls < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await t.close();
      closed = true;
      await pass;
      spy.mockRestore();
      // Two driver calls at a time (one per worker), and more clusters leased than called: the claims ahead.
      expect(maxInFlight).toBe(2);
      expect(leasesDuringCalls).toBeGreaterThanOrEqual(3);
      // The pass under way finished its steps; the clusters claimed ahead were given back, none left leased.
      const { rows: [{ leased }] } = await db.query(`SELECT count(*)::int AS leased FROM clusters WHERE reconcile_lease_token IS NOT NULL`);
      expect(leased).toBe(0);
      const recorded = await steps(db, f.orgId);
      expect(recorded.length).toBeGreaterThan(0);
      expect(recorded.length).toBeLessThan(names.length);
      for (const s of recorded) expect(s.n).toBe(1);
      const { rows: moved } = await db.query(`SELECT slug FROM clusters WHERE organisation_id = $1 AND status <> 'new' ORDER BY slug`, [f.orgId]);
      expect(moved.map((m: { slug: string }) => m.slug).sort()).toEqual(recorded.map((s) => s.cluster_slug).sort());
    } finally {
      await db.end();
      if (!closed) await t.close();
    }
  });

  it('a claim that waited for a worker longer than a quarter of the lease renews its lease before the driver call', async () => {
    const t = await startTestApp({ RECONCILE_CONCURRENCY: '1', RECONCILE_LEASE_SECONDS: '2' });
    try {
      const f = await createOrgFixture(t, { quota: 100 });
      await createClusters(t, f, ['slow-first', 'waits']);
      const driver = driverOf(t);
      const original = driver.apply.bind(driver);
      const spy = jest.spyOn(driver, 'apply').mockImplementation(async (req) => {
        const { cluster: c, operation: { step } } = req;
        // 700 ms > 2 s / 4: the cluster claimed ahead meanwhile has waited long enough to need a renewal.
        if (c.slug === 'slow-first') await new Promise((r) => setTimeout(r, 700));
        return original(req);
      });
      const leases = t.get(ClusterLeases);
      const renewOriginal = leases.renew.bind(leases);
      const renewed: ({ id: number } | null)[] = [];
      const renew = jest.spyOn(leases, 'renew').mockImplementation(async (claim) => {
        const answer = await renewOriginal(claim);
        renewed.push(answer);
        return answer;
      });
      try {
        expect(await reconciler(t).runOnce()).toBe(2);
      } finally {
        spy.mockRestore();
        renew.mockRestore();
      }
      const [waits] = await t.db.query(`SELECT id, status, reconcile_lease_token FROM clusters WHERE slug = 'waits' AND organisation_id = $1`, [f.orgId]);
      expect(renewed.map((c) => c?.id)).toEqual([Number(waits.id)]);
      expect(waits).toMatchObject({ status: 'provisioning', reconcile_lease_token: null });
      const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE cluster_slug = 'waits' AND actor_username = 'system'`);
      expect(n).toBe(1);
    } finally {
      await t.close();
    }
  });
});
