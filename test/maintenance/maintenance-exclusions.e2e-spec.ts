import { UpgradeSchedulerService } from '../../src/scheduler/upgrade-scheduler.service';
import { expectErrorBody, startTestApp, TestApp, TestUser } from '../support/test-app';
import { ClusterFixture, createChannel, createCluster, createOrg, moveChannel, OrgFixture } from '../upgrades/fixtures';

const base = '/api/v1/organisations/acme/maintenance-schedule';
const clustersPath = '/api/v1/orgs/acme/clusters/production';
/** A Sunday; the schedules below open Tuesdays 02:00-04:00 UTC (next: 2026-11-24, then 2026-12-01). */
const SUNDAY = new Date('2026-11-22T10:00:00Z');
const at = (iso: string) => new Date(iso);
const TUESDAY_NIGHT = [{ day: 'TUESDAY', startTime: '02:00', duration: 120 }];
const DAY_MS = 24 * 60 * 60 * 1000;
/** Covers the window of Tuesday 2026-11-24. */
const OVER_NEXT_TUESDAY = { startsAt: '2026-11-23T00:00:00Z', endsAt: '2026-11-25T00:00:00Z' };

interface Upgrade {
  identity: string;
  status: string;
  toClusterVersion: string;
  windowStart: string;
  windowEnd: string;
}

