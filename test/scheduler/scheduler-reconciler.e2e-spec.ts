import { ReconcilerService } from '../../src/provisioning/reconciler.service';
import { UpgradeSchedulerService } from '../../src/scheduler/upgrade-scheduler.service';
import { startTestApp, TestApp, TestUser } from '../support/test-app';
import { ClusterFixture, createChannel, createCluster, createOrg, createSchedule, moveChannel, OrgFixture } from '../upgrades/fixtures';

/** The scheduler and the provisioning reconciler (simulated driver) together. */
describe('scheduled upgrades carried out by the reconciler', () => {
  let t: TestApp;
  let owner: TestUser;
  let org: OrgFixture;
  let scheduleId: number;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.createUser('rec-owner');
    org = await createOrg(t, 'acme', [{ user: owner, role: 'OWNER' }]);
    scheduleId = (await createSchedule(t, org, [{ day: 'TUESDAY', startTime: '02:00', duration: 120 }])).id;
  });
  afterAll(() => t.close());

  const step = async (iso: string) => {
    t.clock.set(new Date(iso));
    await t.get(UpgradeSchedulerService).runOnce();
    await t.get(ReconcilerService).runOnce();
    await t.get(UpgradeSchedulerService).runOnce();
  };
  const upgradeOf = async (c: ClusterFixture) =>
    (await t.db.query(`SELECT status, to_cluster_version FROM scheduled_cluster_upgrades WHERE cluster_id = $1 ORDER BY id`, [c.id]));
  const clusterRow = async (c: ClusterFixture) =>
    (await t.db.query(`SELECT version, observed_version, status, last_error FROM clusters WHERE id = $1`, [c.id]))[0];

  it('upgrades the cluster inside its window and ends SUCCEEDED with the new version', async () => {
    await createChannel(t, 'ch-rec', '1.31.5');
    const c = await createCluster(t, org, { slug: 'web', updateChannel: 'ch-rec', autoUpgrade: true, maintenanceScheduleId: scheduleId });
    await moveChannel(t, 'ch-rec', '1.31.6');
    await step('2026-11-22T10:00:00Z');
    expect(await upgradeOf(c)).toEqual([{ status: 'SCHEDULED', to_cluster_version: '1.31.6' }]);
    expect((await clusterRow(c)).observed_version).toBe('1.31.5');
    await step('2026-11-23T03:00:00Z');
    expect((await upgradeOf(c))[0].status).toBe('SCHEDULED_NOTIFIED');
    await step('2026-11-24T02:00:00Z');
    expect(await upgradeOf(c)).toEqual([{ status: 'SUCCEEDED', to_cluster_version: '1.31.6' }]);
    expect(await clusterRow(c)).toMatchObject({ version: '1.31.6', observed_version: '1.31.6', status: 'started' });
    const [upgraded] = await t.db.query(`SELECT actor_username FROM audit_events WHERE cluster_id = $1 AND type = 'CLUSTER_UPGRADED'`, [c.id]);
    expect(upgraded.actor_username).toBe('system');
  });

  it('ends FAILED when the driver fails the upgrade, and the cluster stays on its version', async () => {
    await createChannel(t, 'ch-rec-fail', '1.31.5');
    const c = await createCluster(t, org, { slug: 'fragile', updateChannel: 'ch-rec-fail', autoUpgrade: true, maintenanceScheduleId: scheduleId });
    await t.db.query(`INSERT INTO simulated_driver_faults (cluster_id, step, remaining) VALUES ($1, 'upgrade', 1)`, [c.id]);
    await moveChannel(t, 'ch-rec-fail', '1.31.6');
    await step('2026-11-22T10:00:00Z');
    await step('2026-11-24T02:00:00Z');
    expect(await upgradeOf(c)).toEqual([{ status: 'FAILED', to_cluster_version: '1.31.6' }]);
    expect(await clusterRow(c)).toMatchObject({ version: '1.31.5', observed_version: '1.31.5' });
    // the reconciler recovers the cluster later; the failed version is not retried by itself
    await step('2026-11-24T03:00:00Z');
    await step('2026-11-24T05:00:00Z');
    expect(await clusterRow(c)).toMatchObject({ version: '1.31.5', observed_version: '1.31.5' });
    expect(await upgradeOf(c)).toEqual([{ status: 'FAILED', to_cluster_version: '1.31.6' }]);
  });
});
