import { UpgradeSchedulerService } from '../../src/scheduler/upgrade-scheduler.service';
import { startTestApp, TestApp, TestUser } from '../support/test-app';
import { ClusterFixture, createChannel, createCluster, createOrg, createSchedule, moveChannel, OrgFixture } from '../upgrades/fixtures';

/** Every day 02:00-04:00 UTC. */
const DAILY = ['MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY', 'SUNDAY'].map((day) => ({ day, startTime: '02:00', duration: 120 }));
const SUNDAY = new Date('2026-11-22T10:00:00Z');
const at = (iso: string) => new Date(iso);

interface Upgrade {
  identity: string;
  status: string;
  toClusterVersion: string;
  windowStart: string;
  windowEnd: string;
  reason: string;
  blockedReason: string | null;
}

/** Rollout sequencing: upstream -> downstream clusters, soak time, a failed upstream upgrade holding its downstream. */
describe('rollout sequencing', () => {
  let t: TestApp;
  let scheduler: UpgradeSchedulerService;
  let owner: TestUser;
  let org: OrgFixture;
  let scheduleId: number;

  beforeAll(async () => {
    t = await startTestApp();
    scheduler = t.get(UpgradeSchedulerService);
    owner = await t.createUser('seq-owner');
    org = await createOrg(t, 'acme', [{ user: owner, role: 'OWNER' }]);
    scheduleId = (await createSchedule(t, org, DAILY, 'daily')).id;
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
  const patchCluster = (c: ClusterFixture, body: object) =>
    t.as(owner.token).patch(`/api/v1/orgs/acme/clusters/production/${c.slug}?fieldValidation=Strict`).send(body);
  const patchOrg = (body: object) => t.as(owner.token).patch(`/api/v1/organisations/acme`).send(body);
  const link = async (down: ClusterFixture, up: ClusterFixture) => {
    const res = await patchCluster(down, { upstreamCluster: { identity: up.identity } });
    expect(res.status).toBe(200);
  };
  /** The driver reports the version the scheduler asked for (what the reconciler does). */
  const driverDone = (c: ClusterFixture) => t.db.query(`UPDATE clusters SET observed_version = version WHERE id = $1`, [c.id]);
  const auditTypes = async (identity: string) =>
    (
      await t.db.query(`SELECT type, actor_username FROM audit_events WHERE referenced_entity_identity = $1 ORDER BY id`, [identity])
    ).map((a: { type: string; actor_username: string }) => `${a.actor_username}:${a.type}`);

  it('upgrades a three-cluster chain one link at a time, each after its upstream soaked (organisation default 24 h)', async () => {
    await createChannel(t, 'ch-chain', '1.31.5');
    const opts = { updateChannel: 'ch-chain', autoUpgrade: true, maintenanceScheduleId: scheduleId };
    const up = await createCluster(t, org, { slug: 'chain-up', ...opts });
    const mid = await createCluster(t, org, { slug: 'chain-mid', ...opts });
    const down = await createCluster(t, org, { slug: 'chain-down', ...opts });
    await link(mid, up);
    await link(down, mid);
    const org0 = await t.as(owner.token).get('/api/v1/organisations/acme');
    expect(org0.body.upgradeSoakHours).toBe(24);

    await moveChannel(t, 'ch-chain', '1.31.6');
    await run(SUNDAY);
    const [u] = await upgradesOf(up);
    expect(u).toMatchObject({ status: 'SCHEDULED_NOTIFIED', toClusterVersion: '1.31.6', windowStart: '2026-11-23T02:00:00.000Z', blockedReason: null });
    expect(await upgradesOf(mid)).toEqual([]);
    expect(await upgradesOf(down)).toEqual([]);

    // upstream upgraded Monday 02:00, succeeded 02:10
    await run(at('2026-11-23T02:00:00Z'));
    await driverDone(up);
    await run(at('2026-11-23T02:10:00Z'));
    expect((await upgradesOf(up))[0].status).toBe('SUCCEEDED');
    const [since] = await t.db.query(`SELECT version_since FROM clusters WHERE id = $1`, [up.id]);
    expect(since.version_since.toISOString()).toBe('2026-11-23T02:10:00.000Z');

    // the soak (24 h) ends Tuesday 02:10: nothing before, not even in Tuesday's window
    await run(at('2026-11-23T12:00:00Z'));
    await run(at('2026-11-24T02:09:00Z'));
    expect(await upgradesOf(mid)).toEqual([]);
    await run(at('2026-11-24T02:10:00Z'));
    let [m] = await upgradesOf(mid);
    // Tuesday's window opened before the soak ended: the first window starting after it is Wednesday's
    expect(m).toMatchObject({ status: 'SCHEDULED_NOTIFIED', toClusterVersion: '1.31.6', windowStart: '2026-11-25T02:00:00.000Z', blockedReason: null });
    expect(m.reason).toBe('update channel ch-chain moved to 1.31.6; upstream cluster production/chain-up runs it since 2026-11-23T02:10:00.000Z (soak 24 h)');
    expect(await upgradesOf(down)).toEqual([]);

    await run(at('2026-11-25T02:00:00Z'));
    await driverDone(mid);
    await run(at('2026-11-25T02:30:00Z'));
    [m] = await upgradesOf(mid);
    expect(m.status).toBe('SUCCEEDED');
    // the downstream waits for the middle cluster (its upstream), not for the first one
    await run(at('2026-11-26T02:29:00Z'));
    expect(await upgradesOf(down)).toEqual([]);
    await run(at('2026-11-26T02:30:00Z'));
    const [d] = await upgradesOf(down);
    expect(d).toMatchObject({ status: 'SCHEDULED_NOTIFIED', windowStart: '2026-11-27T02:00:00.000Z' });
    expect(d.reason).toContain('upstream cluster production/chain-mid runs it since 2026-11-25T02:30:00.000Z');
    await run(at('2026-11-27T02:00:00Z'));
    await driverDone(down);
    await run(at('2026-11-27T02:10:00Z'));
    expect((await upgradesOf(down)).map((x) => x.status)).toEqual(['SUCCEEDED']);

    for (const x of [u, m, d]) {
      expect(await auditTypes(x.identity)).toEqual(
        ['SCHEDULED', 'SCHEDULED_NOTIFIED', 'UPDATED', 'SUCCEEDED'].map((s) => `system:SCHEDULED_CLUSTER_UPGRADE_${s}`),
      );
    }
  });

  it("uses a cluster's own soak time over the organisation's, and audits both settings", async () => {
    const set = await patchOrg({ upgradeSoakHours: 48 });
    expect(set.status).toBe(200);
    expect(set.body.upgradeSoakHours).toBe(48);
    const [orgAudit] = await t.db.query(
      `SELECT details FROM audit_events WHERE type = 'ORGANISATION_UPDATED' AND organisation_id = $1 ORDER BY id DESC LIMIT 1`,
      [org.id],
    );
    expect(orgAudit.details).toEqual({ upgradeSoakHours: { old: 24, new: 48 } });

    await createChannel(t, 'ch-own', '1.31.5');
    const opts = { updateChannel: 'ch-own', autoUpgrade: true, maintenanceScheduleId: scheduleId };
    const up = await createCluster(t, org, { slug: 'own-up', ...opts });
    const quick = await createCluster(t, org, { slug: 'own-quick', ...opts });
    const slow = await createCluster(t, org, { slug: 'own-slow', ...opts });
    await link(quick, up);
    await link(slow, up);
    const res = await patchCluster(quick, { upgradeSoakHours: 2 });
    expect(res.status).toBe(200);
    expect(res.body.upgradeSoakHours).toBe(2);
    expect((await t.as(owner.token).get(`/api/v1/orgs/acme/clusters/production/own-slow`)).body.upgradeSoakHours).toBeNull();
    const [clusterAudit] = await t.db.query(
      `SELECT details FROM audit_events WHERE type = 'CLUSTER_UPDATED' AND cluster_id = $1 ORDER BY id DESC LIMIT 1`,
      [quick.id],
    );
    expect(clusterAudit.details).toEqual({ upgradeSoakHours: { old: null, new: 2 } });

    await moveChannel(t, 'ch-own', '1.31.6');
    await run(SUNDAY);
    await run(at('2026-11-23T02:00:00Z'));
    await driverDone(up);
    await run(at('2026-11-23T02:10:00Z'));
    await run(at('2026-11-23T04:09:00Z'));
    expect(await upgradesOf(quick)).toEqual([]);
    await run(at('2026-11-23T04:10:00Z'));
    const [q] = await upgradesOf(quick);
    expect(q).toMatchObject({ status: 'SCHEDULED_NOTIFIED', windowStart: '2026-11-24T02:00:00.000Z' });
    expect(q.reason).toContain('(soak 2 h)');
    // the organisation's 48 h for the other one
    await run(at('2026-11-25T02:09:00Z'));
    expect(await upgradesOf(slow)).toEqual([]);
    await run(at('2026-11-25T02:10:00Z'));
    expect((await upgradesOf(slow))[0]).toMatchObject({ status: 'SCHEDULED_NOTIFIED', windowStart: '2026-11-26T02:00:00.000Z' });

    // null goes back to the organisation's
    const reset = await patchCluster(quick, { upgradeSoakHours: null });
    expect(reset.status).toBe(200);
    expect(reset.body.upgradeSoakHours).toBeNull();
    expect((await patchOrg({ upgradeSoakHours: 24 })).status).toBe(200);
  });

  it('holds a planned downstream upgrade while its upstream has not soaked, and blocks it visibly when the upstream upgrade fails', async () => {
    await createChannel(t, 'ch-fail', '1.31.5');
    const opts = { updateChannel: 'ch-fail', autoUpgrade: true, maintenanceScheduleId: scheduleId };
    const up = await createCluster(t, org, { slug: 'fail-up', ...opts });
    const down = await createCluster(t, org, { slug: 'fail-down', ...opts });
    const fresh = await createCluster(t, org, { slug: 'fail-fresh', ...opts });
    await link(fresh, up);
    await moveChannel(t, 'ch-fail', '1.31.6');
    // planned before it had an upstream cluster
    await run(SUNDAY);
    let [d] = await upgradesOf(down);
    expect(d).toMatchObject({ status: 'SCHEDULED_NOTIFIED', windowStart: '2026-11-23T02:00:00.000Z', blockedReason: null });

    await link(down, up);
    await run(at('2026-11-22T11:00:00Z'));
    [d] = await upgradesOf(down);
    expect(d).toMatchObject({ status: 'SCHEDULED', blockedReason: 'waiting for upstream cluster production/fail-up to run 1.31.6 for 24 h' });

    // the window opens: the upstream starts, the held downstream does not
    await run(at('2026-11-23T02:00:00Z'));
    const [u] = await upgradesOf(up);
    expect(u.status).toBe('UPDATED');
    [d] = await upgradesOf(down);
    expect(d.status).toBe('SCHEDULED');
    const [row] = await t.db.query(`SELECT version FROM clusters WHERE id = $1`, [down.id]);
    expect(row.version).toBe('1.31.5');

    await t.db.query(`UPDATE clusters SET status = 'unknown', status_before_fault = 'started', last_error = 'driver failed: etcd unhealthy' WHERE id = $1`, [up.id]);
    await run(at('2026-11-23T02:30:00Z'));
    expect((await upgradesOf(up))[0].status).toBe('FAILED');
    // the next pass sees the failure
    await run(at('2026-11-23T02:31:00Z'));
    [d] = await upgradesOf(down);
    const reason = `upstream cluster production/fail-up failed its upgrade to 1.31.6 (upgrade ${u.identity})`;
    expect(d).toMatchObject({ status: 'SCHEDULED', blockedReason: reason });
    // read alone too
    const one = await t.as(owner.token).get(`/api/v1/orgs/acme/scheduled-cluster-upgrades/${d.identity}`);
    if (one.status === 200) expect(one.body.blockedReason).toBe(reason);

    // a held upgrade does not miss its window; nothing is planned for the other downstream cluster
    await run(at('2026-11-23T05:00:00Z'));
    await run(at('2026-11-24T05:00:00Z'));
    expect((await upgradesOf(down)).map((x) => [x.status, x.blockedReason])).toEqual([['SCHEDULED', reason]]);
    expect(await upgradesOf(fresh)).toEqual([]);

    expect(await auditTypes(d.identity)).toEqual([
      'system:SCHEDULED_CLUSTER_UPGRADE_SCHEDULED',
      'system:SCHEDULED_CLUSTER_UPGRADE_SCHEDULED_NOTIFIED',
      'system:SCHEDULED_CLUSTER_UPGRADE_BLOCKED',
      'system:SCHEDULED_CLUSTER_UPGRADE_BLOCKED',
    ]);
    const audit = await t.db.query(
      `SELECT details FROM audit_events WHERE referenced_entity_identity = $1 AND type = 'SCHEDULED_CLUSTER_UPGRADE_BLOCKED' ORDER BY id`,
      [d.identity],
    );
    expect(audit[0].details).toEqual({
      blockedReason: { old: null, new: 'waiting for upstream cluster production/fail-up to run 1.31.6 for 24 h' },
      status: { old: 'SCHEDULED_NOTIFIED', new: 'SCHEDULED' },
    });
    expect(audit[1].details).toEqual({ blockedReason: { old: 'waiting for upstream cluster production/fail-up to run 1.31.6 for 24 h', new: reason } });
    const [activity] = await t.db.query(
      `SELECT message, actor_username FROM activity_events WHERE type = 'SCHEDULED_CLUSTER_UPGRADE_BLOCKED' AND message LIKE '%failed its upgrade%'`,
    );
    expect(activity).toEqual({ actor_username: 'system', message: `system held the upgrade of cluster production/fail-down to 1.31.6: ${reason}` });

    // an administrator upgrades the upstream by hand; once it soaked, the held upgrade is released into the next window
    await t.db.query(`UPDATE clusters SET status = 'started', last_error = NULL, version = '1.31.6', observed_version = '1.31.6', version_since = $2 WHERE id = $1`, [
      up.id,
      at('2026-11-25T03:00:00Z'),
    ]);
    await run(at('2026-11-26T02:59:00Z'));
    expect((await upgradesOf(down))[0].blockedReason).toBe('waiting for upstream cluster production/fail-up to run 1.31.6 for 24 h');
    await run(at('2026-11-26T03:00:00Z'));
    [d] = await upgradesOf(down);
    expect(d).toMatchObject({ status: 'SCHEDULED_NOTIFIED', blockedReason: null, windowStart: '2026-11-27T02:00:00.000Z' });
    expect((await auditTypes(d.identity)).slice(4)).toEqual([
      'system:SCHEDULED_CLUSTER_UPGRADE_BLOCKED',
      'system:SCHEDULED_CLUSTER_UPGRADE_UNBLOCKED',
      'system:SCHEDULED_CLUSTER_UPGRADE_SCHEDULED_NOTIFIED',
    ]);
    expect((await upgradesOf(fresh))[0]).toMatchObject({ status: 'SCHEDULED_NOTIFIED', windowStart: '2026-11-27T02:00:00.000Z' });
  });

  it('validates upgradeSoakHours on the organisation and the cluster (400)', async () => {
    for (const bad of [-1, 721, 1.5, '24', null, true]) {
      const res = await patchOrg({ upgradeSoakHours: bad });
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain('upgradeSoakHours');
    }
    for (const ok of [0, 720]) expect((await patchOrg({ upgradeSoakHours: ok })).body.upgradeSoakHours).toBe(ok);
    expect((await patchOrg({ upgradeSoakHours: 24 })).status).toBe(200);
    const c = await createCluster(t, org, { slug: 'validated' });
    for (const bad of [-1, 721, 2.5, 'x', {}]) {
      const res = await patchCluster(c, { upgradeSoakHours: bad });
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain('upgradeSoakHours');
    }
    expect((await patchCluster(c, { upgradeSoakHours: 0 })).body.upgradeSoakHours).toBe(0);
    expect((await patchCluster(c, { upgradeSoakHours: 720 })).body.upgradeSoakHours).toBe(720);
  });
});

/** Two replicas on one database: each sequencing transition happens once. */
describe('rollout sequencing with two replicas', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    a = await startTestApp();
    b = await startTestApp({}, a.databaseUrl);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const together = async (when: Date) => {
    a.clock.set(when);
    b.clock.set(when);
    await Promise.all([a.get(UpgradeSchedulerService).runOnce(), b.get(UpgradeSchedulerService).runOnce()]);
  };
  const auditCounts = async () =>
    Object.fromEntries(
      (
        await a.db.query(
          `SELECT type, count(*)::int AS n FROM audit_events WHERE type LIKE 'SCHEDULED_CLUSTER_UPGRADE_%' AND actor_username = 'system' GROUP BY type`,
        )
      ).map((r: { type: string; n: number }) => [r.type.replace('SCHEDULED_CLUSTER_UPGRADE_', ''), r.n]),
    );

  it('holds, releases and plans each downstream upgrade once', async () => {
    const owner = await a.createUser('dup-owner');
    const org = await createOrg(a, 'dup', [{ user: owner, role: 'OWNER' }]);
    const schedule = await createSchedule(a, org, DAILY, 'daily');
    await createChannel(a, 'ch-dup', '1.31.5');
    const opts = { updateChannel: 'ch-dup', autoUpgrade: true, maintenanceScheduleId: schedule.id };
    const up = await createCluster(a, org, { slug: 'up', ...opts, autoUpgrade: false });
    const held = [];
    for (let i = 0; i < 4; i++) held.push(await createCluster(a, org, { slug: `held${i}`, ...opts }));
    await moveChannel(a, 'ch-dup', '1.31.6');
    await together(SUNDAY);
    expect(await auditCounts()).toEqual({ SCHEDULED: 4, SCHEDULED_NOTIFIED: 4 });

    await a.db.query(`UPDATE clusters SET upstream_cluster_id = $1 WHERE slug LIKE 'held%'`, [up.id]);
    const fresh = await createCluster(a, org, { slug: 'fresh', ...opts });
    await a.db.query(`UPDATE clusters SET upstream_cluster_id = $1 WHERE id = $2`, [up.id, fresh.id]);
    for (let round = 0; round < 3; round++) await together(at('2026-11-22T11:00:00Z'));
    expect(await auditCounts()).toEqual({ SCHEDULED: 4, SCHEDULED_NOTIFIED: 4, BLOCKED: 4 });

    // the upstream is upgraded by hand and has soaked by Tuesday 01:00
    await a.db.query(`UPDATE clusters SET version = '1.31.6', observed_version = '1.31.6', version_since = $2 WHERE id = $1`, [
      up.id,
      at('2026-11-23T01:00:00Z'),
    ]);
    for (let round = 0; round < 3; round++) await together(at('2026-11-24T01:00:00Z'));
    expect(await auditCounts()).toEqual({ SCHEDULED: 5, SCHEDULED_NOTIFIED: 9, BLOCKED: 4, UNBLOCKED: 4 });
    const rows = await a.db.query(
      `SELECT u.status, u.blocked_reason, u.window_start FROM scheduled_cluster_upgrades u JOIN clusters c ON c.id = u.cluster_id
        WHERE c.slug LIKE 'held%' OR c.slug = 'fresh'`,
    );
    expect(rows).toHaveLength(5);
    for (const r of rows) expect(r).toEqual({ status: 'SCHEDULED_NOTIFIED', blocked_reason: null, window_start: at('2026-11-24T02:00:00Z') });
    const activity = await a.db.query(`SELECT count(*)::int AS n FROM activity_events WHERE type IN ('SCHEDULED_CLUSTER_UPGRADE_BLOCKED','SCHEDULED_CLUSTER_UPGRADE_UNBLOCKED')`);
    expect(activity[0].n).toBe(8);
  });
});