describe('maintenance exclusions', () => {
  let t: TestApp;
  let scheduler: UpgradeSchedulerService;
  let member: TestUser;
  let org: OrgFixture;
  let seq = 0;

  beforeAll(async () => {
    t = await startTestApp();
    scheduler = t.get(UpgradeSchedulerService);
    member = await t.createUser('ex-member');
    org = await createOrg(t, 'acme', [{ user: member, role: 'MEMBER' }]);
  });
  beforeEach(() => t.clock.set(SUNDAY));
  afterAll(() => t.close());

  const createSchedule = (body: Record<string, unknown>) =>
    t.as(member.token).post(`${base}?fieldValidation=Strict`).send({ name: `s${++seq}`, windows: TUESDAY_NIGHT, ...body });
  const patchSchedule = (identity: string, body: Record<string, unknown>) =>
    t.as(member.token).patch(`${base}/${identity}?fieldValidation=Strict`).send(body);
  const patchCluster = (slug: string, body: Record<string, unknown>) =>
    t.as(member.token).patch(`${clustersPath}/${slug}?fieldValidation=Strict`).send(body);
  const scheduleId = async (identity: string) =>
    Number((await t.db.query(`SELECT id FROM maintenance_schedules WHERE identity = $1`, [identity]))[0].id);
  const run = async (when: Date) => {
    t.clock.set(when);
    return scheduler.runOnce();
  };
  const upgradesOf = async (c: ClusterFixture): Promise<Upgrade[]> => {
    const res = await t.as(member.token).get(`/api/v1/orgs/acme/scheduled-cluster-upgrades?clusterIdentities=${c.identity}&sort=createdAt,asc&size=100`);
    expect(res.status).toBe(200);
    return res.body.content;
  };
  /** An auto-upgrade cluster on its own channel at 1.31.5. */
  const autoCluster = async (slug: string, maintenanceScheduleId: number | null) => {
    await createChannel(t, `ch-${slug}`, '1.31.5');
    return createCluster(t, org, { slug, version: '1.31.5', updateChannel: `ch-${slug}`, autoUpgrade: true, maintenanceScheduleId });
  };
  const expectFields = (res: { status: number; body: Record<string, any> }, field: string) => {
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 400);
    const fields = (res.body.errors ?? []).map((e: { field: string }) => e.field);
    expect(fields).toContain(field);
    return res.body.errors.find((e: { field: string }) => e.field === field).message as string;
  };
  const exclusion = (extra: Record<string, unknown> = {}) => ({
    name: 'Freeze',
    startsAt: '2026-12-01T00:00:00Z',
    endsAt: '2026-12-10T00:00:00Z',
    scope: 'NO_UPGRADES',
    ...extra,
  });

  describe('validation', () => {
    it('accepts and answers exclusions (default none), normalised to UTC, on create and update', async () => {
      const plain = await createSchedule({});
      expect(plain.status).toBe(200);
      expect(plain.body.exclusions).toEqual([]);

      const res = await createSchedule({
        exclusions: [exclusion({ name: '  Year end  ', startsAt: '2026-12-20T01:00:00+01:00', endsAt: '2027-01-04T00:00:00.000Z' })],
      });
      expect(res.status).toBe(200);
      expect(res.body.exclusions).toEqual([
        { name: 'Year end', startsAt: '2026-12-20T00:00:00.000Z', endsAt: '2027-01-04T00:00:00.000Z', scope: 'NO_UPGRADES' },
      ]);
      const read = await t.as(member.token).get(`${base}/${res.body.identity}`);
      expect(read.body.exclusions).toEqual(res.body.exclusions);

      const cleared = await patchSchedule(res.body.identity, { exclusions: [] });
      expect(cleared.status).toBe(200);
      expect(cleared.body.exclusions).toEqual([]);
    });

    it('holds at most 5 exclusions', async () => {
      const five = Array.from({ length: 5 }, (_, i) => exclusion({ name: `e${i}` }));
      expect((await createSchedule({ exclusions: five })).status).toBe(200);
      const message = expectFields(await createSchedule({ exclusions: [...five, exclusion()] }), 'exclusions');
      expect(message).toMatch(/at most 5/);
      expectFields(await createSchedule({ exclusions: exclusion() }), 'exclusions');
    });

    it('bounds the name at 1 to 100 characters', async () => {
      expect((await createSchedule({ exclusions: [exclusion({ name: 'n'.repeat(100) })] })).status).toBe(200);
      expectFields(await createSchedule({ exclusions: [exclusion({ name: 'n'.repeat(101) })] }), 'exclusions.0.name');
      expectFields(await createSchedule({ exclusions: [exclusion({ name: '' })] }), 'exclusions.0.name');
      expectFields(await createSchedule({ exclusions: [exclusion({ name: '   ' })] }), 'exclusions.0.name');
      expectFields(await createSchedule({ exclusions: [{ startsAt: '2026-12-01T00:00:00Z', endsAt: '2026-12-02T00:00:00Z', scope: 'NO_UPGRADES' }] }), 'exclusions.0.name');
    });

    it('refuses an exclusion longer than 90 days', async () => {
      const start = Date.parse('2026-12-01T00:00:00Z');
      const ninety = new Date(start + 90 * DAY_MS).toISOString();
      expect((await createSchedule({ exclusions: [exclusion({ endsAt: ninety })] })).status).toBe(200);
      const tooLong = new Date(start + 90 * DAY_MS + 60_000).toISOString();
      const message = expectFields(await createSchedule({ exclusions: [exclusion({ endsAt: tooLong })] }), 'exclusions.0.endsAt');
      expect(message).toMatch(/90 days/);
    });

    it('refuses an endsAt more than 365 days from now (the clock), or in the past', async () => {
      const limit = new Date(SUNDAY.getTime() + 365 * DAY_MS);
      const ok = exclusion({ startsAt: new Date(limit.getTime() - 10 * DAY_MS).toISOString(), endsAt: limit.toISOString() });
      expect((await createSchedule({ exclusions: [ok] })).status).toBe(200);
      const beyond = exclusion({ startsAt: new Date(limit.getTime() - 10 * DAY_MS).toISOString(), endsAt: new Date(limit.getTime() + 60_000).toISOString() });
      const message = expectFields(await createSchedule({ exclusions: [exclusion(), beyond] }), 'exclusions.1.endsAt');
      expect(message).toMatch(/365 days/);
      expectFields(await createSchedule({ exclusions: [exclusion({ startsAt: '2026-11-01T00:00:00Z', endsAt: '2026-11-20T00:00:00Z' })] }), 'exclusions.0.endsAt');
      // the same rule on update
      const created = await createSchedule({});
      expectFields(await patchSchedule(created.body.identity, { exclusions: [beyond] }), 'exclusions.0.endsAt');
    });

    it('refuses startsAt at or after endsAt', async () => {
      const message = expectFields(
        await createSchedule({ exclusions: [exclusion({ startsAt: '2026-12-10T00:00:00Z', endsAt: '2026-12-01T00:00:00Z' })] }),
        'exclusions.0.endsAt',
      );
      expect(message).toMatch(/after startsAt/);
      expectFields(await createSchedule({ exclusions: [exclusion({ startsAt: '2026-12-10T00:00:00Z', endsAt: '2026-12-10T00:00:00Z' })] }), 'exclusions.0.endsAt');
    });

    it('refuses unknown scopes and what is not an ISO 8601 date-time', async () => {
      const message = expectFields(await createSchedule({ exclusions: [exclusion({ scope: 'NO_PATCHES' })] }), 'exclusions.0.scope');
      expect(message).toMatch(/NO_UPGRADES, NO_MINOR_UPGRADES/);
      expectFields(await createSchedule({ exclusions: [exclusion({ scope: undefined })] }), 'exclusions.0.scope');
      for (const startsAt of ['2026-12-01', 'tomorrow', '2026-02-30T00:00:00Z', '2026-12-01T00:00:00', 1764547200000]) {
        expectFields(await createSchedule({ exclusions: [exclusion({ startsAt })] }), 'exclusions.0.startsAt');
      }
      expectFields(await createSchedule({ exclusions: [exclusion({ endsAt: '2026-13-01T00:00:00Z' })] }), 'exclusions.0.endsAt');
      expectFields(await createSchedule({ exclusions: [exclusion({ extra: true })] }), 'exclusions.0.extra');
    });
  });

  it('records the exclusions in the audit rows of the schedule', async () => {
    const created = await createSchedule({ exclusions: [exclusion({ name: 'First' })] });
    expect(created.status).toBe(200);
    const id = created.body.identity;
    const changed = await patchSchedule(id, { exclusions: [exclusion({ name: 'Second', scope: 'NO_MINOR_UPGRADES' })] });
    expect(changed.status).toBe(200);
    // the same list again (spelt differently) changes nothing, so it leaves no audit row
    const same = exclusion({ name: ' Second ', scope: 'NO_MINOR_UPGRADES', startsAt: '2026-12-01T01:00:00+01:00' });
    expect((await patchSchedule(id, { exclusions: [same] })).status).toBe(200);
    const audit = await t.db.query(`SELECT type, details FROM audit_events WHERE referenced_entity_identity = $1 ORDER BY id`, [id]);
    expect(audit.map((a: { type: string }) => a.type)).toEqual(['MAINTENANCE_SCHEDULE_CREATED', 'MAINTENANCE_SCHEDULE_UPDATED']);
    const first = { name: 'First', startsAt: '2026-12-01T00:00:00.000Z', endsAt: '2026-12-10T00:00:00.000Z', scope: 'NO_UPGRADES' };
    const second = { ...first, name: 'Second', scope: 'NO_MINOR_UPGRADES' };
    expect(audit[0].details.exclusions).toEqual({ old: null, new: [first] });
    expect(audit[1].details).toEqual({ exclusions: { old: [first], new: [second] } });
  });

  it('plans an upgrade into the first window after an exclusion instead of one it overlaps', async () => {
    const s = await createSchedule({ exclusions: [{ name: 'Launch week', ...OVER_NEXT_TUESDAY, scope: 'NO_UPGRADES' }] });
    const c = await autoCluster('skipper', await scheduleId(s.body.identity));
    await moveChannel(t, 'ch-skipper', '1.31.6');
    await run(SUNDAY);
    const [u] = await upgradesOf(c);
    expect(u).toMatchObject({ status: 'SCHEDULED', toClusterVersion: '1.31.6', windowStart: '2026-12-01T02:00:00.000Z', windowEnd: '2026-12-01T04:00:00.000Z' });
    // nothing moves it back into the excluded window on later passes
    await run(at('2026-11-23T12:00:00Z'));
    await run(at('2026-11-24T02:30:00Z'));
    const [again] = await upgradesOf(c);
    expect(again).toMatchObject({ status: 'SCHEDULED', windowStart: '2026-12-01T02:00:00.000Z' });
    const types = (await t.db.query(`SELECT type FROM audit_events WHERE referenced_entity_identity = $1`, [u.identity])).map((a: { type: string }) => a.type);
    expect(types).toEqual(['SCHEDULED_CLUSTER_UPGRADE_SCHEDULED']);
  });

  it('NO_MINOR_UPGRADES lets a patch upgrade through and defers a minor one', async () => {
    const s = await createSchedule({ exclusions: [{ name: 'No minors', ...OVER_NEXT_TUESDAY, scope: 'NO_MINOR_UPGRADES' }] });
    const id = await scheduleId(s.body.identity);
    const patch = await autoCluster('patchy', id);
    const minor = await autoCluster('minor', id);
    await moveChannel(t, 'ch-patchy', '1.31.6');
    await moveChannel(t, 'ch-minor', '1.32.0');
    await run(SUNDAY);
    expect((await upgradesOf(patch))[0]).toMatchObject({ toClusterVersion: '1.31.6', windowStart: '2026-11-24T02:00:00.000Z' });
    expect((await upgradesOf(minor))[0]).toMatchObject({ toClusterVersion: '1.32.0', windowStart: '2026-12-01T02:00:00.000Z' });
    await run(at('2026-11-24T02:05:00Z'));
    expect((await upgradesOf(patch))[0].status).toBe('UPDATED');
    expect((await upgradesOf(minor))[0]).toMatchObject({ status: 'SCHEDULED', windowStart: '2026-12-01T02:00:00.000Z' });
  });

  it('moves a planned upgrade when an exclusion is added over its window, and announces it again', async () => {
    const s = await createSchedule({});
    const c = await autoCluster('moved', await scheduleId(s.body.identity));
    await moveChannel(t, 'ch-moved', '1.31.6');
    await run(SUNDAY);
    await run(at('2026-11-23T03:00:00Z'));
    let [u] = await upgradesOf(c);
    expect(u).toMatchObject({ status: 'SCHEDULED_NOTIFIED', windowStart: '2026-11-24T02:00:00.000Z' });

    t.clock.set(at('2026-11-23T03:30:00Z'));
    const patched = await patchSchedule(s.body.identity, {
      exclusions: [{ name: 'Black Friday', startsAt: '2026-11-23T12:00:00Z', endsAt: '2026-11-28T00:00:00Z', scope: 'NO_UPGRADES' }],
    });
    expect(patched.status).toBe(200);
    await run(at('2026-11-23T04:00:00Z'));
    [u] = await upgradesOf(c);
    expect(u).toMatchObject({ status: 'SCHEDULED', windowStart: '2026-12-01T02:00:00.000Z', windowEnd: '2026-12-01T04:00:00.000Z' });
    const [row] = await t.db.query(`SELECT notified_at FROM scheduled_cluster_upgrades WHERE identity = $1`, [u.identity]);
    expect(row.notified_at).toBeNull();

    const audit = await t.db.query(`SELECT type, actor_username, details FROM audit_events WHERE referenced_entity_identity = $1 ORDER BY id`, [u.identity]);
    const moved = audit.filter((a: { type: string }) => a.type === 'SCHEDULED_CLUSTER_UPGRADE_RESCHEDULED');
    expect(moved).toHaveLength(1);
    expect(moved[0]).toMatchObject({ actor_username: 'system' });
    expect(moved[0].details).toEqual({
      status: { old: 'SCHEDULED_NOTIFIED', new: 'SCHEDULED' },
      windowStart: { old: '2026-11-24T02:00:00.000Z', new: '2026-12-01T02:00:00.000Z' },
      windowEnd: { old: '2026-11-24T04:00:00.000Z', new: '2026-12-01T04:00:00.000Z' },
    });
    const [activity] = await t.db.query(
      `SELECT message FROM activity_events WHERE organisation_id = $1 AND type = 'SCHEDULED_CLUSTER_UPGRADE_RESCHEDULED' AND message LIKE '%production/moved%'`,
      [org.id],
    );
    expect(activity.message).toContain('to the window 2026-12-01 02:00 to 04:00 UTC');
    expect(activity.message).toContain('maintenance exclusion "Black Friday"');
    expect(activity.message).toContain(`maintenance schedule ${s.body.name}`);

    // the next passes leave it where it is, announce it again a day ahead and start it in the new window
    await run(at('2026-11-24T02:30:00Z'));
    expect((await upgradesOf(c))[0]).toMatchObject({ status: 'SCHEDULED', windowStart: '2026-12-01T02:00:00.000Z' });
    await run(at('2026-11-30T02:00:00Z'));
    expect((await upgradesOf(c))[0].status).toBe('SCHEDULED_NOTIFIED');
    await run(at('2026-12-01T02:00:00Z'));
    expect((await upgradesOf(c))[0].status).toBe('UPDATED');
  });

  describe('per cluster (PATCH of the cluster)', () => {
    it('stores, answers and audits maintenanceExclusions, with the same bounds', async () => {
      await createCluster(t, org, { slug: 'frozen' });
      const before = await t.as(member.token).get(`${clustersPath}/frozen`);
      expect(before.status).toBe(200);
      expect(before.body.maintenanceExclusions).toEqual([]);

      const res = await patchCluster('frozen', { maintenanceExclusions: [exclusion({ name: 'Audit week', scope: 'NO_MINOR_UPGRADES' })] });
      expect(res.status).toBe(200);
      const stored = { name: 'Audit week', startsAt: '2026-12-01T00:00:00.000Z', endsAt: '2026-12-10T00:00:00.000Z', scope: 'NO_MINOR_UPGRADES' };
      expect(res.body.maintenanceExclusions).toEqual([stored]);
      expect((await t.as(member.token).get(`${clustersPath}/frozen`)).body.maintenanceExclusions).toEqual([stored]);
      const [audit] = await t.db.query(
        `SELECT details FROM audit_events WHERE type = 'CLUSTER_UPDATED' AND cluster_slug = 'frozen' ORDER BY id DESC LIMIT 1`,
      );
      expect(audit.details).toEqual({ maintenanceExclusions: { old: [], new: [stored] } });

      const six = Array.from({ length: 6 }, (_, i) => exclusion({ name: `e${i}` }));
      expectFields(await patchCluster('frozen', { maintenanceExclusions: six }), 'maintenanceExclusions');
      expectFields(await patchCluster('frozen', { maintenanceExclusions: [exclusion({ scope: 'SOMETIMES' })] }), 'maintenanceExclusions.0.scope');
      expectFields(await patchCluster('frozen', { maintenanceExclusions: [exclusion({ endsAt: '2027-06-01T00:00:00Z' })] }), 'maintenanceExclusions.0.endsAt');
      expectFields(
        await patchCluster('frozen', { maintenanceExclusions: [exclusion({ startsAt: '2027-11-20T00:00:00Z', endsAt: '2027-11-30T00:00:00Z' })] }),
        'maintenanceExclusions.0.endsAt',
      );
      expect((await t.as(member.token).get(`${clustersPath}/frozen`)).body.maintenanceExclusions).toEqual([stored]);
    });

    it("holds back a cluster without a schedule: the default window starts when the cluster's exclusion ends", async () => {
      const c = await autoCluster('no-schedule', null);
      const res = await patchCluster('no-schedule', {
        maintenanceExclusions: [{ name: 'Launch', startsAt: '2026-11-22T00:00:00Z', endsAt: '2026-11-30T00:00:00Z', scope: 'NO_UPGRADES' }],
      });
      expect(res.status).toBe(200);
      await moveChannel(t, 'ch-no-schedule', '1.31.6');
      await run(SUNDAY);
      expect((await upgradesOf(c))[0]).toMatchObject({ status: 'SCHEDULED', windowStart: '2026-11-30T00:00:00.000Z', windowEnd: '2026-12-01T00:00:00.000Z' });
    });

    it("moves a planned upgrade when the cluster's own exclusion covers its window", async () => {
      const s = await createSchedule({});
      const c = await autoCluster('own-freeze', await scheduleId(s.body.identity));
      await moveChannel(t, 'ch-own-freeze', '1.32.0');
      await run(SUNDAY);
      expect((await upgradesOf(c))[0].windowStart).toBe('2026-11-24T02:00:00.000Z');
      const res = await patchCluster('own-freeze', {
        maintenanceExclusions: [{ name: 'Quarter close', ...OVER_NEXT_TUESDAY, scope: 'NO_MINOR_UPGRADES' }],
      });
      expect(res.status).toBe(200);
      await run(at('2026-11-22T11:00:00Z'));
      const [u] = await upgradesOf(c);
      expect(u).toMatchObject({ status: 'SCHEDULED', windowStart: '2026-12-01T02:00:00.000Z' });
      const [activity] = await t.db.query(
        `SELECT message FROM activity_events WHERE type = 'SCHEDULED_CLUSTER_UPGRADE_RESCHEDULED' AND message LIKE '%production/own-freeze%'`,
      );
      expect(activity.message).toContain('maintenance exclusion "Quarter close" (NO_MINOR_UPGRADES, 2026-11-23 00:00 to 2026-11-25 00:00 UTC) of the cluster');
    });
  });

  it('does not hold back an upgrade a platform administrator created', async () => {
    const c = await createCluster(t, org, { slug: 'admin-upgraded', version: '1.31.5' });
    expect(
      (
        await patchCluster('admin-upgraded', {
          maintenanceExclusions: [{ name: 'Everything', startsAt: '2026-11-22T00:00:00Z', endsAt: '2026-12-20T00:00:00Z', scope: 'NO_UPGRADES' }],
        })
      ).status,
    ).toBe(200);
    const created = await t.admin().post('/admin/v1/scheduled-cluster-upgrades').send({
      clusterIdentity: c.identity,
      toClusterVersion: '1.31.6',
      windowStart: '2026-11-23T10:00:00Z',
      windowEnd: '2026-11-23T12:00:00Z',
    });
    expect(created.status).toBe(200);
    await run(at('2026-11-23T10:05:00Z'));
    expect((await upgradesOf(c))[0]).toMatchObject({ status: 'UPDATED', windowStart: '2026-11-23T10:00:00.000Z' });
  });
});
