import { ClusterDriverResolver } from '../../src/cluster-drivers/cluster-driver-resolver';
import type { ApplyRequest } from '../../src/cluster-drivers/driver-contract';
import { ClusterStepRecorder } from '../../src/provisioning/cluster-step-recorder';
import { clusterBody, clustersPath, createOrgFixture, reconciler, settle } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';
import { RecordingDriver } from './recording-driver';

const bind = (t: TestApp, driver: RecordingDriver) => jest.spyOn(t.app.get<ClusterDriverResolver>(ClusterDriverResolver as never), 'resolve').mockResolvedValue(driver);

/**
 * A worker dies after its driver call and before its record (issue 38): another replica takes the cluster over when
 * the lease runs out, calls the driver again with the same idempotency key and spec (the driver does not act twice),
 * and records the generation; the dead worker's late record changes nothing.
 */
describe('a worker lost in the middle of an operation', () => {
  it('loses nothing and repeats no effect', async () => {
    const a = await startTestApp();
    let b: TestApp | null = null;
    const driver = new RecordingDriver();
    let release: () => void = () => undefined;
    try {
      bind(a, driver);
      const f = await createOrgFixture(a);
      const created = await a.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'web' }));
      expect(created.status).toBe(200);
      await settle(a);
      const path = `${clustersPath(f)}/web`;
      const pools = (await a.as(f.users.viewer.token).get(`${path}/pools`)).body;
      const put = await a.as(f.users.member.token).put(`${path}/pools/${pools[0].identity}`).send({ name: 'workers', nodeSize: 'm5.large', minSize: 4, maxSize: 6 });
      const generation = put.body.generation as number;
      const key = `${created.body.identity}:${generation}`;

      // Worker A calls the driver, which acts; A then never gets to record (it "dies" holding the lease).
      const recorder = a.get(ClusterStepRecorder);
      const original = recorder.recordMany.bind(recorder);
      const stuck = new Promise<void>((r) => (release = r));
      const hang = jest.spyOn(recorder, 'recordMany').mockImplementation(async (steps) => {
        await stuck;
        return original(steps);
      });
      const passA = reconciler(a).runOnce();
      const deadline = Date.now() + 20_000;
      while (!driver.acted.includes(key) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(driver.acted).toContain(key);
      const [held] = await a.db.query(`SELECT observed_generation, reconcile_lease_token FROM clusters WHERE identity = $1`, [created.body.identity]);
      expect(held.reconcile_lease_token).not.toBeNull();
      expect(Number(held.observed_generation)).toBe(generation - 1);

      // Replica B on the same database: nothing to do while A's lease lasts, then it takes the cluster over.
      b = await startTestApp({}, a.databaseUrl);
      bind(b, driver);
      const before = driver.requestsOf(created.body.identity).length;
      expect(await reconciler(b).runOnce()).toBe(0);
      expect(driver.requestsOf(created.body.identity).length).toBe(before);
      b.clock.advance(61_000); // past RECONCILE_LEASE_SECONDS
      await settle(b);
      const calls = (driver.requestsOf(created.body.identity) as ApplyRequest[]).filter((r) => r.cluster.generation === generation);
      expect(calls.length).toBe(2);
      expect(new Set(calls.map((r) => r.idempotencyKey))).toEqual(new Set([key]));
      expect(driver.acted.filter((k) => k === key)).toHaveLength(1);
      expect(driver.conflicts).toEqual([]);
      const after = (await b.as(f.users.viewer.token).get(path)).body;
      expect(after).toMatchObject({ generation, observedGeneration: generation, status: 'started' });
      expect((await b.as(f.users.viewer.token).get(`${path}/pools`)).body[0]).toMatchObject({ minSize: 4, observedGeneration: generation, provisionStatus: 'DONE' });

      // A's late record finds its lease gone: it writes nothing.
      release();
      expect(await passA).toBe(0);
      hang.mockRestore();
      const [{ n }] = await b.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE cluster_slug = 'web' AND type = 'CLUSTER_CHANGES_APPLIED'`);
      expect(n).toBe(1);
    } finally {
      release();
      await b?.close();
      await a.close();
    }
  });
});
