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

  it('takes a new cluster to started although polling runs every 10 minutes: the NOTIFY woke the reconciler', async () => {
    const f = await createOrgFixture(t);
    const started = Date.now();
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'woken' }));
    expect(res.status).toBe(200);
    let status = 'new';
    // Waiting at most a minute, a tenth of the poll interval: only a wake-up moves it in that time.
    while (Date.now() - started < 60_000 && status !== 'started') {
      status = (await t.as(f.users.viewer.token).get(`${clustersPath(f)}/woken`)).body.status;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe('started');

    // A change (stop) is picked up the same way.
    await t.as(f.users.member.token).patch(`${clustersPath(f)}/woken`).send({ status: 'stopping' }).expect(200);
    const stopAt = Date.now();
    while (Date.now() - stopAt < 60_000 && status !== 'stopped') {
      status = (await t.as(f.users.viewer.token).get(`${clustersPath(f)}/woken`)).body.status;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe('stopped');
  });
});
