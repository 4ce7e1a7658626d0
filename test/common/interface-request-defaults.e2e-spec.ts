import { clusterBody, clustersPath, createOrgFixture, OrgFixture } from '../clusters/cluster-fixtures';
import { ADMIN_TOKEN, expectErrorBody, startTestApp, TestApp } from '../support/test-app';

/**
 * Request fields the interface leaves optional (test/fixtures/interface-requests.json) are optional in the document
 * too; the service fills in the documented default, or answers 400 naming the field where no default can make sense
 * (docs/conventions.md, "Optional request fields").
 */
describe('optional request fields: defaults, or 400 naming the field', () => {
  let t: TestApp;
  let f: OrgFixture;
  const as = () => t.as(f.users.admin.token);
  const fields = (body: { errors?: { field: string; message: string }[] }) => (body.errors ?? []).map((e) => `${e.field}: ${e.message}`);

  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
  });
  afterAll(() => t.close());

  it('node pools: name pool-N (first free), minSize 1 and maxSize minSize; nodeSize has no default', async () => {
    const created = await as()
      .post(clustersPath(f))
      .send(clusterBody(f, { name: 'defaults', nodePools: [{ nodeSize: 'm5.large' }, { name: 'pool-1', nodeSize: 'm5.large', minSize: 2, maxSize: 3 }] }));
    expect(created.status).toBe(200);
    const poolsPath = `${clustersPath(f)}/defaults/pools`;
    const pools = await as().get(poolsPath).expect(200);
    const summary = (pools.body as { name: string; minSize: number; maxSize: number }[]).map((p) => [p.name, p.minSize, p.maxSize]);
    expect(summary).toEqual(expect.arrayContaining([['pool-2', 1, 1], ['pool-1', 2, 3]]));

    const added = await as().post(poolsPath).send({ nodeSize: 'm5.large', maxSize: 4 });
    expect(added.status).toBe(200);
    expect(added.body).toEqual(expect.objectContaining({ name: 'pool-3', minSize: 1, maxSize: 4 }));

    const noSize = await as().post(poolsPath).send({ name: 'nosize' });
    expect(noSize.status).toBe(400);
    expectErrorBody(noSize.body, 400);
    expect(fields(noSize.body)).toEqual([expect.stringMatching(/^nodeSize: nodeSize is required/)]);
  });

  it('IPRange: a subnet without ipRange is the default subnet; an ipWhitelist cidr without it is 400', async () => {
    const plain = await as().post(clustersPath(f)).send(clusterBody(f, { name: 'plain-subnet' })).expect(200);
    const empty = await as().post(clustersPath(f)).send(clusterBody(f, { name: 'empty-subnet', clusterPodSubnet: {}, serviceSubnet: {} }));
    expect(empty.status).toBe(200);
    expect([empty.body.clusterPodSubnet, empty.body.serviceSubnet]).toEqual([plain.body.clusterPodSubnet, plain.body.serviceSubnet]);

    const whitelist = await as()
      .post(clustersPath(f))
      .send(clusterBody(f, { name: 'no-cidr', ipWhitelist: [{ cidr: {}, description: 'office' }] }));
    expect(whitelist.status).toBe(400);
    expect(fields(whitelist.body).join('\n')).toMatch(/^ipWhitelist\.0\.cidr: ipWhitelist\.0\.cidr\.ipRange is required/);
  });

  it('maintenance schedules: the name from the windows, 240-minute windows; windows, day and startTime have no default', async () => {
    const base = `/api/v1/organisations/${f.orgSlug}/maintenance-schedule`;
    const created = await as().post(base).send({ windows: [{ day: 'tue', startTime: '02:00' }] });
    expect(created.status).toBe(200);
    expect(created.body).toEqual(
      expect.objectContaining({ name: 'TUESDAY 02:00 (240 min)', windows: [{ day: 'TUESDAY', startTime: '02:00', duration: 240 }] }),
    );

    const none = await as().post(base).send({ name: 'no windows' });
    expect(none.status).toBe(400);
    expect(fields(none.body)).toEqual([expect.stringMatching(/^windows: windows is required/)]);

    const noDay = await as().post(base).send({ windows: [{ startTime: '02:00' }, { day: 'MONDAY' }] });
    expect(noDay.status).toBe(400);
    expect(fields(noDay.body).join('\n')).toMatch(/day is required/);
    expect(fields(noDay.body).join('\n')).toMatch(/startTime is required/);
  });

  it('dashboard integrations: the name from the URL host; apiToken and url have no default', async () => {
    const base = `/api/v1/orgs/${f.orgSlug}/integrations/dashboard`;
    const created = await as().post(base).send({ apiToken: 'dash-token', url: 'http://127.0.0.1:9/' });
    expect(created.status).toBe(200);
    expect(created.body).toEqual(expect.objectContaining({ name: '127.0.0.1', url: 'http://127.0.0.1:9' }));

    const missing = await as().post(base).send({ name: 'nothing' });
    expect(missing.status).toBe(400);
    expect(fields(missing.body).join('\n')).toMatch(/apiToken: apiToken is required/);
    expect(fields(missing.body).join('\n')).toMatch(/url: url is required/);
  });

  it('platform_1 credentials: no default for the key pair, 400 naming what is missing', async () => {
    const base = `/api/v1/orgs/${f.orgSlug}/cloud-accounts/${f.accountIdentity}/credentials/platform_1`;
    const none = await as().post(base).send({ displayName: 'deployer' });
    expect(none.status).toBe(400);
    expect(fields(none.body)).toEqual([expect.stringMatching(/^credentials: credentials is required/)]);

    const half = await as().post(base).send({ displayName: 'deployer', credentials: { accessKeyId: 'AKIAEXAMPLE' } });
    expect(half.status).toBe(400);
    expect(fields(half.body).join('\n')).toMatch(/credentials\.accessKeySecret is required/);
  });

  it('organisation create: an accepted agreement without its slug is 400 naming it', async () => {
    const res = await as()
      .post('/api/v1/organisations')
      .send({ organisationName: 'No slug', organisationType: 'BUSINESS', contactEmail: { email: 'ops@noslug.example' }, acceptedAgreements: [{}] });
    expect(res.status).toBe(400);
    expect(fields(res.body).join('\n')).toMatch(/^acceptedAgreements\.0\.agreementSlug: acceptedAgreements\.0\.agreementSlug is required/);
  });

  it('users: oidcId is a UUID', async () => {
    const bad = await t.as(ADMIN_TOKEN).post('/api/v1/user/add').send({ email: 'oidc@example.com', username: 'oidc-user', oidcId: 'subject-123' });
    expect(bad.status).toBe(400);
    expect(fields(bad.body)).toEqual([expect.stringMatching(/^oidcId: oidcId must be a UUID/)]);
    const oidcId = '0b6a3f0e-6f0e-4b7a-9a57-2d7f0c1e9b11';
    const ok = await t.as(ADMIN_TOKEN).post('/api/v1/user/add').send({ email: 'oidc@example.com', username: 'oidc-user', oidcId });
    expect(ok.status).toBe(200);
    expect(ok.body.oidcId).toBe(oidcId);
  });
});
