import { expectErrorBody, startTestApp, TestApp, TestUser } from '../support/test-app';
import { createCluster, createOrg, OrgFixture } from '../upgrades/fixtures';

const base = (org: string) => `/api/v1/organisations/${org}/maintenance-schedule`;
const tuesday = { day: 'TUESDAY', startTime: '02:00', duration: 120 };

describe('maintenance schedules', () => {
  let t: TestApp;
  let owner: TestUser, admin: TestUser, member: TestUser, viewer: TestUser, outsider: TestUser;
  let org: OrgFixture;
  let other: OrgFixture;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.createUser('ms-owner');
    admin = await t.createUser('ms-admin');
    member = await t.createUser('ms-member');
    viewer = await t.createUser('ms-viewer');
    outsider = await t.createUser('ms-outsider');
    org = await createOrg(t, 'acme', [
      { user: owner, role: 'OWNER' },
      { user: admin, role: 'ADMIN' },
      { user: member, role: 'MEMBER' },
      { user: viewer, role: 'VIEWER' },
    ]);
    other = await createOrg(t, 'globex', [{ user: outsider, role: 'OWNER' }]);
  });
  afterAll(() => t.close());

  const create = (token: string, body: unknown, slug = 'acme') => t.as(token).post(`${base(slug)}?fieldValidation=Strict`).send(body as object);

  it('creates a schedule, accepting both day spellings in any case and answering upper-case full names', async () => {
    const res = await create(member.token, {
      name: 'Nightly',
      windows: [
        { day: 'mon', startTime: '01:00', duration: 60 },
        { day: 'Tuesday', startTime: '02:00', duration: 120 },
        { day: 'SUN', startTime: '23:30', duration: 30 },
        { day: 'friday', startTime: '00:00', duration: 1440 },
      ],
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['clusterCount', 'exclusions', 'identity', 'name', 'timeZone', 'windows']);
    expect(res.body).toEqual({
      clusterCount: 0,
      exclusions: [],
      identity: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Nightly',
      timeZone: 'UTC',
      windows: [
        { day: 'MONDAY', startTime: '01:00', duration: 60 },
        { day: 'TUESDAY', startTime: '02:00', duration: 120 },
        { day: 'SUNDAY', startTime: '23:30', duration: 30 },
        { day: 'FRIDAY', startTime: '00:00', duration: 1440 },
      ],
    });
    const [row] = await t.db.query(`SELECT windows FROM maintenance_schedules WHERE identity = $1`, [res.body.identity]);
    expect(row.windows[0].day).toBe('MONDAY');
    const audit = await t.db.query(
      `SELECT type, actor_username, organisation_slug, details FROM audit_events WHERE referenced_entity_identity = $1`,
      [res.body.identity],
    );
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ type: 'MAINTENANCE_SCHEDULE_CREATED', actor_username: 'ms-member', organisation_slug: 'acme' });
    expect(audit[0].details.name).toEqual({ old: null, new: 'Nightly' });
    const activity = await t.db.query(`SELECT message FROM activity_events WHERE organisation_id = $1 AND type = 'MAINTENANCE_SCHEDULE_CREATED'`, [org.id]);
    expect(activity.map((a: { message: string }) => a.message)).toContain('ms-member created maintenance schedule Nightly');
  });

  describe('validation', () => {
    const expectField = async (body: unknown, field: string | RegExp) => {
      const res = await create(member.token, body);
      expect(res.status).toBe(400);
      expectErrorBody(res.body, 400);
      const fields = (res.body.errors ?? []).map((e: { field: string }) => e.field);
      expect(fields.some((f: string) => (typeof field === 'string' ? f === field : field.test(f)))).toBe(true);
      return res;
    };

    it('bounds duration at 30..1440 minutes', async () => {
      await expectField({ name: 'd', windows: [{ ...tuesday, duration: 29 }] }, 'windows.0.duration');
      expect((await create(member.token, { name: 'd30', windows: [{ ...tuesday, duration: 30 }] })).status).toBe(200);
      expect((await create(member.token, { name: 'd1440', windows: [{ ...tuesday, duration: 1440 }] })).status).toBe(200);
      await expectField({ name: 'd', windows: [{ ...tuesday, duration: 1441 }] }, 'windows.0.duration');
      await expectField({ name: 'd', windows: [{ ...tuesday, duration: 60.5 }] }, 'windows.0.duration');
      await expectField({ name: 'd', windows: [{ ...tuesday, duration: '60' }] }, 'windows.0.duration');
    });

    it('refuses bad start times', async () => {
      for (const startTime of ['24:00', '2:00', '02:60', '02:00:00', 'noon', '']) {
        const res = await expectField({ name: 's', windows: [{ ...tuesday, startTime }] }, 'windows.0.startTime');
        expect(res.body.message).toMatch(/HH:mm/);
      }
      expect((await create(member.token, { name: 'edge', windows: [{ ...tuesday, startTime: '23:59', duration: 30 }] })).status).toBe(200);
    });

    it('refuses unknown days', async () => {
      for (const day of ['tues', 'MON DAY', '', 'montag']) await expectField({ name: 'x', windows: [{ ...tuesday, day }] }, 'windows.0.day');
      await expectField({ name: 'x', windows: [{ ...tuesday, day: 1 }] }, 'windows.0.day');
    });

    it('takes a name of 1 to 100 characters (or none: the windows name it) and requires at least one window', async () => {
      const unnamed = await create(member.token, { windows: [tuesday] });
      expect(unnamed.status).toBe(200);
      expect(unnamed.body.name).toBe('TUESDAY 02:00 (120 min)');
      await expectField({ name: '', windows: [tuesday] }, 'name');
      await expectField({ name: '   ', windows: [tuesday] }, 'name');
      expect((await create(member.token, { name: 'n'.repeat(100), windows: [tuesday] })).status).toBe(200);
      await expectField({ name: 'n'.repeat(101), windows: [tuesday] }, 'name');
      await expectField({ name: 'w' }, 'windows');
      await expectField({ name: 'w', windows: [] }, 'windows');
      await expectField({ name: 'w', windows: [tuesday], extra: 1 }, /extra|property/);
      const days = ['MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY', 'SUNDAY'];
      const many = (n: number) =>
        Array.from({ length: n }, (_, i) => ({ day: days[i % 7], startTime: `${String(Math.floor(i / 7) * 2).padStart(2, '0')}:00`, duration: 60 }));
      expect((await create(member.token, { name: 'fifty', windows: many(50) })).status).toBe(200);
      await expectField({ name: 'fifty-one', windows: many(51) }, 'windows');
      const trimmed = await create(member.token, { name: '  Spaced  ', windows: [tuesday] });
      expect(trimmed.body.name).toBe('Spaced');
    });

    it('refuses overlapping windows, naming them, including the wrap past Sunday midnight', async () => {
      let res = await expectField(
        { name: 'o', windows: [tuesday, { day: 'tue', startTime: '03:59', duration: 30 }] },
        'windows',
      );
      expect(res.body.message).toMatch(/windows\[0\].*overlaps windows\[1\]/);
      res = await expectField(
        { name: 'o', windows: [{ day: 'sun', startTime: '23:00', duration: 120 }, { day: 'MON', startTime: '00:30', duration: 30 }] },
        'windows',
      );
      expect(res.body.message).toMatch(/SUNDAY 23:00.*MONDAY 00:30/);
      // touching windows are fine
      const ok = await create(member.token, {
        name: 'touching',
        windows: [{ day: 'sun', startTime: '23:00', duration: 60 }, { day: 'mon', startTime: '00:00', duration: 60 }],
      });
      expect(ok.status).toBe(200);
      const before = await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE type = 'MAINTENANCE_SCHEDULE_CREATED' AND details->'name'->>'new' = 'o'`);
      expect(before[0].n).toBe(0);
    });
  });

  it('reads, lists, patches and deletes, with clusterCount and the delete guard', async () => {
    const created = (await create(member.token, { name: 'To change', windows: [tuesday] })).body;
    const path = `${base('acme')}/${created.identity}`;

    const got = await t.as(viewer.token).get(path);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created);

    const list = await t.as(viewer.token).get(base('acme'));
    expect(list.status).toBe(200);
    expect(Array.isArray(list.body)).toBe(true);
    expect(list.body.map((s: { identity: string }) => s.identity)).toContain(created.identity);

    const [sched] = await t.db.query(`SELECT id FROM maintenance_schedules WHERE identity = $1`, [created.identity]);
    const cluster = await createCluster(t, org, { maintenanceScheduleId: Number(sched.id) });
    expect((await t.as(viewer.token).get(path)).body.clusterCount).toBe(1);
    expect((await t.as(viewer.token).get(base('acme'))).body.find((s: { identity: string }) => s.identity === created.identity).clusterCount).toBe(1);

    const patched = await t.as(member.token).patch(path).send({ name: 'Changed', windows: [{ day: 'wed', startTime: '03:00', duration: 90 }] });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({
      clusterCount: 1,
      exclusions: [],
      identity: created.identity,
      name: 'Changed',
      timeZone: 'UTC',
      windows: [{ day: 'WEDNESDAY', startTime: '03:00', duration: 90 }],
    });
    const onlyName = await t.as(member.token).patch(path).send({ name: 'Changed again' });
    expect(onlyName.body.windows).toEqual([{ day: 'WEDNESDAY', startTime: '03:00', duration: 90 }]);
    const badPatch = await t.as(member.token).patch(path).send({ windows: [] });
    expect(badPatch.status).toBe(400);
    const overlapPatch = await t.as(member.token).patch(path).send({ windows: [tuesday, tuesday] });
    expect(overlapPatch.status).toBe(400);

    const audit = await t.db.query(
      `SELECT type, details FROM audit_events WHERE referenced_entity_identity = $1 ORDER BY id`,
      [created.identity],
    );
    expect(audit.map((a: { type: string }) => a.type)).toEqual([
      'MAINTENANCE_SCHEDULE_CREATED',
      'MAINTENANCE_SCHEDULE_UPDATED',
      'MAINTENANCE_SCHEDULE_UPDATED',
    ]);
    expect(audit[1].details.name).toEqual({ old: 'To change', new: 'Changed' });
    expect(audit[1].details.windows.new).toEqual([{ day: 'WEDNESDAY', startTime: '03:00', duration: 90 }]);
    expect(audit[2].details).toEqual({ name: { old: 'Changed', new: 'Changed again' } });

    const refused = await t.as(member.token).delete(path);
    expect(refused.status).toBe(409);
    expectErrorBody(refused.body, 409);
    expect(refused.body.message).toMatch(/used by 1 cluster/);

    await t.db.query(`UPDATE clusters SET deleted_at = now(), status = 'deleted' WHERE id = $1`, [cluster.id]);
    expect((await t.as(viewer.token).get(path)).body.clusterCount).toBe(0);
    const deleted = await t.as(member.token).delete(path);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await t.as(viewer.token).get(path)).status).toBe(404);
    const [del] = await t.db.query(
      `SELECT details FROM audit_events WHERE referenced_entity_identity = $1 AND type = 'MAINTENANCE_SCHEDULE_DELETED'`,
      [created.identity],
    );
    expect(del.details.name).toEqual({ old: 'Changed again', new: null });
  });

  it('answers 404 for unknown identities and schedules of other organisations, 400 for malformed ones', async () => {
    const missing = await t.as(member.token).get(`${base('acme')}/00000000-0000-4000-8000-000000000000`);
    expect(missing.status).toBe(404);
    expectErrorBody(missing.body, 404);
    const foreign = (await create(outsider.token, { name: 'Theirs', windows: [tuesday] }, 'globex')).body;
    expect((await t.as(member.token).get(`${base('acme')}/${foreign.identity}`)).status).toBe(404);
    expect((await t.as(member.token).patch(`${base('acme')}/${foreign.identity}`).send({ name: 'x' })).status).toBe(404);
    expect((await t.as(member.token).delete(`${base('acme')}/${foreign.identity}`)).status).toBe(404);
    const list = await t.as(member.token).get(base('acme'));
    expect(list.body.map((s: { identity: string }) => s.identity)).not.toContain(foreign.identity);
    const malformed = await t.as(member.token).get(`${base('acme')}/not-a-uuid`);
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors[0].field).toBe('maintenanceScheduleIdentity');
    void other;
  });

  it('applies the role matrix: VIEWER reads, MEMBER and above change, others are refused', async () => {
    const body = { name: 'Roles', windows: [tuesday] };
    for (const u of [owner, admin, member]) expect((await create(u.token, body)).status).toBe(200);
    const byViewer = await create(viewer.token, body);
    expect(byViewer.status).toBe(403);
    expectErrorBody(byViewer.body, 403);
    const s = (await create(member.token, body)).body;
    const path = `${base('acme')}/${s.identity}`;
    expect((await t.as(viewer.token).get(base('acme'))).status).toBe(200);
    expect((await t.as(viewer.token).get(path)).status).toBe(200);
    expect((await t.as(viewer.token).patch(path).send({ name: 'x' })).status).toBe(403);
    expect((await t.as(viewer.token).delete(path)).status).toBe(403);
    expect((await t.as(outsider.token).get(base('acme'))).status).toBe(403);
    expect((await t.as(outsider.token).get(path)).status).toBe(403);
    expect((await t.as(outsider.token).post(base('acme')).send(body)).status).toBe(403);
    expect((await t.as(outsider.token).get(base('no-such-org'))).status).toBe(403);
    expect((await t.http().get(base('acme'))).status).toBe(401);
    expect((await t.http().post(base('acme')).send(body)).status).toBe(401);
    expect((await t.as(admin.token).delete(path)).status).toBe(204);
  });
});

describe('maintenance and upgrade operations in the OpenAPI document', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('documents every operation with its responses, bounds and enums', async () => {
    const res = await t.http().get('/v3/api-docs');
    expect(res.status).toBe(200);
    const doc = res.body;
    const ms = '/api/v1/organisations/{organisationSlug}/maintenance-schedule';
    expect(Object.keys(doc.paths[ms])).toEqual(expect.arrayContaining(['get', 'post']));
    expect(Object.keys(doc.paths[`${ms}/{maintenanceScheduleIdentity}`])).toEqual(expect.arrayContaining(['get', 'patch', 'delete']));
    expect(doc.paths[ms].post.responses['200']).toBeDefined();
    expect(doc.paths[`${ms}/{maintenanceScheduleIdentity}`].delete.responses['204']).toBeDefined();
    expect(doc.paths[`${ms}/{maintenanceScheduleIdentity}`].delete.responses['409']).toBeDefined();
    const up = '/api/v1/orgs/{organisationSlug}/scheduled-cluster-upgrades';
    expect(Object.keys(doc.paths[up])).toEqual(['get']);
    expect(Object.keys(doc.paths[`${up}/{scheduledClusterUpgradeIdentity}`])).toEqual(expect.arrayContaining(['get', 'delete']));
    expect(doc.paths[`${up}/{scheduledClusterUpgradeIdentity}`].delete.responses['200']).toBeDefined();
    expect(doc.paths['/admin/v1/scheduled-cluster-upgrades'].post.responses['200']).toBeDefined();
    expect(doc.paths['/admin/v1/scheduled-cluster-upgrades/{identity}'].patch).toBeDefined();
    const win = doc.components.schemas.MaintenanceWindowRequest.properties;
    expect(win.duration).toMatchObject({ minimum: 30, maximum: 1440 });
    expect(win.day.enum).toEqual(expect.arrayContaining(['MONDAY', 'mon']));
    const upgrade = doc.components.schemas.ScheduledClusterUpgradeResponse.properties;
    expect(upgrade.status.enum).toEqual(['SCHEDULED', 'SCHEDULED_NOTIFIED', 'UPDATED', 'SUCCEEDED', 'CANCELLED', 'SUPERSEDED', 'FAILED', 'MISSED']);
    const params = doc.paths[up].get.parameters.map((p: { name: string }) => p.name);
    expect(params).toEqual(expect.arrayContaining(['clusterIdentities', 'statuses', 'page', 'size', 'sort']));
  });
});
