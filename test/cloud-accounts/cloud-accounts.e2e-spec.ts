import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { createOrgWithRoles, insertCluster, insertEnvironment, OrgFixture } from '../environments/fixtures';

const ACCOUNT_KEYS = ['cloudProfile', 'displayName', 'enabled', 'identity', 'metadata', 'primaryCloudCredentialsIdentity'];
const PROFILE_KEYS = [
  'cloudProvider',
  'cloudProviderRegionResponses',
  'cloudProviderResponse',
  'displayName',
  'enabled',
  'identity',
  'metadata',
  'public',
  'regions',
  'type',
];
const HOUR = 60 * 60 * 1000;

describe('cloud accounts', () => {
  let t: TestApp;
  let org: OrgFixture;
  let base: string;
  let admin: ReturnType<TestApp['as']>;
  let envId: number;

  beforeAll(async () => {
    t = await startTestApp();
    org = await createOrgWithRoles(t, 'cloudorg');
    base = `/api/v1/orgs/${org.slug}/cloud-accounts`;
    admin = t.as(org.users.ADMIN.token);
    envId = await insertEnvironment(t, org.id, 'prod');
  });
  afterAll(async () => {
    t.clock.set(null);
    await t.close();
  });

  const fieldsOf = (body: { errors?: { field: string }[] }) => [...new Set((body.errors ?? []).map((e) => e.field))].sort();
  const create = (displayName: string, cloudProfile = 'platform-1-default', metadata?: Record<string, string>) =>
    admin.post(base).send({ cloudProfile, displayName, ...(metadata ? { metadata } : {}) });

  it('creates an account by profile slug or identity: exact response shape, audit with cloudAccountName', async () => {
    const res = await create('Main account', 'platform-1-default', { team: 'ops' });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(ACCOUNT_KEYS);
    expect(Object.keys(res.body.cloudProfile).sort()).toEqual(PROFILE_KEYS);
    expect(res.body).toMatchObject({
      displayName: 'Main account',
      enabled: true,
      metadata: { team: 'ops' },
      primaryCloudCredentialsIdentity: null,
      cloudProfile: { identity: '2b7e1f0a-5c3d-4e8f-a1b2-6d9c4e7f8a10', type: 'platform_1', enabled: true },
    });
    expect(res.body.cloudProfile.cloudProviderResponse.type).toBe('platform_1');
    expect(res.body.cloudProfile.regions).toContain('eu-central-1');
    const [row] = await t.db.query('SELECT cloud_provider_type FROM cloud_accounts WHERE identity = $1', [res.body.identity]);
    expect(row.cloud_provider_type).toBe('platform_1');
    const audit = await t.db.query(
      `SELECT type, cloud_account_name, organisation_slug, details FROM audit_events WHERE referenced_entity_identity = $1`,
      [res.body.identity],
    );
    expect(audit).toEqual([
      expect.objectContaining({ type: 'CLOUD_ACCOUNT_CREATED', cloud_account_name: 'Main account', organisation_slug: 'cloudorg' }),
    ]);
    const byIdentity = await create('By identity', '7a1d9e42-0b6f-4c83-b5e7-91f3c2d4a865');
    expect(byIdentity.status).toBe(200);
    expect(byIdentity.body.cloudProfile.type).toBe('platform_2');
    const activity = await t.db.query(`SELECT message FROM activity_events WHERE type = 'CLOUD_ACCOUNT_CREATED' AND organisation_id = $1`, [org.id]);
    expect(activity[0].message).toBe(`${org.users.ADMIN.username} created cloud account Main account`);
  });

  it('enforces the create bounds, naming the field', async () => {
    expect((await create('d'.repeat(64))).status).toBe(200);
    expect((await create('x')).status).toBe(200);
    for (const [body, field] of [
      [{ cloudProfile: 'platform-1-default', displayName: 'd'.repeat(65) }, 'displayName'],
      [{ cloudProfile: 'platform-1-default', displayName: '' }, 'displayName'],
      [{ cloudProfile: 'platform-1-default' }, 'displayName'],
      [{ displayName: 'ok' }, 'cloudProfile'],
      [{ cloudProfile: 'p'.repeat(65), displayName: 'ok' }, 'cloudProfile'],
      [{ cloudProfile: 'p'.repeat(64), displayName: 'ok' }, 'cloudProfile'],
      [{ cloudProfile: '00000000-0000-4000-8000-000000000000', displayName: 'ok' }, 'cloudProfile'],
      [{ cloudProfile: 'platform-1-default', displayName: 'ok', metadata: { a: 1 } }, 'metadata'],
      [{ cloudProfile: 'platform-1-default', displayName: 'ok', metadata: 'x' }, 'metadata'],
      [{ cloudProfile: 'platform-1-default', displayName: 'ok', region: 'x' }, 'region'],
    ] as [Record<string, unknown>, string][]) {
      const res = await admin.post(`${base}?fieldValidation=Strict`).send(body);
      expect(res.status).toBe(400);
      expectErrorBody(res.body, 400);
      expect(fieldsOf(res.body)).toEqual([field]);
    }
    const sixtyFour = await admin.post(base).send({ cloudProfile: 'p'.repeat(64), displayName: 'ok' });
    expect(sixtyFour.body.message).toMatch(/not a cloud profile/);
  });

  it('refuses a disabled cloud profile', async () => {
    await t.db.query(`UPDATE cloud_profiles SET enabled = false WHERE slug = 'platform-7-default'`);
    try {
      const res = await create('Disabled', 'platform-7-default');
      expect(res.status).toBe(400);
      expect(fieldsOf(res.body)).toEqual(['cloudProfile']);
      expect(res.body.message).toMatch(/not enabled/);
    } finally {
      await t.db.query(`UPDATE cloud_profiles SET enabled = true WHERE slug = 'platform-7-default'`);
    }
  });

  it('lists in page form B with display-name and cloud-provider-slug filters', async () => {
    await create('Filter ALPHA one', 'platform-3-default');
    await create('filter alpha two', 'platform-1-default');
    await create('filter 50%_beta', 'platform-3-default');
    const res = await admin.get(`${base}?display-name=ALPHA&sort=displayName,asc`);
    expect(res.status).toBe(200);
    expect(res.body.content.map((a: { displayName: string }) => a.displayName)).toEqual(['Filter ALPHA one', 'filter alpha two']);
    expect(res.body.sort).toEqual([{ ascending: true, direction: 'ASC', ignoreCase: false, nullHandling: 'NATIVE', property: 'displayName' }]);
    expect(res.body.pageable.sort).toEqual(res.body.sort);
    const byProvider = await admin.get(`${base}?display-name=alpha&cloud-provider-slug=platform_3`);
    expect(byProvider.body.content.map((a: { displayName: string }) => a.displayName)).toEqual(['Filter ALPHA one']);
    expect(byProvider.body.totalElements).toBe(1);
    const literal = await admin.get(`${base}?display-name=${encodeURIComponent('50%_')}`);
    expect(literal.body.content.map((a: { displayName: string }) => a.displayName)).toEqual(['filter 50%_beta']);
    const none = await admin.get(`${base}?cloud-provider-slug=nowhere`);
    expect(none.status).toBe(200);
    expect(none.body.content).toEqual([]);
    const unfiltered = await admin.get(base);
    expect(unfiltered.body.sort).toEqual([]);
    const [{ n }] = await t.db.query('SELECT count(*)::int AS n FROM cloud_accounts WHERE organisation_id = $1', [org.id]);
    expect(unfiltered.body.totalElements).toBe(n);
    expect((await admin.get(`${base}?sort=secret,asc`)).status).toBe(400);
  });

  it('gets one; 404 for unknown or foreign accounts, 400 for a malformed identity', async () => {
    const acc = await create('Get me');
    const got = await admin.get(`${base}/${acc.body.identity}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(acc.body);
    expect((await admin.get(`${base}/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    const other = await createOrgWithRoles(t, 'cloudorg2');
    const foreign = await t.as(other.users.ADMIN.token).get(`/api/v1/orgs/${other.slug}/cloud-accounts/${acc.body.identity}`);
    expect(foreign.status).toBe(404);
    const bad = await admin.get(`${base}/not-a-uuid`);
    expect(bad.status).toBe(400);
    expect(fieldsOf(bad.body)).toEqual(['cloudAccountIdentity']);
  });

  it('updates displayName (3..64), enabled and the primary credentials of the same account only', async () => {
    const acc = await create('Patch me');
    const url = `${base}/${acc.body.identity}`;
    expect((await admin.patch(url).send({ displayName: 'abc' })).status).toBe(200);
    const long = await admin.patch(url).send({ displayName: 'd'.repeat(64), enabled: false });
    expect(long.status).toBe(200);
    expect(long.body).toMatchObject({ displayName: 'd'.repeat(64), enabled: false });
    for (const [body, field] of [
      [{ displayName: 'ab' }, 'displayName'],
      [{ displayName: 'd'.repeat(65) }, 'displayName'],
      [{ displayName: null }, 'displayName'],
      [{ enabled: 'yes' }, 'enabled'],
      [{ primaryCloudCredentials: 'nope' }, 'primaryCloudCredentials'],
      [{ primaryCloudCredentials: '00000000-0000-4000-8000-000000000000' }, 'primaryCloudCredentials'],
      [{ cloudProfile: 'platform-2-default' }, 'cloudProfile'],
    ] as [Record<string, unknown>, string][]) {
      const res = await admin.patch(`${url}?fieldValidation=Strict`).send(body);
      expect(res.status).toBe(400);
      expect(fieldsOf(res.body)).toEqual([field]);
    }
    const c1 = await admin.post(`${url}/credentials/platform_1`).send({ displayName: 'one', credentials: { accessKeyId: 'A1', accessKeySecret: 'S1' } });
    const c2 = await admin.post(`${url}/credentials/platform_1`).send({ displayName: 'two', credentials: { accessKeyId: 'A2', accessKeySecret: 'S2' } });
    expect(c1.body.isPrimary).toBe(true);
    expect(c2.body.isPrimary).toBe(false);
    const otherAcc = await create('Other');
    const foreignCred = await admin
      .post(`${base}/${otherAcc.body.identity}/credentials/platform_1`)
      .send({ credentials: { accessKeyId: 'A3', accessKeySecret: 'S3' } });
    const refused = await admin.patch(url).send({ primaryCloudCredentials: foreignCred.body.identity });
    expect(refused.status).toBe(400);
    expect(fieldsOf(refused.body)).toEqual(['primaryCloudCredentials']);
    const switched = await admin.patch(url).send({ primaryCloudCredentials: c2.body.identity });
    expect(switched.status).toBe(200);
    expect(switched.body.primaryCloudCredentialsIdentity).toBe(c2.body.identity);
    const creds = await admin.get(`${url}/credentials`);
    expect(creds.body.content.map((c: { displayName: string; isPrimary: boolean }) => [c.displayName, c.isPrimary])).toEqual([
      ['one', false],
      ['two', true],
    ]);
    const audit = await t.db.query(
      `SELECT details FROM audit_events WHERE type = 'CLOUD_ACCOUNT_UPDATED' AND referenced_entity_identity = $1 ORDER BY id DESC LIMIT 1`,
      [acc.body.identity],
    );
    expect(audit[0].details).toEqual({ primaryCloudCredentialsIdentity: { old: c1.body.identity, new: c2.body.identity } });

    // The original Terraform provider sends every update as {displayName, enabled, primaryCloudCredentials: ""}:
    // "" leaves the primary credentials as they are and the other fields take effect.
    const asProvider = await admin.patch(url).send({ displayName: 'Renamed by Terraform', enabled: true, primaryCloudCredentials: '' });
    expect(asProvider.status).toBe(200);
    expect(asProvider.headers.warning).toBeUndefined();
    expect(asProvider.body).toMatchObject({ displayName: 'Renamed by Terraform', enabled: true, primaryCloudCredentialsIdentity: c2.body.identity });
    const [last] = await t.db.query(
      `SELECT details FROM audit_events WHERE type = 'CLOUD_ACCOUNT_UPDATED' AND referenced_entity_identity = $1 ORDER BY id DESC LIMIT 1`,
      [acc.body.identity],
    );
    expect(last.details).toEqual({ displayName: { old: 'd'.repeat(64), new: 'Renamed by Terraform' }, enabled: { old: false, new: true } });
    const unchanged = await admin.patch(url).send({ primaryCloudCredentials: '' });
    expect(unchanged.status).toBe(200);
    expect(unchanged.body.primaryCloudCredentialsIdentity).toBe(c2.body.identity);
  });

  it('refuses deletion while a cluster uses the account or one was deleted less than 24 h ago (by the clock)', async () => {
    const acc = await create('Delete me');
    const url = `${base}/${acc.body.identity}`;
    await admin.post(`${url}/credentials/platform_1`).send({ credentials: { accessKeyId: 'A', accessKeySecret: 'S' } }).expect(200);
    const [{ id: accountId }] = await t.db.query('SELECT id FROM cloud_accounts WHERE identity = $1', [acc.body.identity]);
    const clusterId = await insertCluster(t, { orgId: org.id, environmentId: envId, cloudAccountId: Number(accountId), slug: 'uses-account' });
    const inUse = await admin.delete(url);
    expect(inUse.status).toBe(409);
    expectErrorBody(inUse.body, 409);
    expect(inUse.body.message).toMatch(/used by 1 cluster/);

    const deletedAt = new Date(t.clock.now().getTime() - HOUR);
    await t.db.query(`UPDATE clusters SET deleted_at = $2, status = 'deleted' WHERE id = $1`, [clusterId, deletedAt]);
    const recent = await admin.delete(url);
    expect(recent.status).toBe(409);
    expect(recent.body.message).toContain(new Date(deletedAt.getTime() + 24 * HOUR).toISOString());

    t.clock.advance(22 * HOUR);
    expect((await admin.delete(url)).status).toBe(409);
    t.clock.advance(2 * HOUR);
    const done = await admin.delete(url);
    expect(done.status).toBe(204);
    t.clock.set(null);
    expect((await admin.get(url)).status).toBe(404);
    const [{ n }] = await t.db.query('SELECT count(*)::int AS n FROM cloud_credentials WHERE cloud_account_id = $1', [accountId]);
    expect(n).toBe(0);
    const audit = await t.db.query(`SELECT cloud_account_name FROM audit_events WHERE type = 'CLOUD_ACCOUNT_DELETED' AND referenced_entity_identity = $1`, [
      acc.body.identity,
    ]);
    expect(audit).toEqual([{ cloud_account_name: 'Delete me' }]);
    expect((await admin.delete(url)).status).toBe(404);
  });

  it('deletes an account that never had clusters at once', async () => {
    const acc = await create('Unused');
    expect((await admin.delete(`${base}/${acc.body.identity}`)).status).toBe(204);
  });

  it('documents every operation in the OpenAPI document, one credentials body per platform', async () => {
    const doc = (await t.http().get('/v3/api-docs')).body;
    const root = '/api/v1/orgs/{organisationSlug}/cloud-accounts';
    expect(Object.keys(doc.paths[root]).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths[`${root}/{cloudAccountIdentity}`]).sort()).toEqual(['delete', 'get', 'patch']);
    expect(doc.paths[root].get.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['display-name', 'cloud-provider-slug', 'page', 'size', 'sort']),
    );
    const schemas = new Set<string>();
    for (const platform of ['platform_1', 'platform_2', 'platform_3', 'platform_4', 'platform_5', 'platform_6', 'platform_7', 'byon', 'none', 'empty']) {
      const op = doc.paths[`${root}/{cloudAccountIdentity}/credentials/${platform}`]?.post;
      expect([platform, !!op]).toEqual([platform, true]);
      expect(op.responses['200']).toBeDefined();
      schemas.add(op.requestBody.content['application/json'].schema.$ref);
    }
    expect(schemas.size).toBe(8);
    const p1 = doc.components.schemas.Platform1Secret;
    expect(Object.keys(p1.properties).sort()).toEqual(['accessKeyId', 'accessKeySecret']);
    expect(doc.components.schemas.CreateCloudAccountRequest.properties.displayName.maxLength).toBe(64);
    expect(doc.components.schemas.UpdateCloudAccountRequest.properties.displayName).toMatchObject({ minLength: 3, maxLength: 64 });
    expect(doc.paths[`${root}/{cloudAccountIdentity}/credentials/{credentialsIdentity}`].delete.responses['204']).toBeDefined();
  });

  describe('role matrix', () => {
    let acc: string;
    beforeAll(async () => {
      acc = (await create('Matrix')).body.identity;
    });
    const order = ['VIEWER', 'MEMBER', 'ADMIN', 'OWNER'];
    const cases: [string, string, (as: ReturnType<TestApp['as']>) => Promise<{ status: number }>][] = [
      ['list', 'VIEWER', (as) => as.get(base)],
      ['get', 'VIEWER', (as) => as.get(`${base}/${acc}`)],
      ['credentials list', 'VIEWER', (as) => as.get(`${base}/${acc}/credentials`)],
      ['create', 'ADMIN', (as) => as.post(base).send({ cloudProfile: 'platform-1-default', displayName: 'matrix made' })],
      ['update', 'ADMIN', (as) => as.patch(`${base}/${acc}`).send({ displayName: 'Matrix' })],
      [
        'create credentials',
        'ADMIN',
        (as) => as.post(`${base}/${acc}/credentials/platform_1`).send({ credentials: { accessKeyId: 'a', accessKeySecret: 'b' } }),
      ],
    ];
    it.each(cases)('%s needs %s', async (_, least, call) => {
      for (const role of order) {
        const res = await call(t.as(org.users[role as 'VIEWER'].token));
        expect([role, res.status]).toEqual([role, order.indexOf(role) >= order.indexOf(least) ? 200 : 403]);
      }
      expect((await call(t.as(org.users.OUTSIDER.token))).status).toBe(403);
    });

    it('delete needs ADMIN', async () => {
      for (const role of order) {
        const target = (await create(`del ${role}`)).body.identity;
        const res = await t.as(org.users[role as 'VIEWER'].token).delete(`${base}/${target}`);
        expect([role, res.status]).toEqual([role, order.indexOf(role) >= 2 ? 204 : 403]);
        const cred = await admin.post(`${base}/${acc}/credentials/platform_1`).send({ credentials: { accessKeyId: 'a', accessKeySecret: 'b' } });
        const credDel = await t.as(org.users[role as 'VIEWER'].token).delete(`${base}/${acc}/credentials/${cred.body.identity}`);
        expect([role, credDel.status]).toEqual([role, order.indexOf(role) >= 2 ? 204 : 403]);
      }
      expect((await t.as(org.users.OUTSIDER.token).delete(`${base}/${acc}`)).status).toBe(403);
    });

    it('unauthenticated calls are 401', async () => {
      for (const [method, path] of [
        ['get', base],
        ['post', base],
        ['get', `${base}/${acc}`],
        ['patch', `${base}/${acc}`],
        ['delete', `${base}/${acc}`],
        ['get', `${base}/${acc}/credentials`],
        ['post', `${base}/${acc}/credentials/platform_1`],
        ['delete', `${base}/${acc}/credentials/${acc}`],
      ] as const) {
        expect((await t.http()[method](path).send({})).status).toBe(401);
      }
    });
  });
});
