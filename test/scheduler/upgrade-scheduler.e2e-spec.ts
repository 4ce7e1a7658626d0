import { UpgradeSchedulerService } from '../../src/scheduler/upgrade-scheduler.service';
import { startTestApp, TestApp, TestUser } from '../support/test-app';
import { ClusterFixture, createChannel, createCluster, createOrg, moveChannel, OrgFixture } from '../upgrades/fixtures';

const SUNDAY = new Date('2026-11-22T10:00:00Z');
const at = (iso: string) => new Date(iso);
const TUESDAY_NIGHT = [{ day: 'tue', startTime: '02:00', duration: 120 }];

interface Upgrade {
  identity: string;
  status: string;
  fromClusterVersion: string;
  toClusterVersion: string;
  windowStart: string;
  windowEnd: string;
  reason: string;
}

describe('upgrade scheduler', () => {
  let t: TestApp;
  let scheduler: UpgradeSchedulerService;
  let owner: TestUser;
  let org: OrgFixture;
  let scheduleId: number;

  beforeAll(async () => {
    t = await startTestApp();
    scheduler = t.get(UpgradeSchedulerService);
    owner = await t.createUser('sched-owner');
    org = await createOrg(t, 'acme', [{ user: owner, role: 'OWNER' }]);
    const res = await t.as(owner.token).post('/api/v1/organisations/acme/maintenance-schedule').send({ name: 'Tuesday night', windows: TUESDAY_NIGHT });
    expect(res.status).toBe(200);
    const [row] = await t.db.query(`SELECT id FROM maintenance_schedules WHERE identity = $1`, [res.body.identity]);
    scheduleId = Number(row.id);
  });
  afterAll(() => t.close());

  const run = async (when: Date) => {
    t.clock.set(when);
    return scheduler.runOnce();
  };
  const upgradesOf = async (c: ClusterFixture): Promise<Upgrade[]> => {
    const res = await t.as(owner.token).get(`/api/v1/orgs/acme/scheduled-cluster-upgrades?clusterIdentities=${c.identity}&sort=createdAt,asc&size=100`);
    expect(res.status).toBe(200);
    return res.body.content;
  };
  const cluster = async (c: ClusterFixture) =>
    (await t.db.query(`SELECT version, observed_version, status FROM clusters WHERE id = $1`, [c.id]))[0];
  const auditOf = async (identity: string) =>
    t.db.query(`SELECT type, actor_username, actor_id, cluster_slug, environment_slug, organisation_slug, details FROM audit_events
                 WHERE referenced_entity_identity = $1 ORDER BY id`, [identity]);

  it('takes a cluster on a Tuesday 02:00-04:00 window from a channel bump to SUCCEEDED on the new version', async () => {
    await createChannel(t, 'ch-main', '1.31.5');
    const c = await createCluster(t, org, { slug: 'web', version: '1.31.5', updateChannel: 'ch-main', autoUpgrade: true, maintenanceScheduleId: scheduleId });

    await run(SUNDAY);
    expect(await upgradesOf(c)).toEqual([]);

    await moveChannel(t, 'ch-main', '1.31.6');
    const created = await run(SUNDAY);
    expect(created.skipped).toBe(false);
    let [u] = await upgradesOf(c);
    expect(u).toMatchObject({
      status: 'SCHEDULED',
      fromClusterVersion: '1.31.5',
      toClusterVersion: '1.31.6',
      windowStart: '2026-11-24T02:00:00.000Z',
      windowEnd: '2026-11-24T04:00:00.000Z',
      reason: 'update channel ch-main moved to 1.31.6',
    });
    await run(SUNDAY);
    expect(await upgradesOf(c)).toHaveLength(1);

    await run(at('2026-11-23T01:59:00Z'));
    expect((await upgradesOf(c))[0].status).toBe('SCHEDULED');
    await run(at('2026-11-23T02:00:00Z'));
    expect((await upgradesOf(c))[0].status).toBe('SCHEDULED_NOTIFIED');
    const [announcement] = await t.db.query(
      `SELECT message, actor_username FROM activity_events WHERE organisation_id = $1 AND type = 'SCHEDULED_CLUSTER_UPGRADE_SCHEDULED_NOTIFIED'`,
      [org.id],
    );
    expect(announcement.actor_username).toBe('system');
    expect(announcement.message).toContain('production/web');
    expect(announcement.message).toContain('from 1.31.5 to 1.31.6');
    expect(announcement.message).toContain('2026-11-24 02:00 to 04:00 UTC');
    const feed = await t.as(owner.token).get('/api/v1/organisations/acme/activity');
    if (feed.status === 200) {
      expect(feed.body.content.map((e: { message: string }) => e.message)).toContain(announcement.message);
    }

    await run(at('2026-11-24T01:59:00Z'));
    expect((await upgradesOf(c))[0].status).toBe('SCHEDULED_NOTIFIED');
    expect((await cluster(c)).version).toBe('1.31.5');

    await run(at('2026-11-24T02:05:00Z'));
    [u] = await upgradesOf(c);
    expect(u.status).toBe('UPDATED');
    expect(await cluster(c)).toMatchObject({ version: '1.31.6', observed_version: '1.31.5', status: 'started' });
    const [times] = await t.db.query(`SELECT notified_at, started_at, finished_at FROM scheduled_cluster_upgrades WHERE identity = $1`, [u.identity]);
    expect(times.notified_at.toISOString()).toBe('2026-11-23T02:00:00.000Z');
    expect(times.started_at.toISOString()).toBe('2026-11-24T02:05:00.000Z');
    expect(times.finished_at).toBeNull();

    await run(at('2026-11-24T02:10:00Z'));
    expect((await upgradesOf(c))[0].status).toBe('UPDATED');
    // the reconciler (another module) reports the driver finished the upgrade
    await t.db.query(`UPDATE clusters SET observed_version = version WHERE id = $1`, [c.id]);
    await run(at('2026-11-24T02:20:00Z'));
    [u] = await upgradesOf(c);
    expect(u.status).toBe('SUCCEEDED');
    expect((await cluster(c)).version).toBe('1.31.6');

    const audit = await auditOf(u.identity);
    expect(audit.map((a: { type: string }) => a.type)).toEqual([
      'SCHEDULED_CLUSTER_UPGRADE_SCHEDULED',
      'SCHEDULED_CLUSTER_UPGRADE_SCHEDULED_NOTIFIED',
      'SCHEDULED_CLUSTER_UPGRADE_UPDATED',
      'SCHEDULED_CLUSTER_UPGRADE_SUCCEEDED',
    ]);
    for (const a of audit) {
      expect(a).toMatchObject({ actor_username: 'system', actor_id: null, cluster_slug: 'web', environment_slug: 'production', organisation_slug: 'acme' });
    }
    expect(audit[2].details).toEqual({ status: { old: 'SCHEDULED_NOTIFIED', new: 'UPDATED' }, version: { old: '1.31.5', new: '1.31.6' } });
    expect(audit[3].details).toEqual({ status: { old: 'UPDATED', new: 'SUCCEEDED' } });
    const activity = await t.db.query(
      `SELECT type FROM activity_events WHERE organisation_id = $1 AND type LIKE 'SCHEDULED_CLUSTER_UPGRADE_%' AND actor_username = 'system' AND message LIKE '%production/web%' ORDER BY id`,
      [org.id],
    );
    expect(activity.map((a: { type: string }) => a.type)).toEqual(audit.map((a: { type: string }) => a.type));

    await run(at('2026-11-24T03:00:00Z'));
    expect(await upgradesOf(c)).toHaveLength(1);
  });

  it("marks a stopped cluster's upgrade MISSED when the window closes, and schedules it again for the next window", async () => {
    await createChannel(t, 'ch-stopped', '1.31.5');
    const c = await createCluster(t, org, { slug: 'stopped', status: 'stopped', updateChannel: 'ch-stopped', autoUpgrade: true, maintenanceScheduleId: scheduleId });
    await moveChannel(t, 'ch-stopped', '1.31.6');
    await run(SUNDAY);
    await run(at('2026-11-24T02:30:00Z'));
    let [u] = await upgradesOf(c);
    expect(u.status).toBe('SCHEDULED_NOTIFIED');
    expect((await cluster(c)).version).toBe('1.31.5');
    await run(at('2026-11-24T04:00:00Z'));
    [u] = await upgradesOf(c);
    expect(u.status).toBe('MISSED');
    const audit = await auditOf(u.identity);
    expect(audit.map((a: { type: string }) => a.type)).toEqual([
      'SCHEDULED_CLUSTER_UPGRADE_SCHEDULED',
      'SCHEDULED_CLUSTER_UPGRADE_SCHEDULED_NOTIFIED',
      'SCHEDULED_CLUSTER_UPGRADE_MISSED',
    ]);
    const [missed] = await t.db.query(
      `SELECT message FROM activity_events WHERE type = 'SCHEDULED_CLUSTER_UPGRADE_MISSED' AND message LIKE '%production/stopped%'`,
    );
    expect(missed.message).toMatch(/missed its window .* \(the cluster was stopped\)/);

    await run(at('2026-11-24T04:01:00Z'));
    const all = await upgradesOf(c);
    expect(all.map((x) => x.status)).toEqual(['MISSED', 'SCHEDULED']);
    expect(all[1].windowStart).toBe('2026-12-01T02:00:00.000Z');
  });

  it('supersedes an open upgrade when the channel moves again, and schedules the newer version', async () => {
    await createChannel(t, 'ch-super', '1.31.4');
    const c = await createCluster(t, org, { slug: 'super', version: '1.31.4', updateChannel: 'ch-super', autoUpgrade: true, maintenanceScheduleId: scheduleId });
    await moveChannel(t, 'ch-super', '1.31.5');
    await run(SUNDAY);
    await moveChannel(t, 'ch-super', '1.32.0');
    const res = await run(at('2026-11-22T11:00:00Z'));
    expect(res.transitions.SUPERSEDED).toBe(1);
    const [first, second] = await upgradesOf(c);
    expect(first).toMatchObject({ status: 'SUPERSEDED', toClusterVersion: '1.31.5' });
    expect(second).toMatchObject({ status: 'SCHEDULED', fromClusterVersion: '1.31.4', toClusterVersion: '1.32.0', windowStart: '2026-11-24T02:00:00.000Z' });
    expect((await auditOf(first.identity)).map((a: { type: string }) => a.type)).toContain('SCHEDULED_CLUSTER_UPGRADE_SUPERSEDED');
    const [msg] = await t.db.query(
      `SELECT message FROM activity_events WHERE type = 'SCHEDULED_CLUSTER_UPGRADE_SUPERSEDED' AND message LIKE '%production/super%'`,
    );
    expect(msg.message).toContain('update channel ch-super moved to 1.32.0');
  });

  it('marks an upgrade FAILED when the driver fails, and does not retry that version by itself', async () => {
    await createChannel(t, 'ch-fail', '1.31.5');
    const c = await createCluster(t, org, { slug: 'fragile', updateChannel: 'ch-fail', autoUpgrade: true, maintenanceScheduleId: scheduleId });
    await moveChannel(t, 'ch-fail', '1.31.6');
    await run(SUNDAY);
    await run(at('2026-11-24T02:00:00Z'));
    let [u] = await upgradesOf(c);
    expect(u.status).toBe('UPDATED');
    await t.db.query(`UPDATE clusters SET status = 'unknown', status_before_fault = 'started', last_error = 'driver failed: upgrade timed out' WHERE id = $1`, [c.id]);
    await run(at('2026-11-24T02:30:00Z'));
    [u] = await upgradesOf(c);
    expect(u.status).toBe('FAILED');
    const audit = await auditOf(u.identity);
    expect(audit[audit.length - 1]).toMatchObject({
      type: 'SCHEDULED_CLUSTER_UPGRADE_FAILED',
      details: {
        status: { old: 'UPDATED', new: 'FAILED' },
        lastError: { old: null, new: 'driver failed: upgrade timed out' },
        version: { old: '1.31.6', new: '1.31.5' },
      },
    });
    // the desired version goes back to what the cluster runs, so the upgrade is not retried outside a window
    expect((await cluster(c)).version).toBe('1.31.5');
    await t.db.query(`UPDATE clusters SET status = 'started', last_error = NULL WHERE id = $1`, [c.id]);
    await run(at('2026-11-24T05:00:00Z'));
    expect(await upgradesOf(c)).toHaveLength(1);
  });

  it('without a maintenance schedule uses the 24 h starting a day ahead, announced at once', async () => {
    await createChannel(t, 'ch-none', '1.31.5');
    const c = await createCluster(t, org, { slug: 'unscheduled', updateChannel: 'ch-none', autoUpgrade: true });
    await moveChannel(t, 'ch-none', '1.31.6');
    await run(SUNDAY);
    const [u] = await upgradesOf(c);
    expect(u).toMatchObject({ status: 'SCHEDULED_NOTIFIED', windowStart: '2026-11-23T10:00:00.000Z', windowEnd: '2026-11-24T10:00:00.000Z' });
    await run(at('2026-11-23T10:00:00Z'));
    expect((await upgradesOf(c))[0].status).toBe('UPDATED');
  });

  it('does not schedule again a version whose upgrade was cancelled, but does schedule a newer one', async () => {
    await createChannel(t, 'ch-cancel', '1.31.5');
    const c = await createCluster(t, org, { slug: 'cancelled', updateChannel: 'ch-cancel', autoUpgrade: true, maintenanceScheduleId: scheduleId });
    await moveChannel(t, 'ch-cancel', '1.31.6');
    await run(SUNDAY);
    const [u] = await upgradesOf(c);
    t.clock.set(at('2026-11-23T03:00:00Z'));
    const del = await t.as(owner.token).delete(`/api/v1/orgs/acme/scheduled-cluster-upgrades/${u.identity}`);
    expect(del.status).toBe(200);
    expect(del.body.status).toBe('CANCELLED');
    await run(at('2026-11-23T03:00:00Z'));
    await run(at('2026-11-24T02:30:00Z'));
    expect((await upgradesOf(c)).map((x) => x.status)).toEqual(['CANCELLED']);
    expect((await cluster(c)).version).toBe('1.31.5');
    await moveChannel(t, 'ch-cancel', '1.32.0');
    await run(at('2026-11-24T05:00:00Z'));
    const all = await upgradesOf(c);
    expect(all.map((x) => `${x.status} ${x.toClusterVersion}`)).toEqual(['CANCELLED 1.31.6', 'SCHEDULED 1.32.0']);
    expect(all[1].windowStart).toBe('2026-12-01T02:00:00.000Z');
  });

  it('leaves alone clusters without auto-upgrade, without a channel, deleted, or ahead of their channel', async () => {
    await createChannel(t, 'ch-ignore', '1.31.6');
    const manual = await createCluster(t, org, { slug: 'manual', updateChannel: 'ch-ignore', autoUpgrade: false });
    const noChannel = await createCluster(t, org, { slug: 'nochannel', autoUpgrade: true });
    const ahead = await createCluster(t, org, { slug: 'ahead', version: '1.32.0', updateChannel: 'ch-ignore', autoUpgrade: true });
    const gone = await createCluster(t, org, { slug: 'gone', updateChannel: 'ch-ignore', autoUpgrade: true });
    await t.db.query(`UPDATE clusters SET deleted_at = now(), status = 'deleted' WHERE id = $1`, [gone.id]);
    await run(SUNDAY);
    for (const c of [manual, noChannel, ahead]) expect(await upgradesOf(c)).toEqual([]);
    const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM scheduled_cluster_upgrades WHERE cluster_id = $1`, [gone.id]);
    expect(n).toBe(0);
  });

  it('cancels an open upgrade of a cluster that was deleted', async () => {
    await createChannel(t, 'ch-del', '1.31.5');
    const c = await createCluster(t, org, { slug: 'doomed', updateChannel: 'ch-del', autoUpgrade: true, maintenanceScheduleId: scheduleId });
    await moveChannel(t, 'ch-del', '1.31.6');
    await run(SUNDAY);
    await t.db.query(`UPDATE clusters SET deleted_at = now(), status = 'deleted' WHERE id = $1`, [c.id]);
    await run(at('2026-11-22T12:00:00Z'));
    const [row] = await t.db.query(`SELECT status FROM scheduled_cluster_upgrades WHERE cluster_id = $1`, [c.id]);
    expect(row.status).toBe('CANCELLED');
  });

  it('moves a planned upgrade when its maintenance schedule changes, and announces the new window', async () => {
    const created = await t.as(owner.token).post('/api/v1/organisations/acme/maintenance-schedule').send({ name: 'Movable', windows: TUESDAY_NIGHT });
    const [sched] = await t.db.query(`SELECT id FROM maintenance_schedules WHERE identity = $1`, [created.body.identity]);
    await createChannel(t, 'ch-move', '1.31.5');
    const c = await createCluster(t, org, { slug: 'movable', updateChannel: 'ch-move', autoUpgrade: true, maintenanceScheduleId: Number(sched.id) });
    await moveChannel(t, 'ch-move', '1.31.6');
    await run(SUNDAY);
    await run(at('2026-11-23T03:00:00Z'));
    expect((await upgradesOf(c))[0].status).toBe('SCHEDULED_NOTIFIED');

    t.clock.set(at('2026-11-23T03:30:00Z'));
    const patched = await t.as(owner.token)
      .patch(`/api/v1/organisations/acme/maintenance-schedule/${created.body.identity}`)
      .send({ windows: [{ day: 'WED', startTime: '05:00', duration: 60 }] });
    expect(patched.status).toBe(200);
    await run(at('2026-11-23T04:00:00Z'));
    const [u] = await upgradesOf(c);
    expect(u).toMatchObject({ status: 'SCHEDULED', windowStart: '2026-11-25T05:00:00.000Z', windowEnd: '2026-11-25T06:00:00.000Z' });
    const audit = await auditOf(u.identity);
    expect(audit.map((a: { type: string }) => a.type)).toContain('SCHEDULED_CLUSTER_UPGRADE_RESCHEDULED');
    await run(at('2026-11-24T05:00:00Z'));
    expect((await upgradesOf(c))[0].status).toBe('SCHEDULED_NOTIFIED');
    await run(at('2026-11-25T05:00:00Z'));
    expect((await upgradesOf(c))[0].status).toBe('UPDATED');
    const types = (await auditOf(u.identity)).map((a: { type: string }) => a.type);
    expect(types.filter((x: string) => x === 'SCHEDULED_CLUSTER_UPGRADE_RESCHEDULED')).toHaveLength(1);
  });

  it('cancels a planned upgrade when auto-upgrade is turned off or the channel moves back, but keeps admin-scheduled ones', async () => {
    await createChannel(t, 'ch-off', '1.31.5');
    const off = await createCluster(t, org, { slug: 'turned-off', updateChannel: 'ch-off', autoUpgrade: true, maintenanceScheduleId: scheduleId });
    const back = await createCluster(t, org, { slug: 'moved-back', updateChannel: 'ch-off', autoUpgrade: true, maintenanceScheduleId: scheduleId });
    await moveChannel(t, 'ch-off', '1.31.6');
    await run(SUNDAY);
    await t.db.query(`UPDATE clusters SET auto_upgrade = false WHERE id = $1`, [off.id]);
    await run(at('2026-11-22T11:00:00Z'));
    expect((await upgradesOf(off)).map((u) => u.status)).toEqual(['CANCELLED']);
    expect((await upgradesOf(back)).map((u) => u.status)).toEqual(['SCHEDULED']);
    const [msg] = await t.db.query(
      `SELECT message FROM activity_events WHERE type = 'SCHEDULED_CLUSTER_UPGRADE_CANCELLED' AND message LIKE '%production/turned-off%'`,
    );
    expect(msg.message).toContain('auto-upgrade was turned off');

    await moveChannel(t, 'ch-off', '1.31.5');
    await run(at('2026-11-22T12:00:00Z'));
    expect((await upgradesOf(back)).map((u) => u.status)).toEqual(['CANCELLED']);
    const [row] = await t.db.query(`SELECT cancelled_by FROM scheduled_cluster_upgrades WHERE cluster_id = $1`, [back.id]);
    expect(row.cancelled_by).toBe('system');
    // the scheduler's own cancellation does not block planning that version again
    await moveChannel(t, 'ch-off', '1.31.6');
    await run(at('2026-11-22T12:30:00Z'));
    expect((await upgradesOf(back)).map((u) => `${u.status} ${u.toClusterVersion}`)).toEqual(['CANCELLED 1.31.6', 'SCHEDULED 1.31.6']);

    // an upgrade a platform administrator scheduled is left alone
    const manual = await createCluster(t, org, { slug: 'admin-planned', version: '1.31.4', maintenanceScheduleId: scheduleId });
    const res = await t.admin().post('/admin/v1/scheduled-cluster-upgrades').send({
      clusterIdentity: manual.identity,
      toClusterVersion: '1.31.6',
      windowStart: '2026-11-25T01:00:00Z',
      windowEnd: '2026-11-25T02:00:00Z',
      ignoreMaintenanceSchedule: true,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ignoreMaintenanceSchedule: true, windowStart: '2026-11-25T01:00:00.000Z', scheduleRequestDate: expect.any(String) });
    // Without the flag, an administrator's upgrade goes into the cluster's first maintenance window from windowStart.
    const inWindow = await createCluster(t, org, { slug: 'admin-windowed', version: '1.31.4', maintenanceScheduleId: scheduleId });
    const windowed = await t.admin().post('/admin/v1/scheduled-cluster-upgrades').send({
      clusterIdentity: inWindow.identity,
      toClusterVersion: '1.31.6',
      windowStart: '2026-11-25T01:00:00Z',
      windowEnd: '2026-11-25T02:00:00Z',
    });
    expect(windowed.body).toMatchObject({ ignoreMaintenanceSchedule: false, windowStart: '2026-12-01T02:00:00.000Z', windowEnd: '2026-12-01T04:00:00.000Z' });
    await run(at('2026-11-22T13:00:00Z'));
    expect((await upgradesOf(manual)).map((u) => u.status)).toEqual(['SCHEDULED']);
    await run(at('2026-11-25T01:00:00Z'));
    expect((await upgradesOf(manual)).map((u) => u.status)).toEqual(['UPDATED']);
  });
});

describe('upgrade scheduler: the window open now', () => {
  let t: TestApp;
  let scheduler: UpgradeSchedulerService;
  let owner: TestUser;
  let org: OrgFixture;

  beforeAll(async () => {
    t = await startTestApp();
    scheduler = t.get(UpgradeSchedulerService);
    owner = await t.createUser('open-owner');
    org = await createOrg(t, 'openwin', [{ user: owner, role: 'OWNER' }]);
  });
  afterAll(() => t.close());

  async function scheduleWith(windows: object[]): Promise<number> {
    const res = await t.as(owner.token).post('/api/v1/organisations/openwin/maintenance-schedule').send({ name: `s-${Math.random()}`, windows });
    expect(res.status).toBe(200);
    return Number((await t.db.query(`SELECT id FROM maintenance_schedules WHERE identity = $1`, [res.body.identity]))[0].id);
  }
  const upgradesOf = async (c: ClusterFixture) =>
    (await t.as(owner.token).get(`/api/v1/orgs/openwin/scheduled-cluster-upgrades?clusterIdentities=${c.identity}`)).body.content as Upgrade[];

  it('plans into the window open now (Monday 00:00 for 24 h) and starts it in that window', async () => {
    const scheduleId = await scheduleWith([{ day: 'MONDAY', startTime: '00:00', duration: 1440 }]);
    await createChannel(t, 'ch-open', '1.31.5');
    const c = await createCluster(t, org, { slug: 'open', version: '1.31.5', updateChannel: 'ch-open', autoUpgrade: true, maintenanceScheduleId: scheduleId });
    await moveChannel(t, 'ch-open', '1.31.6');
    t.clock.set(at('2026-11-23T10:00:00Z')); // Monday 10:00
    await scheduler.runOnce();
    // One pass plans it into the open window, announces it (no 24 h notice is possible) and starts it.
    const [u] = await upgradesOf(c);
    expect(u).toMatchObject({ status: 'UPDATED', windowStart: '2026-11-23T00:00:00.000Z', windowEnd: '2026-11-24T00:00:00.000Z' });
    const steps = await t.db.query(`SELECT type FROM audit_events WHERE referenced_entity_identity = $1 ORDER BY id`, [u.identity]);
    expect(steps.map((r: { type: string }) => r.type)).toEqual([
      'SCHEDULED_CLUSTER_UPGRADE_SCHEDULED',
      'SCHEDULED_CLUSTER_UPGRADE_SCHEDULED_NOTIFIED',
      'SCHEDULED_CLUSTER_UPGRADE_UPDATED',
    ]);

    // The cluster never reports the new version (no reconciler runs here): still UPDATED until the window's
    // end plus the 2 h grace, then FAILED with the reason, and the cluster back on the version it runs.
    t.clock.set(at('2026-11-24T01:59:00Z'));
    await scheduler.runOnce();
    expect((await upgradesOf(c))[0].status).toBe('UPDATED');
    t.clock.set(at('2026-11-24T02:00:00Z'));
    await scheduler.runOnce();
    const [failed] = await upgradesOf(c);
    expect(failed.status).toBe('FAILED');
    expect(failed.reason).toMatch(/^timed out: the cluster did not reach 1\.31\.6 by 2026-11-24T02:00:00\.000Z/);
    const [row] = await t.db.query(`SELECT version FROM clusters WHERE id = $1`, [c.id]);
    expect(row.version).toBe('1.31.5');
    const [audit] = await t.db.query(
      `SELECT actor_username, details FROM audit_events WHERE referenced_entity_identity = $1 AND type = 'SCHEDULED_CLUSTER_UPGRADE_FAILED'`,
      [u.identity],
    );
    expect(audit.actor_username).toBe('system');
    expect(audit.details.version).toEqual({ old: '1.31.6', new: '1.31.5' });
  });

  it('takes the next window when less than 30 minutes of the open one remain', async () => {
    const scheduleId = await scheduleWith([{ day: 'MONDAY', startTime: '00:00', duration: 1440 }]);
    await createChannel(t, 'ch-late', '1.31.5');
    const c = await createCluster(t, org, { slug: 'late', version: '1.31.5', updateChannel: 'ch-late', autoUpgrade: true, maintenanceScheduleId: scheduleId });
    await moveChannel(t, 'ch-late', '1.31.6');
    t.clock.set(at('2026-11-23T23:31:00Z')); // 29 minutes left
    await scheduler.runOnce();
    expect((await upgradesOf(c))[0]).toMatchObject({ status: 'SCHEDULED', windowStart: '2026-11-30T00:00:00.000Z' });
  });
});

describe('maintenance schedules local to a time zone', () => {
  let t: TestApp;
  let owner: TestUser;
  let org: OrgFixture;
  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.createUser('tz-owner');
    org = await createOrg(t, 'tzorg', [{ user: owner, role: 'OWNER' }]);
  });
  afterAll(() => t.close());

  it('stores and answers the IANA zone (UTC by default), refuses unknown zones, and plans in local time across the DST change', async () => {
    const base = '/api/v1/organisations/tzorg/maintenance-schedule';
    const utc = await t.as(owner.token).post(base).send({ name: 'utc', windows: [{ day: 'sun', startTime: '02:30', duration: 60 }] });
    expect(utc.body.timeZone).toBe('UTC');
    const bad = await t.as(owner.token).post(base).send({ name: 'bad', timeZone: 'Mars/Olympus', windows: [{ day: 'sun', startTime: '02:30', duration: 60 }] });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0]).toEqual({ field: 'timeZone', message: "timeZone 'Mars/Olympus' is not a known IANA time zone (e.g. Europe/Amsterdam, UTC)" });
    const ams = await t.as(owner.token).post(base).send({ name: 'ams', timeZone: 'Europe/Amsterdam', windows: [{ day: 'SUNDAY', startTime: '02:30', duration: 60 }] });
    expect(ams.status).toBe(200);
    expect(ams.body).toMatchObject({ timeZone: 'Europe/Amsterdam', windows: [{ day: 'SUNDAY', startTime: '02:30', duration: 60 }] });
    const patched = await t.as(owner.token).patch(`${base}/${utc.body.identity}`).send({ timeZone: 'Asia/Tokyo' });
    expect(patched.body.timeZone).toBe('Asia/Tokyo');
    const [audit] = await t.db.query(`SELECT details FROM audit_events WHERE type = 'MAINTENANCE_SCHEDULE_UPDATED' ORDER BY id DESC LIMIT 1`);
    expect(audit.details.timeZone).toEqual({ old: 'UTC', new: 'Asia/Tokyo' });

    // An auto-upgrade on the Amsterdam schedule is planned at 02:30 local, which the DST night moves to 03:30 CEST.
    const [row] = await t.db.query(`SELECT id FROM maintenance_schedules WHERE identity = $1`, [ams.body.identity]);
    await createChannel(t, 'ch-tz', '1.31.5');
    const c = await createCluster(t, org, { slug: 'tz', version: '1.31.5', updateChannel: 'ch-tz', autoUpgrade: true, maintenanceScheduleId: Number(row.id) });
    await moveChannel(t, 'ch-tz', '1.31.6');
    t.clock.set(at('2026-03-23T12:00:00Z'));
    await t.get(UpgradeSchedulerService).runOnce();
    const [u] = (await t.as(owner.token).get(`/api/v1/orgs/tzorg/scheduled-cluster-upgrades?clusterIdentities=${c.identity}`)).body.content;
    expect(u).toMatchObject({ windowStart: '2026-03-29T01:30:00.000Z', windowEnd: '2026-03-29T02:30:00.000Z' });
    t.clock.set(null);
  });
});

describe('auto-upgrade policy', () => {
  let t: TestApp;
  let owner: TestUser;
  let org: OrgFixture;
  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.createUser('policy-owner');
    org = await createOrg(t, 'policy', [{ user: owner, role: 'OWNER' }]);
  });
  afterAll(() => t.close());

  it('PATCH_ONLY plans patches but not a new minor, and the cluster shows the upgrade is available', async () => {
    await createChannel(t, 'ch-policy', '1.30.9');
    const c = await createCluster(t, org, { slug: 'patchonly', version: '1.30.9', updateChannel: 'ch-policy', autoUpgrade: true });
    const env = (await t.db.query(`SELECT e.slug FROM clusters c JOIN environments e ON e.id = c.environment_id WHERE c.id = $1`, [c.id]))[0].slug;
    const path = `/api/v1/orgs/policy/clusters/${env}/patchonly`;
    const set = await t.as(owner.token).patch(path).send({ autoUpgradePolicy: 'PATCH_ONLY' });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ autoUpgradePolicy: 'PATCH_ONLY', upgradeAvailable: null });
    expect((await t.as(owner.token).patch(path).send({ autoUpgradePolicy: 'MINOR_ONLY' })).status).toBe(400);

    await moveChannel(t, 'ch-policy', '1.31.6'); // a new minor
    t.clock.set(at('2026-11-23T10:00:00Z'));
    await t.get(UpgradeSchedulerService).runOnce();
    const list = (await t.as(owner.token).get(`/api/v1/orgs/policy/scheduled-cluster-upgrades?clusterIdentities=${c.identity}`)).body;
    expect(list.content).toEqual([]);
    const got = await t.as(owner.token).get(path);
    expect(got.body.upgradeAvailable).toBe('1.31.6');

    // Back to PATCH_AND_MINOR: the minor upgrade is planned.
    await t.as(owner.token).patch(path).send({ autoUpgradePolicy: 'PATCH_AND_MINOR' }).expect(200);
    await t.get(UpgradeSchedulerService).runOnce();
    const planned = (await t.as(owner.token).get(`/api/v1/orgs/policy/scheduled-cluster-upgrades?clusterIdentities=${c.identity}`)).body.content;
    expect(planned[0]).toMatchObject({ toClusterVersion: '1.31.6' });
    t.clock.set(null);
  });
});
