import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { Receiver } from '../webhooks/receiver';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, reconciler, settle } from './cluster-fixtures';

describe('cluster update: transitions, delete protection, versions, settings', () => {
  let t: TestApp;
  let f: OrgFixture;

  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
  });
  afterAll(() => t.close());

  const create = async (name: string, extra: Record<string, unknown> = {}) => {
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name, ...extra }));
    expect(res.status).toBe(200);
    return res.body;
  };
  const patch = (slug: string, body: object, token = f.users.member.token) => t.as(token).patch(`${clustersPath(f)}/${slug}?fieldValidation=Strict`).send(body);
  const get = (slug: string, q = '') => t.as(f.users.viewer.token).get(`${clustersPath(f)}/${slug}${q}`);
  async function expect409(slug: string, body: object, contains: string[]) {
    const res = await patch(slug, body);
    expect(res.status).toBe(409);
    expectErrorBody(res.body, 409);
    for (const c of contains) expect(res.body.message).toContain(c);
  }

  it('refuses transitions the current status does not allow (409 naming the state and the allowed requests)', async () => {
    await create('alpha');
    await expect409('alpha', { status: 'stopping' }, ["'new'", "'stopping' is not allowed"]);
    await expect409('alpha', { status: 'deleting' }, ["'new'"]);
    await reconciler(t).runOnce();
    await expect409('alpha', { status: 'deleting' }, ["'provisioning'", 'Allowed requests: none']);
    await settle(t);
    expect((await get('alpha')).body.status).toBe('started');
    await expect409('alpha', { status: 'starting' }, ["'started'", "Allowed requests: 'stopping', 'deleting'"]);
    expect((await patch('alpha', { status: 'stopping' })).status).toBe(200);
    // the same request again is a no-op; a contradicting one waits until settled
    expect((await patch('alpha', { status: 'stopping' })).status).toBe(200);
    await expect409('alpha', { status: 'starting' }, ['not allowed']);
    await settle(t);
    expect((await get('alpha')).body.status).toBe('stopped');
    await expect409('alpha', { status: 'stopping' }, ["'stopped'", "'starting', 'deleting'"]);
    const bad = await patch('alpha', { status: 'running' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].field).toBe('status');
    const audits = await t.db.query(`SELECT type FROM audit_events WHERE cluster_slug = 'alpha' AND actor_username <> 'system' ORDER BY id`);
    // The repeated stop request changed nothing, so it left no audit row.
    expect(audits.map((a: { type: string }) => a.type)).toEqual(['CLUSTER_CREATED', 'CLUSTER_STOP_REQUESTED']);
  });

  it('refuses protection while a deletion is pending, and a protected cluster is never deleted, even under a race', async () => {
    await create('doomed');
    await settle(t);
    expect((await patch('doomed', { status: 'deleting' })).status).toBe(200);
    await expect409('doomed', { deleteProtection: true }, ['deletion pending']);
    await expect409('doomed', { deleteProtection: true, name: 'Doomed' }, ['deletion pending']);
    await settle(t);
    expect((await get('doomed')).status).toBe(404);

    // 20 deleting and 20 protecting PATCHes at once: whatever wins, no row is protected and deleting.
    await create('raced');
    await settle(t);
    const requests = Array.from({ length: 40 }, (_, i) => patch('raced', i % 2 ? { status: 'deleting' } : { deleteProtection: true }));
    const statuses = (await Promise.all(requests)).map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    await settle(t);
    const [row] = await t.db.query(`SELECT status, delete_protection, desired_status FROM clusters WHERE slug = 'raced'`);
    if (row.delete_protection) expect(row.status).not.toMatch(/deleting|deleted/);
    else expect(row.status).toBe('deleted');
    // The database itself refuses the combination.
    await expect(
      t.db.query(`UPDATE clusters SET delete_protection = true, desired_status = 'deleting' WHERE slug = 'raced'`),
    ).rejects.toThrow(/clusters_delete_protection_chk/);
  });

  it('deleteProtection refuses deleting (PATCH and DELETE) until it is turned off', async () => {
    await create('protected');
    await settle(t);
    expect((await patch('protected', { deleteProtection: true })).body.deleteProtection).toBe(true);
    await expect409('protected', { status: 'deleting' }, ['deleteProtection']);
    const del = await t.as(f.users.member.token).delete(`${clustersPath(f)}/protected`);
    expect(del.status).toBe(409);
    expect(del.body.message).toContain('deleteProtection');
    const both = await patch('protected', { deleteProtection: false, status: 'deleting' });
    expect(both.status).toBe(200);
    expect(both.body).toMatchObject({ deleteProtection: false, desiredStatus: 'deleting' });
    const [audit] = await t.db.query(`SELECT type, details FROM audit_events WHERE cluster_slug = 'protected' ORDER BY id DESC LIMIT 1`);
    expect(audit.type).toBe('CLUSTER_DELETE_REQUESTED');
    expect(audit.details).toEqual({ deleteProtection: { old: true, new: false }, desiredStatus: { old: null, new: 'deleting' } });
    await settle(t);
    expect((await get('protected')).status).toBe(404);
    // once gone, every operation on it is 404
    expect((await patch('protected', { name: 'x' })).status).toBe(404);
    expect((await t.as(f.users.member.token).delete(`${clustersPath(f)}/protected`)).status).toBe(404);
    expect((await t.as(f.users.viewer.token).get(`${clustersPath(f)}/protected/pools`)).status).toBe(404);
  });

  it('changes version only to an upgrade or downgrade target, only while started or stopped; the reconciler applies it', async () => {
    await create('versioned', { version: '1.31.5' });
    await expect409('versioned', { version: '1.31.6' }, ["'new'"]);
    await settle(t);
    for (const [version, msg] of [
      ['1.30.9', 'not an upgrade or downgrade target'],
      ['1.29.13', 'not an upgrade or downgrade target'],
      ['1.32.2', 'not available'],
      ['9.9.9', 'not a known'],
    ]) {
      const res = await patch('versioned', { version });
      expect({ version, status: res.status, field: res.body.errors?.[0]?.field }).toEqual({ version, status: 400, field: 'version' });
      expect(res.body.message).toContain(msg);
    }
    const up = await patch('versioned', { version: '1.32.1' });
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({ version: '1.32.1', status: 'started' });
    expect((await get('versioned', '?includeDetails=true')).body.actualState.version).toBe('1.31.5');
    expect(await reconciler(t).runOnce()).toBe(1);
    expect((await get('versioned', '?includeDetails=true')).body.actualState).toMatchObject({ status: 'started', version: '1.32.1' });
    const [upgraded] = await t.db.query(`SELECT details, actor_username FROM audit_events WHERE type = 'CLUSTER_UPGRADED' AND cluster_slug = 'versioned'`);
    expect(upgraded.actor_username).toBe('system');
    expect(upgraded.details.version).toEqual({ old: '1.31.5', new: '1.32.1' });

    // downgrade within the minor, while stopped: recorded now, applied when it runs again
    expect((await patch('versioned', { status: 'stopping' })).status).toBe(200);
    await settle(t);
    expect((await patch('versioned', { version: '1.32.0' })).status).toBe(200);
    expect(await reconciler(t).runOnce()).toBe(0);
    expect((await get('versioned', '?includeDetails=true')).body.actualState).toMatchObject({ status: 'stopped', version: '1.32.1' });
    expect((await patch('versioned', { status: 'starting' })).status).toBe(200);
    await settle(t);
    expect((await get('versioned', '?includeDetails=true')).body).toMatchObject({
      status: 'started',
      version: '1.32.0',
      actualState: { status: 'started', version: '1.32.0' },
    });
  });

  it('updates every setting of the update request and answers the extended cluster', async () => {
    const [s] = await t.db.query(
      `INSERT INTO maintenance_schedules (organisation_id, name, created_at, modified_at) VALUES ($1, 'nightly', now(), now()) RETURNING identity`,
      [f.orgId],
    );
    const up = await create('upstream');
    await create('settings');
    const res = await patch('settings', {
      name: 'Settings Renamed',
      description: 'the one with settings',
      updateChannel: 'extended',
      enableAutoUpgrade: true,
      enableHighAvailability: true,
      enableNetworkEncryption: true,
      podSecurityStandardsProfile: 'restricted',
      ipWhitelist: [{ cidr: { ipRange: '198.51.100.0/24' }, description: 'vpn' }],
      addons: { 'cert-manager': { enabled: true, customValues: { issuer: 'le' } } },
      clusterAutoscalerSettings: { 'scale-down-utilization-threshold': 0.4, 'scale-down-unneeded-time': '10m' },
      maintenanceScheduleIdentity: s.identity,
      upstreamCluster: { identity: up.identity },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: 'Settings Renamed',
      slug: { slugValue: 'settings' },
      description: 'the one with settings',
      updateChannel: { name: 'extended', kubernetesClusterVersion: '1.30.9', available: true },
      autoUpgrade: true,
      highlyAvailable: true,
      enableNetworkEncryption: true,
      podSecurityStandardsProfile: 'restricted',
      ipWhitelist: [{ cidr: '198.51.100.0/24', description: 'vpn' }],
      clusterAutoscalerSettings: { 'scale-down-utilization-threshold': 0.4, 'scale-down-unneeded-time': '10m' },
      maintenanceSchedule: { identity: s.identity, name: 'nightly', clusterCount: 1, windows: [], timeZone: 'UTC' },
      upstreamCluster: { identity: up.identity, slug: { slugValue: 'upstream' }, environmentSlug: { slugValue: 'production' }, version: '1.31.5' },
      downstreamClusters: [],
    });
    expect(res.body.addons['cert-manager']).toEqual({ enabled: true, customValues: { issuer: 'le' } });
    expect(res.body.addons['metrics-server']).toEqual({ enabled: true, customValues: {} }); // merged, not replaced

    const upRes = await patch('upstream', { description: 'upstream of settings' });
    expect(upRes.body.downstreamClusters).toEqual([
      { identity: res.body.identity, slug: { slugValue: 'settings' }, environmentSlug: { slugValue: 'production' }, version: '1.31.5' },
    ]);
    const cycle = await patch('upstream', { upstreamCluster: { identity: res.body.identity } });
    expect(cycle.status).toBe(400);
    expect(cycle.body.errors[0].field).toBe('upstreamCluster.identity');
    expect((await patch('settings', { upstreamCluster: { identity: res.body.identity } })).body.errors[0].field).toBe('upstreamCluster.identity');

    const [audit] = await t.db.query(`SELECT type, details FROM audit_events WHERE cluster_slug = 'settings' AND type = 'CLUSTER_UPDATED'`);
    expect(audit.details.name).toEqual({ old: 'settings', new: 'Settings Renamed' });
    expect(audit.details.autoUpgrade).toEqual({ old: false, new: true });
    const activity = await t.db.query(`SELECT message FROM activity_events WHERE type = 'CLUSTER_UPDATED' AND message LIKE '%settings' ORDER BY id LIMIT 1`);
    expect(activity[0].message).toBe(`${f.users.member.username} updated cluster production/settings`);

    // the response's own shape ({cidr: string}) is accepted back
    const echo = await patch('settings', { ipWhitelist: res.body.ipWhitelist });
    expect(echo.status).toBe(200);
    expect(echo.body.ipWhitelist).toEqual([{ cidr: '198.51.100.0/24', description: 'vpn' }]);
    expect((await patch('settings', { ipWhitelist: [{ cidr: '198.51.100.0/33', description: 'x' }] })).body.errors[0].field).toBe('ipWhitelist.0.cidr.ipRange');

    const cleared = await patch('settings', { maintenanceScheduleIdentity: null, upstreamCluster: null, updateChannel: null });
    expect(cleared.body).toMatchObject({ maintenanceSchedule: null, upstreamCluster: null, updateChannel: null });
  });

  it('answers a PATCH with the cluster as a later read sees it: after a change with a rename, and after one that changes nothing', async () => {
    const up = await create('mirror-up');
    await create('mirror');
    await settle(t);
    const row = async () => (await t.db.query(`SELECT row_version, modified_at FROM clusters WHERE slug = 'mirror' AND deleted_at IS NULL`))[0];
    const start = await row();

    const changed = await patch('mirror', {
      name: 'Mirror Renamed',
      description: 'seen again',
      ipWhitelist: [{ cidr: { ipRange: '192.0.2.0/24' }, description: 'office' }],
      addons: { 'cert-manager': { enabled: true } },
      clusterAutoscalerSettings: { 'scale-down-unneeded-time': '5m' },
      upstreamCluster: { identity: up.identity },
    });
    expect(changed.status).toBe(200);
    // The rename reaches the observability tenant's name in the same answer.
    expect(changed.body.observabilityTenant).toMatchObject({ name: 'Production/Mirror Renamed', cluster: { name: 'Mirror Renamed' } });
    const afterChange = await row();
    expect(Number(afterChange.row_version)).toBe(Number(start.row_version) + 1);
    expect(new Date(changed.body.modifiedAt).getTime()).toBe(new Date(afterChange.modified_at).getTime());

    // The GET answers the same fields (it has no extended ones: autoscaler settings, upstream and downstream clusters).
    const read = await get('mirror', '?show-compute=true');
    const { clusterAutoscalerSettings, upstreamCluster, downstreamClusters, ...plain } = changed.body;
    expect(read.body).toEqual(plain);
    expect(clusterAutoscalerSettings).toEqual({ 'scale-down-unneeded-time': '5m' });
    expect(upstreamCluster).toMatchObject({ identity: up.identity });
    expect(downstreamClusters).toEqual([]);

    // Repeating the values, or an empty PATCH, writes nothing and answers the same bytes.
    const repeated = await patch('mirror', { name: 'Mirror Renamed', description: 'seen again', upstreamCluster: { identity: up.identity } });
    expect(repeated.status).toBe(200);
    expect(repeated.text).toBe(changed.text);
    const empty = await patch('mirror', {});
    expect(empty.status).toBe(200);
    expect(empty.text).toBe(changed.text);
    expect(await row()).toEqual(afterChange);
  });

  it('commits a change with its audit row, activity event and webhook event, each written once; a denied change writes none', async () => {
    const receiver = await new Receiver().start();
    try {
      const hook = await t.as(f.users.admin.token).post(`/api/v1/orgs/${f.orgSlug}/webhooks`).send({ url: receiver.url('/hook'), eventTypes: ['CLUSTER_UPDATED', 'CLUSTER_DELETE_REQUESTED'] });
      expect(hook.status).toBe(200);
      const c = await create('once');
      await settle(t);
      const [{ id }] = await t.db.query(`SELECT id FROM clusters WHERE identity = $1`, [c.identity]);
      const trail = async () => {
        const [counts] = await t.db.query(
          `SELECT (SELECT count(*) FROM audit_events WHERE cluster_id = $1 AND type IN ('CLUSTER_UPDATED', 'CLUSTER_DELETE_REQUESTED'))::int AS audit,
                  (SELECT count(*) FROM activity_events WHERE organisation_id = $2 AND type IN ('CLUSTER_UPDATED', 'CLUSTER_DELETE_REQUESTED') AND message LIKE '%/once%')::int AS activity,
                  (SELECT count(*) FROM webhook_events WHERE organisation_id = $2 AND subject LIKE 'clusters/%/once' AND type IN ('CLUSTER_UPDATED', 'CLUSTER_DELETE_REQUESTED'))::int AS events,
                  (SELECT count(*) FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE e.organisation_id = $2 AND e.subject LIKE 'clusters/%/once')::int AS deliveries`,
          [id, f.orgId],
        );
        return counts;
      };
      expect(await trail()).toEqual({ audit: 0, activity: 0, events: 0, deliveries: 0 });

      const changed = await patch('once', { description: 'first' });
      expect(changed.status).toBe(200);
      expect(await trail()).toEqual({ audit: 1, activity: 1, events: 1, deliveries: 1 });
      const [audit] = await t.db.query(`SELECT actor_username, details FROM audit_events WHERE cluster_id = $1 AND type = 'CLUSTER_UPDATED'`, [id]);
      expect(audit).toEqual({ actor_username: f.users.member.username, details: { description: { old: null, new: 'first' } } });

      // A Deny policy refuses the next change: the UPDATE and the rows written with it roll back together.
      const policy = await t.as(f.users.admin.token).post(`/api/v1/orgs/${f.orgSlug}/cluster-policies`).send({
        name: 'no-secret-descriptions',
        expression: "object.description != 'secret'",
        message: 'no secret descriptions',
        action: 'Deny',
      });
      expect(policy.status).toBe(200);
      const denied = await patch('once', { description: 'secret' });
      expect(denied.status).toBe(400);
      expect(denied.body.message).toContain('no secret descriptions');
      expect(await trail()).toEqual({ audit: 1, activity: 1, events: 1, deliveries: 1 });
      expect((await get('once')).body.description).toBe('first');
      expect((await t.as(f.users.admin.token).delete(`/api/v1/orgs/${f.orgSlug}/cluster-policies/${policy.body.identity}`)).status).toBe(204);

      // The DELETE alias writes its own request type, once.
      expect((await t.as(f.users.member.token).delete(`${clustersPath(f)}/once`)).status).toBe(200);
      expect(await trail()).toEqual({ audit: 2, activity: 2, events: 2, deliveries: 2 });
    } finally {
      await receiver.stop();
    }
  });

  it('validates the update request, naming each field', async () => {
    await create('strict');
    for (const [body, field] of [
      [{ name: '' }, 'name'],
      [{ name: 'n'.repeat(64) }, 'name'],
      [{ description: 'd'.repeat(501) }, 'description'],
      [{ version: 5 }, 'version'],
      [{ updateChannel: 'nightly' }, 'updateChannel'],
      [{ enableAutoUpgrade: 'yes' }, 'enableAutoUpgrade'],
      [{ deleteProtection: 1 }, 'deleteProtection'],
      [{ podSecurityStandardsProfile: 'lax' }, 'podSecurityStandardsProfile'],
      [{ ipWhitelist: [{ cidr: { ipRange: '300.1.1.1/8' }, description: 'x' }] }, 'ipWhitelist.0.cidr.ipRange'],
      [{ addons: { nope: { enabled: true } } }, 'addons.nope'],
      [{ clusterAutoscalerSettings: { 'scale-down-utilization-threshold': 1.5 } }, 'clusterAutoscalerSettings.scale-down-utilization-threshold'],
      [{ clusterAutoscalerSettings: { 'max-node-provision-time': 'soon' } }, 'clusterAutoscalerSettings.max-node-provision-time'],
      [{ clusterAutoscalerSettings: { 'scale-up': true } }, 'clusterAutoscalerSettings.scale-up'],
      [{ maintenanceScheduleIdentity: '00000000-0000-4000-8000-000000000000' }, 'maintenanceScheduleIdentity'],
      [{ upstreamCluster: { identity: 'x' } }, 'upstreamCluster.identity'],
      [{ upstreamCluster: { identity: '00000000-0000-4000-8000-000000000000' } }, 'upstreamCluster.identity'],
      [{ slug: 'new-slug' }, 'slug'],
    ] as [object, string][]) {
      const res = await patch('strict', body);
      expect({ body, status: res.status, fields: (res.body.errors ?? []).map((e: { field: string }) => e.field) }).toEqual({
        body,
        status: 400,
        fields: expect.arrayContaining([field]),
      });
    }
    expect((await patch('strict', { name: 'n'.repeat(63), description: 'd'.repeat(500) })).status).toBe(200);
  });

  it('role matrix and 404s for get, update and delete', async () => {
    await create('roles');
    for (const [who, status] of [
      ['owner', 200],
      ['admin', 200],
      ['member', 200],
      ['viewer', 403],
      ['outsider', 403],
    ] as const) {
      const res = await patch('roles', { description: who }, f.users[who].token);
      expect({ who, status: res.status }).toEqual({ who, status });
    }
    expect((await t.as(f.users.viewer.token).delete(`${clustersPath(f)}/roles`)).status).toBe(403);
    expect((await t.as(f.users.outsider.token).get(`${clustersPath(f)}/roles`)).status).toBe(403);
    expect((await t.http().patch(`${clustersPath(f)}/roles`).send({})).status).toBe(401);
    expect((await t.http().delete(`${clustersPath(f)}/roles`)).status).toBe(401);
    for (const path of [`${clustersPath(f)}/ghost`, `/api/v1/orgs/${f.orgSlug}/clusters/nowhere/roles`]) {
      const g = await t.as(f.users.viewer.token).get(path);
      expect(g.status).toBe(404);
      expectErrorBody(g.body, 404);
      expect((await t.as(f.users.member.token).patch(path).send({ description: 'x' })).status).toBe(404);
      expect((await t.as(f.users.member.token).delete(path)).status).toBe(404);
    }
    expect((await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/cloud-accounts/00000000-0000-4000-8000-000000000000/clusters`)).status).toBe(404);
  });

  it('lists: form B pages, sorting, compute only with show-compute, actualState only with includeDetails', async () => {
    const env = await t.as(f.users.viewer.token).get(`${clustersPath(f)}?sort=name,desc&size=3`);
    expect(env.status).toBe(200);
    expect(env.body).toMatchObject({ size: 3, number: 0, first: true, sort: [{ property: 'name', direction: 'DESC', ascending: false }] });
    expect(env.body.content).toHaveLength(3);
    const names = env.body.content.map((c: { name: string }) => c.name);
    expect([...names].sort().reverse()).toEqual(names);
    expect(env.body.content[0].cpu).toBeNull();
    expect(env.body.content[0]).not.toHaveProperty('actualState');
    const detailed = await t.as(f.users.viewer.token).get(`${clustersPath(f)}?show-compute=true&includeDetails=true`);
    expect(detailed.body.content[0].cpu).toBe(4);
    expect(detailed.body.content[0].memory).toBe(16384);
    expect(detailed.body.content[0].actualState).toEqual(expect.objectContaining({ status: expect.any(String) }));
    expect((await t.as(f.users.viewer.token).get(`${clustersPath(f)}?sort=colour`)).status).toBe(400);
    expect((await t.as(f.users.viewer.token).get(`${clustersPath(f)}?includeDetails=maybe`)).status).toBe(400);
    const byAccount = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/cloud-accounts/${f.accountIdentity}/clusters`);
    expect(byAccount.status).toBe(200);
    expect(byAccount.body.totalElements).toBe(env.body.totalElements);
    const one = await get('roles', '?show-compute=true');
    expect(one.body).toMatchObject({ cpu: 4, memory: 16384 });
    expect((await get('roles')).body.cpu).toBeNull();
  });
});
