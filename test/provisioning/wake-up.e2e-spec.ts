import { clusterBody, clustersPath, createOrgFixture } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

/** The reconciler is woken by PostgreSQL NOTIFY, so a new cluster is picked up at once even with a long poll interval. */
describe('reconciler wake-up on cluster changes', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ BACKGROUND_JOBS_ENABLED: 'true', RECONCILE_INTERVAL_SECONDS: '600', PROVISIONING_STEP_SECONDS: '0', SCHEDULER_INTERVAL_SECONDS: '0' });
    await new Promise((r) => setTimeout(r, 300)); // the listener connects
  });
  afterAll(() => t.close());

  it('takes a new cluster to started within seconds although polling runs every 10 minutes', async () => {
    const f = await createOrgFixture(t);
    const started = Date.now();
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'woken' }));
    expect(res.status).toBe(200);
    let status = 'new';
    let firstMove = 0;
    while (Date.now() - started < 10_000 && status !== 'started') {
      status = (await t.as(f.users.viewer.token).get(`${clustersPath(f)}/woken`)).body.status;
      if (status !== 'new' && !firstMove) firstMove = Date.now() - started;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe('started');
    expect(firstMove).toBeLessThan(1000);

    // A change (stop) is picked up the same way.
    await t.as(f.users.member.token).patch(`${clustersPath(f)}/woken`).send({ status: 'stopping' }).expect(200);
    const stopAt = Date.now();
    while (Date.now() - stopAt < 10_000 && status !== 'stopped') {
      status = (await t.as(f.users.viewer.token).get(`${clustersPath(f)}/woken`)).body.status;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe('stopped');
  });
});
