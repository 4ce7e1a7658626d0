import { expectErrorBody, startTestApp, TestApp, TestUser } from '../support/test-app';
import { ClusterFixture, createCluster, createOrg, insertUpgrade, OrgFixture } from './fixtures';

const base = (org: string) => `/api/v1/orgs/${org}/scheduled-cluster-upgrades`;
const ADMIN_BASE = '/admin/v1/scheduled-cluster-upgrades';
const RESPONSE_KEYS = [
  'blockedReason',
  'clusterIdentity',
  'clusterSlug',
  'createdAt',
  'environmentSlug',
  'fromClusterVersion',
  'identity',
  'ignoreMaintenanceSchedule',
  'modifiedAt',
  'organisationSlug',
  'reason',
  'scheduleRequestDate',
  'status',
  'toClusterVersion',
  'windowEnd',
  'windowStart',
];
const PAGE_KEYS = ['content', 'empty', 'first', 'last', 'number', 'numberOfElements', 'pageable', 'size', 'sort', 'totalElements', 'totalPages'];

describe('scheduled cluster upgrades', () => {
  let t: TestApp;
  let owner: TestUser, admin: TestUser, member: TestUser, viewer: TestUser, outsider: TestUser;
  let org: OrgFixture, other: OrgFixture;
  let web: ClusterFixture, api: ClusterFixture, foreign: ClusterFixture;
  let scheduledId: string, succeededId: string, foreignId: string;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.createUser('up-owner');
    admin = await t.createUser('up-admin');
    member = await t.createUser('up-member');
    viewer = await t.createUser('up-viewer');
    outsider = await t.createUser('up-outsider');
    org = await createOrg(t, 'acme', [
      { user: owner, role: 'OWNER' },
      { user: admin, role: 'ADMIN' },
      { user: member, role: 'MEMBER' },
      { user: viewer, role: 'VIEWER' },
    ]);
    other = await createOrg(t, 'globex', [{ user: outsider, role: 'OWNER' }]);
    web = await createCluster(t, org, { slug: 'web' });
    api = await createCluster(t, org, { slug: 'api' });
    foreign = await createCluster(t, other, { slug: 'theirs' });
    scheduledId = await insertUpgrade(t, org, web, 'SCHEDULED');
    succeededId = await insertUpgrade(t, org, api, 'SUCCEEDED', { from: '1.31.4', to: '1.31.5' });
    foreignId = await insertUpgrade(t, other, foreign, 'SCHEDULED');
  });
  afterAll(() => t.close());

  it('gets one upgrade with exactly the spec fields', async () => {
    const res = await t.as(viewer.token).get(`${base('acme')}/${scheduledId}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(RESPONSE_KEYS);
    expect(res.body).toMatchObject({
      clusterIdentity: web.identity,
      clusterSlug: 'web',
      environmentSlug: 'production',
      organisationSlug: 'acme',
      fromClusterVersion: '1.31.5',
      toClusterVersion: '1.31.6',
      identity: scheduledId,
      status: 'SCHEDULED',
      reason: 'test',
    });
    expect(new Date(res.body.windowStart).getTime()).toBeLessThan(new Date(res.body.windowEnd).getTime());
    expect((await t.as(viewer.token).get(`${base('acme')}/${foreignId}`)).status).toBe(404);
    const missing = await t.as(viewer.token).get(`${base('acme')}/00000000-0000-4000-8000-000000000000`);
    expect(missing.status).toBe(404);
    expectErrorBody(missing.body, 404);
    const malformed = await t.as(viewer.token).get(`${base('acme')}/nope`);
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors[0].field).toBe('scheduledClusterUpgradeIdentity');
  });

  it('lists a form-B page of the organisation, filtered by clusters and statuses (repeatable or comma-separated)', async () => {
    const all = await t.as(viewer.token).get(base('acme'));
    expect(all.status).toBe(200);
    expect(Object.keys(all.body).sort()).toEqual(PAGE_KEYS);
    expect(Array.isArray(all.body.sort)).toBe(true);
    expect(all.body.totalElements).toBe(2);
    expect(all.body.content.map((u: { identity: string }) => u.identity).sort()).toEqual([scheduledId, succeededId].sort());
    expect(Object.keys(all.body.content[0]).sort()).toEqual(RESPONSE_KEYS);

    const byCluster = await t.as(viewer.token).get(`${base('acme')}?clusterIdentities=${web.identity}`);
    expect(byCluster.body.content.map((u: { identity: string }) => u.identity)).toEqual([scheduledId]);
    const both = await t.as(viewer.token).get(`${base('acme')}?clusterIdentities=${web.identity},${api.identity}`);
    expect(both.body.totalElements).toBe(2);
    const repeated = await t.as(viewer.token).get(`${base('acme')}?clusterIdentities=${web.identity}&clusterIdentities=${api.identity}`);
    expect(repeated.body.totalElements).toBe(2);
    const foreignCluster = await t.as(viewer.token).get(`${base('acme')}?clusterIdentities=${foreign.identity}`);
    expect(foreignCluster.body.totalElements).toBe(0);

    const byStatus = await t.as(viewer.token).get(`${base('acme')}?statuses=SUCCEEDED`);
    expect(byStatus.body.content.map((u: { identity: string }) => u.identity)).toEqual([succeededId]);
    const statuses = await t.as(viewer.token).get(`${base('acme')}?statuses=SUCCEEDED,SCHEDULED&statuses=MISSED`);
    expect(statuses.body.totalElements).toBe(2);
    const combined = await t.as(viewer.token).get(`${base('acme')}?statuses=SUCCEEDED&clusterIdentities=${web.identity}`);
    expect(combined.body.totalElements).toBe(0);

    const sorted = await t.as(viewer.token).get(`${base('acme')}?sort=clusterSlug,desc&size=1`);
    expect(sorted.body.content[0].clusterSlug).toBe('web');
    expect(sorted.body.sort).toEqual([{ ascending: false, direction: 'DESC', ignoreCase: false, nullHandling: 'NATIVE', property: 'clusterSlug' }]);
    expect(sorted.body.totalPages).toBe(2);

    // The original Go client's REQUESTED and IN_PROGRESS are aliases of SCHEDULED and UPDATED.
    const aliased = await t.as(viewer.token).get(`${base('acme')}?statuses=REQUESTED,IN_PROGRESS&statuses=MISSED`);
    expect(aliased.status).toBe(200);
    expect(aliased.body.totalElements).toBe((await t.as(viewer.token).get(`${base('acme')}?statuses=SCHEDULED,UPDATED,MISSED`)).body.totalElements);
    const badStatus = await t.as(viewer.token).get(`${base('acme')}?statuses=DONE`);
    expect(badStatus.status).toBe(400);
    expect(badStatus.body.errors[0].field).toBe('statuses');
    expect(badStatus.body.errors[0].message).toContain('SCHEDULED, SCHEDULED_NOTIFIED, UPDATED, SUCCEEDED, CANCELLED, SUPERSEDED, FAILED, MISSED');
    const badUuid = await t.as(viewer.token).get(`${base('acme')}?clusterIdentities=abc`);
    expect(badUuid.status).toBe(400);
    expect(badUuid.body.errors[0].field).toBe('clusterIdentities');
    expect((await t.as(viewer.token).get(`${base('acme')}?sort=color,asc`)).status).toBe(400);
  });

  it('cancels from SCHEDULED and SCHEDULED_NOTIFIED (200) and refuses every other status (409)', async () => {
    for (const status of ['SCHEDULED', 'SCHEDULED_NOTIFIED']) {
      const c = await createCluster(t, org);
      const id = await insertUpgrade(t, org, c, status);
      const res = await t.as(member.token).delete(`${base('acme')}/${id}`);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(RESPONSE_KEYS);
      expect(res.body).toMatchObject({ identity: id, status: 'CANCELLED', clusterSlug: c.slug });
      const [row] = await t.db.query(`SELECT status, finished_at, cancelled_by FROM scheduled_cluster_upgrades WHERE identity = $1`, [id]);
      expect(row.status).toBe('CANCELLED');
      expect(row.cancelled_by).toBe('up-member');
      expect(row.finished_at).not.toBeNull();
      const audit = await t.db.query(
        `SELECT type, actor_username, cluster_slug, environment_slug, details FROM audit_events WHERE referenced_entity_identity = $1`,
        [id],
      );
      expect(audit).toEqual([
        {
          type: 'SCHEDULED_CLUSTER_UPGRADE_CANCELLED',
          actor_username: 'up-member',
          cluster_slug: c.slug,
          environment_slug: 'production',
          details: { status: { old: status, new: 'CANCELLED' } },
        },
      ]);
      const [activity] = await t.db.query(
        `SELECT message FROM activity_events WHERE organisation_id = $1 AND type = 'SCHEDULED_CLUSTER_UPGRADE_CANCELLED' ORDER BY id DESC LIMIT 1`,
        [org.id],
      );
      expect(activity.message).toContain(`production/${c.slug}`);
    }
    for (const status of ['UPDATED', 'SUCCEEDED', 'CANCELLED', 'SUPERSEDED', 'FAILED', 'MISSED']) {
      const c = await createCluster(t, org);
      const id = await insertUpgrade(t, org, c, status);
      const res = await t.as(member.token).delete(`${base('acme')}/${id}`);
      expect(res.status).toBe(409);
      expectErrorBody(res.body, 409);
      expect(res.body.message).toContain(status);
      const [row] = await t.db.query(`SELECT status FROM scheduled_cluster_upgrades WHERE identity = $1`, [id]);
      expect(row.status).toBe(status);
      const audit = await t.db.query(`SELECT 1 FROM audit_events WHERE referenced_entity_identity = $1`, [id]);
      expect(audit).toHaveLength(0);
    }
    expect((await t.as(member.token).delete(`${base('acme')}/${foreignId}`)).status).toBe(404);
  });

  it('applies the role matrix: VIEWER reads, MEMBER and above cancel, others are refused', async () => {
    const path = `${base('acme')}/${scheduledId}`;
    expect((await t.as(viewer.token).delete(path)).status).toBe(403);
    expect((await t.as(outsider.token).get(base('acme'))).status).toBe(403);
    expect((await t.as(outsider.token).get(path)).status).toBe(403);
    expect((await t.as(outsider.token).delete(path)).status).toBe(403);
    expect((await t.http().get(base('acme'))).status).toBe(401);
    expect((await t.http().delete(path)).status).toBe(401);
    for (const u of [owner, admin]) expect((await t.as(u.token).get(path)).status).toBe(200);
    for (const u of [owner, admin]) {
      const c = await createCluster(t, org);
      const id = await insertUpgrade(t, org, c, 'SCHEDULED');
      expect((await t.as(u.token).delete(`${base('acme')}/${id}`)).status).toBe(200);
    }
  });

  describe('platform administrators (/admin/v1)', () => {
    const future = (hours: number) => new Date(Date.now() + hours * 3600_000).toISOString();

    it('is for platform administrators only', async () => {
      expect((await t.as(owner.token).get(ADMIN_BASE)).status).toBe(403);
      expect((await t.as(owner.token).post(ADMIN_BASE).send({})).status).toBe(403);
      expect((await t.as(owner.token).patch(`${ADMIN_BASE}/${scheduledId}`).send({})).status).toBe(403);
      expect((await t.http().get(ADMIN_BASE)).status).toBe(401);
    });

    it('lists every organisation\'s upgrades', async () => {
      const res = await t.admin().get(`${ADMIN_BASE}?size=500`);
      expect(res.status).toBe(200);
      const slugs = new Set(res.body.content.map((u: { organisationSlug: string }) => u.organisationSlug));
      expect(slugs).toEqual(new Set(['acme', 'globex']));
      const filtered = await t.admin().get(`${ADMIN_BASE}?clusterIdentities=${foreign.identity}`);
      expect(filtered.body.content.map((u: { identity: string }) => u.identity)).toEqual([foreignId]);
    });

    it('creates an upgrade, validating the cluster, version and window', async () => {
      const c = await createCluster(t, org, { version: '1.31.4' });
      const body = { clusterIdentity: c.identity, toClusterVersion: '1.31.6', windowStart: future(48), windowEnd: future(50) };
      const res = await t.admin().post(ADMIN_BASE).send({ ...body, reason: 'CVE fix' });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(RESPONSE_KEYS);
      expect(res.body).toMatchObject({ clusterIdentity: c.identity, fromClusterVersion: '1.31.4', toClusterVersion: '1.31.6', status: 'SCHEDULED', reason: 'CVE fix' });
      const [row] = await t.db.query(`SELECT created_by FROM scheduled_cluster_upgrades WHERE identity = $1`, [res.body.identity]);
      expect(row.created_by).toBe('admin');
      const audit = await t.db.query(`SELECT type, actor_username, organisation_slug, cluster_slug, details FROM audit_events WHERE referenced_entity_identity = $1`, [res.body.identity]);
      expect(audit).toHaveLength(1);
      expect(audit[0]).toMatchObject({ type: 'SCHEDULED_CLUSTER_UPGRADE_CREATED', actor_username: 'admin', organisation_slug: 'acme', cluster_slug: c.slug });
      expect(audit[0].details.toClusterVersion).toEqual({ old: null, new: '1.31.6' });

      const again = await t.admin().post(ADMIN_BASE).send(body);
      expect(again.status).toBe(409);
      expect(again.body.message).toMatch(/open upgrade/);

      const d = await createCluster(t, org, { version: '1.31.4' });
      const ok = { ...body, clusterIdentity: d.identity };
      const expect400 = async (b: object, field: string) => {
        const r = await t.admin().post(ADMIN_BASE).send(b);
        expect(r.status).toBe(400);
        expectErrorBody(r.body, 400);
        expect(r.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      };
      await expect400({ ...ok, windowEnd: ok.windowStart }, 'windowEnd');
      await expect400({ ...ok, windowStart: future(52) }, 'windowEnd');
      await expect400({ ...ok, windowStart: future(-5), windowEnd: future(-4) }, 'windowEnd');
      await expect400({ ...ok, windowStart: 'tomorrow' }, 'windowStart');
      await expect400({ ...ok, toClusterVersion: '9.9.9' }, 'toClusterVersion');
      await expect400({ ...ok, toClusterVersion: '1.31.3' }, 'toClusterVersion');
      await expect400({ ...ok, toClusterVersion: '1.31.4' }, 'toClusterVersion');
      await expect400({ ...ok, toClusterVersion: 'latest' }, 'toClusterVersion');
      await expect400({ ...ok, clusterIdentity: 'x' }, 'clusterIdentity');
      await expect400({ ...ok, reason: 'r'.repeat(501) }, 'reason');
      const unknown = await t.admin().post(ADMIN_BASE).send({ ...ok, clusterIdentity: '00000000-0000-4000-8000-000000000000' });
      expect(unknown.status).toBe(404);
      expect((await t.admin().post(ADMIN_BASE).send({ ...ok, reason: 'r'.repeat(500) })).status).toBe(200);
    });

    it('serves the original admin client: fromClusterVersion on create, GET one, PUT status/reason, DELETE cancels', async () => {
      const c = await createCluster(t, org, { version: '1.31.4' });
      const body = { clusterIdentity: c.identity, fromClusterVersion: '1.31.3', toClusterVersion: '1.31.6', windowStart: future(48), windowEnd: future(50) };
      const wrongFrom = await t.admin().post(ADMIN_BASE).send(body);
      expect(wrongFrom.status).toBe(409);
      expect(wrongFrom.body.message).toMatch(/runs 1\.31\.4/);
      const created = await t.admin().post(ADMIN_BASE).set('Content-Type', 'application/json').send({ ...body, fromClusterVersion: '1.31.4' });
      expect(created.status).toBe(200);
      const id = created.body.identity;

      const one = await t.admin().get(`${ADMIN_BASE}/${id}`);
      expect(one.status).toBe(200);
      expect(one.body).toMatchObject({ identity: id, status: 'SCHEDULED' });
      expect((await t.admin().get(`${ADMIN_BASE}/00000000-0000-4000-8000-000000000000`)).status).toBe(404);

      const reason = await t.admin().put(`${ADMIN_BASE}/${id}`).send({ identity: id, reason: 'moved by ops' });
      expect(reason.status).toBe(200);
      expect(reason.body.reason).toBe('moved by ops');
      expect((await t.admin().put(`${ADMIN_BASE}/${id}`).send({ status: 'SUCCEEDED' })).status).toBe(400);
      expect((await t.admin().put(`${ADMIN_BASE}/${id}`).send({ status: 'SKIPPED' })).status).toBe(400);

      const cancelled = await t.admin().delete(`${ADMIN_BASE}/${id}`).set('Content-Type', 'application/json');
      expect(cancelled.status).toBe(200);
      expect(cancelled.body.status).toBe('CANCELLED');
      expect((await t.admin().delete(`${ADMIN_BASE}/${id}`)).status).toBe(409);
      const types = await t.db.query(`SELECT type FROM audit_events WHERE referenced_entity_identity = $1 ORDER BY id`, [id]);
      expect(types.map((r: { type: string }) => r.type)).toEqual([
        'SCHEDULED_CLUSTER_UPGRADE_CREATED',
        'SCHEDULED_CLUSTER_UPGRADE_UPDATED',
        'SCHEDULED_CLUSTER_UPGRADE_CANCELLED',
      ]);
      const list = await t.admin().get(ADMIN_BASE);
      expect(list.body.sort).toEqual(expect.objectContaining({ empty: expect.any(Boolean) })); // page form A
    });

    it('edits the window and target while not started, and re-announces a notified upgrade', async () => {
      const c = await createCluster(t, org, { version: '1.31.4' });
      const id = await insertUpgrade(t, org, c, 'SCHEDULED_NOTIFIED', { from: '1.31.4', to: '1.31.5' });
      const windowStart = future(72);
      const windowEnd = future(75);
      const res = await t.admin().patch(`${ADMIN_BASE}/${id}`).send({ windowStart, windowEnd, toClusterVersion: '1.31.6' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ identity: id, status: 'SCHEDULED', toClusterVersion: '1.31.6', windowStart, windowEnd });
      const [audit] = await t.db.query(`SELECT type, details FROM audit_events WHERE referenced_entity_identity = $1`, [id]);
      expect(audit.type).toBe('SCHEDULED_CLUSTER_UPGRADE_UPDATED');
      expect(audit.details.windowStart.new).toBe(windowStart);
      expect(audit.details.toClusterVersion).toEqual({ old: '1.31.5', new: '1.31.6' });
      expect(audit.details.status).toEqual({ old: 'SCHEDULED_NOTIFIED', new: 'SCHEDULED' });

      const inverted = await t.admin().patch(`${ADMIN_BASE}/${id}`).send({ windowEnd: future(70) });
      expect(inverted.status).toBe(400);
      expect(inverted.body.errors[0].field).toBe('windowEnd');
      expect((await t.admin().patch(`${ADMIN_BASE}/${id}`).send({ toClusterVersion: '1.31.3' })).status).toBe(400);
      expect((await t.admin().patch(`${ADMIN_BASE}/00000000-0000-4000-8000-000000000000`).send({})).status).toBe(404);
      expect((await t.admin().patch(`${ADMIN_BASE}/${id}?fieldValidation=Strict`).send({ status: 'SUCCEEDED' })).status).toBe(400);

      for (const status of ['UPDATED', 'SUCCEEDED', 'CANCELLED', 'MISSED']) {
        const cc = await createCluster(t, org);
        const uid = await insertUpgrade(t, org, cc, status);
        const r = await t.admin().patch(`${ADMIN_BASE}/${uid}`).send({ windowEnd: future(100) });
        expect(r.status).toBe(409);
        expect(r.body.message).toContain(status);
      }
    });

    it('PATCH as the original admin client sends it: every field takes effect or is 400, none is ignored', async () => {
      const c = await createCluster(t, org, { version: '1.31.4' });
      const id = await insertUpgrade(t, org, c, 'SCHEDULED_NOTIFIED', { from: '1.31.4', to: '1.31.5' });
      const url = `${ADMIN_BASE}/${id}`;
      const before = (await t.admin().get(url)).body;

      // Refused fields leave the upgrade as it was.
      const refusals: [Record<string, unknown>, string, number][] = [
        [{ identity: '00000000-0000-4000-8000-000000000000', reason: 'x' }, 'identity', 400],
        [{ status: 'SUCCEEDED' }, 'status', 400],
        [{ status: 'IN_PROGRESS' }, 'status', 400], // a status of the client that the interface does not have
        [{ status: 'CANCELLED', reason: 'r', windowEnd: future(100) }, 'windowEnd', 400],
        [{ status: 'CANCELLED', version: '1.31.6' }, 'version', 400],
        [{ version: '1.31.6', toClusterVersion: '1.31.5' }, 'version', 400],
        [{ version: '1.31.3' }, 'version', 400],
        [{ reason: '' }, 'reason', 400],
      ];
      for (const [body, field, status] of refusals) {
        const r = await t.admin().patch(url).set('Content-Type', 'application/json').send(body);
        expect({ body, status: r.status, fields: r.body.errors?.map((e: { field: string }) => e.field) }).toEqual({ body, status, fields: [field] });
      }
      expect((await t.admin().get(url)).body).toEqual(before);

      // The client's `version` is the target; `reason` and the current status take effect / change nothing; no Warning.
      const moved = await t
        .admin()
        .patch(url)
        .send({ identity: id, status: 'SCHEDULED_NOTIFIED', version: '1.31.6', reason: 'security release' });
      expect(moved.status).toBe(200);
      expect(moved.headers.warning).toBeUndefined();
      expect(moved.body).toMatchObject({ toClusterVersion: '1.31.6', reason: 'security release', status: 'SCHEDULED' });
      const reasonOnly = await t.admin().patch(url).send({ identity: id, reason: 'moved by ops' });
      expect(reasonOnly.body).toMatchObject({ reason: 'moved by ops', status: 'SCHEDULED', toClusterVersion: '1.31.6' });

      // {status: CANCELLED, reason} (what the client sends to cancel): cancelled, with that reason, one audit entry.
      const cancelled = await t.admin().patch(url).send({ identity: id, status: 'CANCELLED', reason: 'customer freeze' });
      expect(cancelled.status).toBe(200);
      expect(cancelled.body).toMatchObject({ status: 'CANCELLED', reason: 'customer freeze' });
      const [row] = await t.db.query(`SELECT status, reason, cancelled_by FROM scheduled_cluster_upgrades WHERE identity = $1`, [id]);
      expect(row).toEqual({ status: 'CANCELLED', reason: 'customer freeze', cancelled_by: expect.any(String) });
      const audit = await t.db.query(`SELECT type, details FROM audit_events WHERE referenced_entity_identity = $1 ORDER BY id`, [id]);
      expect(audit.map((a: { type: string }) => a.type)).toEqual([
        'SCHEDULED_CLUSTER_UPGRADE_UPDATED',
        'SCHEDULED_CLUSTER_UPGRADE_UPDATED',
        'SCHEDULED_CLUSTER_UPGRADE_CANCELLED',
      ]);
      expect(audit[0].details).toEqual({
        toClusterVersion: { old: '1.31.5', new: '1.31.6' },
        status: { old: 'SCHEDULED_NOTIFIED', new: 'SCHEDULED' },
        reason: { old: 'test', new: 'security release' },
      });
      expect(audit[2].details).toEqual({ status: { old: 'SCHEDULED', new: 'CANCELLED' }, reason: { old: 'moved by ops', new: 'customer freeze' } });

      // Once cancelled: cancelling again is 409 (admin rules), the reason may still change, the plan may not.
      expect((await t.admin().patch(url).send({ status: 'SCHEDULED' })).status).toBe(400);
      expect((await t.admin().patch(url).send({ windowEnd: future(100) })).status).toBe(409);
      const again = await t.admin().patch(url).send({ status: 'CANCELLED', reason: 'still frozen' });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ status: 'CANCELLED', reason: 'still frozen' });
    });
  });

});
