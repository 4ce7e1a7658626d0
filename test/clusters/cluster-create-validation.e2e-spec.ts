import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture } from './cluster-fixtures';

describe('cluster create: validation, quota, conflicts and roles', () => {
  let t: TestApp;
  let f: OrgFixture;
  let other: OrgFixture;
  let scheduleIdentity: string;
  let otherScheduleIdentity: string;

  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
    other = await createOrgFixture(t);
    const [s] = await t.db.query(
      `INSERT INTO maintenance_schedules (organisation_id, name, windows, created_at, modified_at)
       VALUES ($1, 'weekly', '[{"day":"TUESDAY","startTime":"02:00","duration":120}]', now(), now()) RETURNING identity`,
      [f.orgId],
    );
    scheduleIdentity = s.identity;
    const [o] = await t.db.query(
      `INSERT INTO maintenance_schedules (organisation_id, name, created_at, modified_at) VALUES ($1, 'theirs', now(), now()) RETURNING identity`,
      [other.orgId],
    );
    otherScheduleIdentity = o.identity;
    await t.db.query(
      `INSERT INTO cloud_provider_regions (provider_id, slug, name, available, restricted, created_at, modified_at)
       SELECT id, 'closed-1', 'Closed 1', false, false, now(), now() FROM cloud_providers WHERE type = 'platform_1'`,
    );
  });
  afterAll(() => t.close());

  const create = (body: Record<string, unknown>, token = f.users.member.token, fx = f) => t.as(token).post(`${clustersPath(fx)}?fieldValidation=Strict`).send(body);

  async function expect400(overrides: Record<string, unknown>, field: string, fx = f) {
    const res = await create(clusterBody(fx, overrides), fx.users.member.token, fx);
    expect({ status: res.status, fields: (res.body.errors ?? []).map((e: { field: string }) => e.field) }).toEqual({
      status: 400,
      fields: expect.arrayContaining([field]),
    });
    expectErrorBody(res.body, 400);
    return res;
  }
  const pool = (p: Record<string, unknown>) => ({ nodePools: [{ name: 'workers', nodeSize: 'm5.large', minSize: 1, maxSize: 2, ...p }] });

  it('refuses missing required fields, naming each', async () => {
    const res = await create({});
    expect(res.status).toBe(400);
    const fields = res.body.errors.map((e: { field: string }) => e.field);
    for (const f2 of ['name', 'cloudAccountIdentity', 'region', 'version', 'nodePools']) expect(fields).toContain(f2);
  });

  it('name: bounds, a slug-less name, unknown properties', async () => {
    await expect400({ name: '' }, 'name');
    await expect400({ name: 'x'.repeat(64) }, 'name');
    const res = await expect400({ name: '!!!' }, 'name');
    expect(res.body.message).toContain('letter or digit');
    await expect400({ colour: 'blue' }, 'colour');
    expect((await create(clusterBody(f, { name: 'n'.repeat(63) }))).status).toBe(200);
  });

  it('cloud account: a UUID of this organisation, enabled, with credentials', async () => {
    await expect400({ cloudAccountIdentity: 'nope' }, 'cloudAccountIdentity');
    await expect400({ cloudAccountIdentity: '00000000-0000-4000-8000-000000000000' }, 'cloudAccountIdentity');
    await expect400({ cloudAccountIdentity: other.accountIdentity }, 'cloudAccountIdentity');
    const [disabled] = await t.db.query(
      `INSERT INTO cloud_accounts (organisation_id, cloud_profile_id, cloud_provider_type, display_name, enabled, primary_credentials_id, created_at, modified_at)
       SELECT organisation_id, cloud_profile_id, cloud_provider_type, 'off', false, primary_credentials_id, now(), now() FROM cloud_accounts WHERE id = $1
       RETURNING identity`,
      [f.accountId],
    );
    expect((await expect400({ cloudAccountIdentity: disabled.identity }, 'cloudAccountIdentity')).body.message).toContain('disabled');
    const [bare] = await t.db.query(
      `INSERT INTO cloud_accounts (organisation_id, cloud_profile_id, cloud_provider_type, display_name, created_at, modified_at)
       SELECT organisation_id, cloud_profile_id, cloud_provider_type, 'bare', now(), now() FROM cloud_accounts WHERE id = $1 RETURNING identity`,
      [f.accountId],
    );
    expect((await expect400({ cloudAccountIdentity: bare.identity }, 'cloudAccountIdentity')).body.message).toContain('no credentials');
  });

  it('region: of the provider, available, not restricted for restricted organisations', async () => {
    await expect400({ region: 'westeurope' }, 'region'); // another provider's region
    await expect400({ region: 'atlantis' }, 'region');
    await expect400({ region: 'closed-1' }, 'region');
    const restricted = await createOrgFixture(t, { restricted: true });
    const res = await expect400({ region: 'us-gov-west-1', name: 'gov' }, 'region', restricted);
    expect(res.body.message).toContain('restricted');
    expect((await create(clusterBody(f, { region: 'us-gov-west-1', name: 'gov', nodePools: [{ name: 'a', nodeSize: 't3.medium', minSize: 1, maxSize: 1, availabilityZone: 'us-gov-west-1b' }] }))).status).toBe(200);
  });

  it('version: known and available', async () => {
    await expect400({ version: '9.9.9' }, 'version');
    const res = await expect400({ version: '1.32.2' }, 'version');
    expect(res.body.message).toContain('not available');
    await expect400({ version: '' }, 'version');
  });

  it('node pools: required, name pattern and bounds, unique, node size, zone, sizes', async () => {
    await expect400({ nodePools: {} }, 'nodePools');
    await expect400({ nodePools: 'x' }, 'nodePools');
    await expect400(pool({ name: 'Bad_Name' }), 'nodePools.0.name');
    await expect400(pool({ name: '' }), 'nodePools.0.name');
    await expect400(pool({ name: 'a'.repeat(26) }), 'nodePools.0.name');
    expect((await create(clusterBody(f, { name: 'pool25', ...pool({ name: 'a'.repeat(25) }) }))).status).toBe(200);
    await expect400(
      {
        nodePools: [
          { name: 'same', nodeSize: 'm5.large', minSize: 1, maxSize: 1 },
          { name: 'same', nodeSize: 'm5.large', minSize: 1, maxSize: 1 },
        ],
      },
      'nodePools.1.name',
    );
    const size = await expect400(pool({ nodeSize: 'Standard_D2s_v5' }), 'nodePools.0.nodeSize'); // another provider's type
    expect(size.body.message).toContain('m5.large');
    await expect400(pool({ nodeSize: undefined }), 'nodePools.0.nodeSize');
    await expect400(pool({ availabilityZone: 'eu-west-1a' }), 'nodePools.0.availabilityZone');
    await expect400(pool({ minSize: 3, maxSize: 2 }), 'nodePools.0.minSize');
    await expect400(pool({ minSize: -1 }), 'nodePools.0.minSize');
    await expect400(pool({ maxSize: 1001 }), 'nodePools.0.maxSize');
    await expect400(pool({ minSize: 1.5 }), 'nodePools.0.minSize');
    await expect400(pool({ upgradeStrategy: 'YOLO' }), 'nodePools.0.upgradeStrategy');
    await expect400(pool({ taints: [{ key: 'k', value: 'v', effect: 'Never' }] }), 'nodePools.0.taints.0.effect');
    await expect400(pool({ labels: { a: 1 } }), 'nodePools.0.labels');
    const ok = await create(clusterBody(f, { name: 'sizes', ...pool({ minSize: 0, maxSize: 1000, availabilityZone: 'eu-central-1b', upgradeStrategy: 'INPLACE' }) }));
    expect(ok.status).toBe(200);
  });

  it('subnets and IP whitelist: valid CIDRs, subnets not overlapping', async () => {
    await expect400({ clusterPodSubnet: { ipRange: '10.0.0.0/33' } }, 'clusterPodSubnet.ipRange');
    await expect400({ serviceSubnet: { ipRange: 'ten' } }, 'serviceSubnet.ipRange');
    await expect400({ serviceSubnet: '10.96.0.0/12' }, 'serviceSubnet');
    const overlap = await expect400({ clusterPodSubnet: { ipRange: '10.0.0.0/8' }, serviceSubnet: { ipRange: '10.96.0.0/12' } }, 'serviceSubnet');
    expect(overlap.body.message).toContain('overlaps');
    await expect400({ ipWhitelist: [{ cidr: { ipRange: 'nope' }, description: 'x' }] }, 'ipWhitelist.0.cidr.ipRange');
    await expect400({ ipWhitelist: [{ cidr: { ipRange: '203.0.113.0/24' } }] }, 'ipWhitelist.0.description');
    const ok = await create(
      clusterBody(f, {
        name: 'nets',
        clusterPodSubnet: { ipRange: '10.244.0.0/16' },
        serviceSubnet: { ipRange: '10.96.0.0/12' },
        ipWhitelist: [{ cidr: { ipRange: '203.0.113.0/24' }, description: 'office' }],
      }),
    );
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({
      clusterPodSubnet: '10.244.0.0/16',
      serviceSubnet: '10.96.0.0/12',
      ipWhitelist: [{ cidr: '203.0.113.0/24', description: 'office' }],
    });
  });

  it('enums: cni, podSecurityStandardsProfile; deprecated flags mapped', async () => {
    await expect400({ cni: 'flannel' }, 'cni');
    await expect400({ podSecurityStandardsProfile: 'open' }, 'podSecurityStandardsProfile');
    await expect400({ enableHA: 'yes' }, 'enableHA');
    const a = await create(clusterBody(f, { name: 'ha2', cni: 'calico', enableHighAvailability: true, podSecurityStandardsProfile: 'restricted', enablePodSecurityStandards: true }));
    expect(a.body).toMatchObject({ cni: 'calico', highlyAvailable: true, podSecurityStandardsProfile: 'restricted' });
    const b = await create(clusterBody(f, { name: 'plain' }));
    expect(b.body).toMatchObject({ highlyAvailable: false, podSecurityStandardsProfile: null });
  });

  it('maintenance schedule, update channel and add-ons must exist', async () => {
    await expect400({ maintenanceScheduleIdentity: 'x' }, 'maintenanceScheduleIdentity');
    await expect400({ maintenanceScheduleIdentity: otherScheduleIdentity }, 'maintenanceScheduleIdentity');
    await expect400({ updateChannel: 'nightly' }, 'updateChannel');
    const addon = await expect400({ addons: { 'not-an-addon': { enabled: true } } }, 'addons.not-an-addon');
    expect(addon.body.message).toContain('cert-manager');
    await expect400({ addons: { 'cert-manager': { enabled: 'yes' } } }, 'addons');
    const ok = await create(
      clusterBody(f, {
        name: 'scheduled',
        maintenanceScheduleIdentity: scheduleIdentity,
        updateChannel: 'rapid',
        addons: { 'cert-manager': { enabled: true, customValues: { email: 'ops@example.com' } }, 'metrics-server': { enabled: false } },
      }),
    );
    expect(ok.status).toBe(200);
    expect(ok.body.maintenanceSchedule).toEqual({
      clusterCount: 1,
      identity: scheduleIdentity,
      name: 'weekly',
      timeZone: 'UTC',
      windows: [{ day: 'TUESDAY', startTime: '02:00', duration: 120 }],
    });
    expect(ok.body.updateChannel).toEqual({ name: 'rapid', available: true, kubernetesClusterVersion: '1.32.1' });
    expect(ok.body.addons['cert-manager']).toEqual({ enabled: true, customValues: { email: 'ops@example.com' } });
    expect(ok.body.addons['metrics-server']).toEqual({ enabled: false, customValues: {} });

    const filtered = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/clusters?maintenanceSchedule=${scheduleIdentity}`);
    expect(filtered.status).toBe(200);
    expect(filtered.body.content.map((c: { slug: { slugValue: string } }) => c.slug.slugValue)).toEqual(['scheduled']);
    const bad = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/clusters?maintenanceSchedule=nope`);
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].field).toBe('maintenanceSchedule');
  });

  it('a taken slug in the environment is 409; unknown environment 404', async () => {
    const res = await create(clusterBody(f, { name: 'Plain!' })); // slug "plain" exists
    expect(res.status).toBe(409);
    expectErrorBody(res.body, 409);
    expect(res.body.message).toContain("'plain'");
    // tenant slugs are {env}-{cluster}: production/a-b and production-a/b would share one
    await t.db.query(
      `INSERT INTO environments (organisation_id, slug, name, created_at, modified_at) VALUES ($1, 'production-a', 'Production A', now(), now())`,
      [f.orgId],
    );
    expect((await create(clusterBody(f, { name: 'a-b' }))).status).toBe(200);
    const clash = await t.as(f.users.member.token).post(`/api/v1/orgs/${f.orgSlug}/clusters/production-a`).send(clusterBody(f, { name: 'b' }));
    expect(clash.status).toBe(409);
    expect(clash.body.message).toContain("'production-a-b'");
    const missing = await t.as(f.users.member.token).post(`/api/v1/orgs/${f.orgSlug}/clusters/nowhere`).send(clusterBody(f, { name: 'x' }));
    expect(missing.status).toBe(404);
    expectErrorBody(missing.body, 404);
  });

  it('quota clustersPerCustomer counts non-deleted clusters (409 beyond it)', async () => {
    const q = await createOrgFixture(t, { quota: 2 });
    expect((await create(clusterBody(q, { name: 'one' }), q.users.member.token, q)).status).toBe(200);
    expect((await create(clusterBody(q, { name: 'two' }), q.users.member.token, q)).status).toBe(200);
    const third = await create(clusterBody(q, { name: 'three' }), q.users.member.token, q);
    expect(third.status).toBe(409);
    expect(third.body.message).toContain('clustersPerCustomer');
    await t.db.query(`UPDATE clusters SET status = 'deleted', deleted_at = now() WHERE organisation_id = $1 AND slug = 'one'`, [q.orgId]);
    expect((await create(clusterBody(q, { name: 'three' }), q.users.member.token, q)).status).toBe(200);
    const audits = await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE type = 'CLUSTER_CREATED' AND organisation_id = $1`, [q.orgId]);
    expect(audits[0].n).toBe(3);
  });

  it('role matrix: MEMBER and above create, VIEWER reads, outsiders 403, no credential 401', async () => {
    const r = await createOrgFixture(t);
    let i = 0;
    for (const [who, status] of [
      ['owner', 200],
      ['admin', 200],
      ['member', 200],
      ['viewer', 403],
      ['outsider', 403],
    ] as const) {
      const res = await create(clusterBody(r, { name: `c${i++}` }), r.users[who].token, r);
      expect({ who, status: res.status }).toEqual({ who, status });
    }
    expect((await t.http().post(clustersPath(r)).send(clusterBody(r))).status).toBe(401);
    for (const [who, status] of [
      ['viewer', 200],
      ['outsider', 403],
    ] as const) {
      expect((await t.as(r.users[who].token).get(`/api/v1/orgs/${r.orgSlug}/clusters`)).status).toBe(status);
      expect((await t.as(r.users[who].token).get(clustersPath(r))).status).toBe(status);
      expect((await t.as(r.users[who].token).get(`${clustersPath(r)}/c0`)).status).toBe(status);
      expect((await t.as(r.users[who].token).get(`/api/v1/orgs/${r.orgSlug}/cloud-accounts/${r.accountIdentity}/clusters`)).status).toBe(status);
    }
    expect((await t.http().get(`/api/v1/orgs/${r.orgSlug}/clusters`)).status).toBe(401);
    expect((await t.as(r.users.viewer.token).get(`/admin/v1/clusters`)).status).toBe(403);
    const admin = await t.admin().get(`/admin/v1/clusters?size=2`);
    expect(admin.status).toBe(200);
    const unsorted = { empty: true, sorted: false, unsorted: true }; // page form A, as the original admin client decodes
    expect(admin.body).toMatchObject({ size: 2, number: 0, sort: unsorted, pageable: { pageSize: 2, sort: unsorted } });
    expect(admin.body.totalElements).toBeGreaterThanOrEqual(3);
  });
});
