import { buildOpenApiDocument } from '../../src/app.factory';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, settle } from '../clusters/cluster-fixtures';
import { providerClusterCreate, providerDefaultAddons } from '../clients/original/terraform-provider';
import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';

/** The interface's Slug/Email objects and form B sorts, turned into what /compat answers (written independently of src/compat). */
function expectedPlain(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) {
    if (key === 'sort') return { empty: value.length === 0, sorted: value.length > 0, unsorted: value.length === 0 };
    return value.map((v) => expectedPlain(v));
  }
  if (value && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === 'slugValue') return (value as { slugValue: string }).slugValue;
    if (keys.length === 1 && keys[0] === 'email') return (value as { email: string }).email;
    const out = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expectedPlain(v, k)]));
    // A started cluster is `running`, the status the original provider waits for.
    if ('addons' in out && out.status === 'started') out.status = 'running';
    // A membership has the `id` the original clients read: its organisation's identity.
    if ('memberIdentity' in out && 'organisationIdentity' in out) out.id = out.organisationIdentity;
    return out;
  }
  return value;
}

/** Every {slugValue} / {email} object and every array-valued `sort` left in a body. */
function interfaceShapes(value: unknown, path = '$'): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => interfaceShapes(v, `${path}[${i}]`));
  if (!value || typeof value !== 'object') return [];
  const keys = Object.keys(value);
  if (keys.length === 1 && (keys[0] === 'slugValue' || keys[0] === 'email')) return [path];
  return Object.entries(value).flatMap(([k, v]) => (k === 'sort' && Array.isArray(v) ? [`${path}.sort`] : interfaceShapes(v, `${path}.${k}`)));
}

describe('/compat: the same operations in the representation of the original clients', () => {
  let t: TestApp;
  let f: OrgFixture;
  const both = async (path: string, token: string) => {
    const a = await t.as(token).get(path);
    const b = await t.as(token).get(`/compat${path}`);
    return [a, b] as const;
  };

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '1000' });
    f = await createOrgFixture(t);
    const created = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'web' }));
    expect(created.status).toBe(200);
    await settle(t);
  });
  afterAll(async () => t.close());

  it('answers the same resources with Slug and Email objects as strings and every page in form A; the interface keeps its shapes', async () => {
    const viewer = f.users.viewer.token;
    const paths = [
      `/api/v1/orgs/${f.orgSlug}/clusters`, // page form B of ClusterResponse (Slug objects)
      `/api/v1/orgs/${f.orgSlug}/clusters/${f.envSlug}`,
      `/api/v1/orgs/${f.orgSlug}/clusters/${f.envSlug}/web?includeDetails=true`,
      `/api/v1/orgs/${f.orgSlug}/environments`, // page form A of EnvironmentResponse (Slug objects)
      `/api/v1/orgs/${f.orgSlug}/environments/${f.envSlug}`,
      `/api/v1/orgs/${f.orgSlug}/cloud-accounts`, // page form B without Slugs
      `/api/v1/orgs/${f.orgSlug}/update-channels`,
      `/api/v1/organisations/${f.orgSlug}`,
      `/api/v1/organisations/${f.orgSlug}/members`, // Email objects
      '/api/v1/memberships', // Email and Slug objects
    ];
    for (const path of paths) {
      const [iface, compat] = await both(path, viewer);
      expect({ path, status: iface.status }).toEqual({ path, status: 200 });
      expect({ path, status: compat.status }).toEqual({ path, status: 200 });
      expect({ path, body: compat.body }).toEqual({ path, body: expectedPlain(iface.body) });
      expect({ path, left: interfaceShapes(compat.body) }).toEqual({ path, left: [] });
    }
    // The interface's paths keep the interface's shapes on the same resources.
    const [list, compatList] = await both(`/api/v1/orgs/${f.orgSlug}/clusters?sort=name,asc`, viewer);
    expect(list.body.sort).toEqual([{ ascending: true, direction: 'ASC', ignoreCase: false, nullHandling: 'NATIVE', property: 'name' }]);
    expect(list.body.content[0].slug).toEqual({ slugValue: 'web' });
    expect(list.body.content[0].customerSlug).toEqual({ slugValue: f.orgSlug });
    expect(compatList.body.content[0]).toMatchObject({ slug: 'web', customerSlug: f.orgSlug, environmentSlug: f.envSlug });
    expect(compatList.body.sort).toEqual({ empty: false, sorted: true, unsorted: false });
    expect(compatList.body.pageable.sort).toEqual(compatList.body.sort);
    const [members, compatMembers] = await both('/api/v1/memberships', viewer);
    expect(members.body.content[0].email).toEqual({ email: f.users.viewer.email });
    expect(compatMembers.body.content[0]).toMatchObject({ email: f.users.viewer.email, slug: f.orgSlug });
    // Provider types keep their neutral names.
    expect(compatList.body.content[0].cloudProvider).toBe('platform_1');
  });

  it('is the same operation: authentication, roles, validation, audit and field warnings', async () => {
    const base = `/compat${clustersPath(f)}`;
    // No credential: 401; not a member: 403; VIEWER may not change: 403.
    const anonymous = await t.http().get(`/compat/api/v1/orgs/${f.orgSlug}/clusters`);
    expect(anonymous.status).toBe(401);
    expectErrorBody(anonymous.body, 401);
    expect((await t.as(f.users.outsider.token).get(`/compat/api/v1/orgs/${f.orgSlug}/clusters`)).status).toBe(403);
    expect((await t.as(f.users.viewer.token).patch(`${base}/web`).send({ description: 'x' })).status).toBe(403);
    // Validation answers the same 400.
    const [a, b] = await Promise.all([
      t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'x', region: 42 })),
      t.as(f.users.member.token).post(base).send(clusterBody(f, { name: 'x', region: 42 })),
    ]);
    expect(b.status).toBe(400);
    expect(b.body.errors).toEqual(a.body.errors);
    // A change through /compat is audited like any other, and answers plainly; unknown fields warn the same way.
    const patched = await t.as(f.users.member.token).patch(`${base}/web`).send({ description: 'via compat', environmentId: 'x' });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ slug: 'web', description: 'via compat' });
    expect(String(patched.headers.warning)).toContain('unknown field \\"environmentId\\"');
    const [audit] = await t.db.query(
      `SELECT actor_username, details FROM audit_events WHERE type = 'CLUSTER_UPDATED' AND cluster_slug = 'web' ORDER BY id DESC LIMIT 1`,
    );
    expect(audit).toEqual({ actor_username: f.users.member.username, details: { description: { old: null, new: 'via compat' } } });
    // Requests take both forms: an Email object or a plain string, on either path.
    for (const prefix of ['', '/compat']) {
      const orgPatch = await t.as(f.users.owner.token).patch(`${prefix}/api/v1/organisations/${f.orgSlug}`).send({ billingEmail: `billing${prefix.length}@acme.example` });
      expect(orgPatch.status).toBe(200);
      const objectForm = await t.as(f.users.owner.token).patch(`${prefix}/api/v1/organisations/${f.orgSlug}`).send({ billingEmail: { email: 'b@acme.example' } });
      expect(objectForm.status).toBe(200);
    }
  });

  it('shares the rate-limit budget of the credential across both paths', async () => {
    const user = await t.createUser('compat-budget');
    const first = await t.as(user.token).get('/api/v1/memberships');
    const second = await t.as(user.token).get('/compat/api/v1/memberships');
    expect(first.headers['ratelimit-limit']).toBe('1000');
    expect(Number(second.headers['ratelimit-remaining'])).toBe(Number(first.headers['ratelimit-remaining']) - 1);
  });

  it('serves /compat/sts/v1 and /compat/admin/v1; other prefixes are not routes', async () => {
    const tokens = await t.as(f.users.viewer.token).get('/compat/sts/v1/personal-access-tokens');
    const direct = await t.as(f.users.viewer.token).get('/sts/v1/personal-access-tokens');
    expect(tokens.status).toBe(direct.status);
    expect(tokens.body).toEqual(expectedPlain(direct.body));
    for (const path of ['/compat/health', '/compat/v3/api-docs', '/compat', '/compat/', '/compat/compat/api/v1/memberships']) {
      const res = await t.as(f.users.viewer.token).get(path);
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
    }
    const admin = await t.admin().get('/compat/admin/v1/clusters');
    expect(admin.status).toBe(200);
    expect(admin.body.content.find((c: { slug: string }) => c.slug === 'web')).toMatchObject({ customerSlug: f.orgSlug, environmentSlug: f.envSlug });
    expect((await t.as(f.users.owner.token).get('/compat/admin/v1/clusters')).status).toBe(403);
  });

  it('the platform administration API answers plain strings on both paths, as its document says', async () => {
    const [direct, compat] = await Promise.all([t.admin().get('/admin/v1/clusters?size=500'), t.admin().get('/compat/admin/v1/clusters?size=500')]);
    expect(expectedPlain(direct.body)).toEqual(compat.body);
    expect(interfaceShapes(direct.body)).toEqual([]);
    const web = direct.body.content.find((c: { slug: string }) => c.slug === 'web');
    const one = await t.admin().get(`/admin/v1/clusters/${web.identity}`);
    expect(one.body).toMatchObject({ slug: 'web', customerSlug: f.orgSlug, environmentSlug: f.envSlug });
    const orgs = await t.admin().get('/admin/v1/organisations?size=500');
    expect(orgs.body.content.find((o: { slug: string }) => o.slug === f.orgSlug)).toBeDefined();
    expect(interfaceShapes(orgs.body)).toEqual([]);

    const doc = buildOpenApiDocument(t.app) as unknown as {
      info: { description: string };
      paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>>;
      components: { schemas: Record<string, { properties?: Record<string, { type?: string; $ref?: string }> }> };
    };
    const schemaOf = (path: string, method = 'get') => JSON.stringify(doc.paths[path][method].responses['200'].content!['application/json'].schema);
    expect(schemaOf('/admin/v1/clusters/{clusterIdentity}')).toBe('{"$ref":"#/components/schemas/ClusterResponsePlain"}');
    expect(doc.components.schemas.ClusterResponsePlain.properties!.slug.type).toBe('string');
    expect(doc.components.schemas.ClusterResponsePlain.properties!.customerSlug.type).toBe('string');
    expect(schemaOf('/admin/v1/organisations')).toContain('OrganisationResponsePlain');
    // The interface's operations keep the interface's schemas.
    expect(schemaOf('/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}')).toBe('{"$ref":"#/components/schemas/ClusterResponse"}');
    expect(doc.components.schemas.ClusterResponse.properties!.slug.$ref).toBe('#/components/schemas/SlugDto');
    expect(doc.info.description).toContain('`/compat/api/v1/...`');
  });

  it('reads a cluster back as the original client wrote it: add-on names and set, profile case, cni left out, running', async () => {
    const base = `/compat${clustersPath(f)}`;
    const member = t.as(f.users.member.token);
    const created = await member.post(base).send(providerClusterCreate({ name: 'tf', cloudAccountIdentity: f.accountIdentity, region: 'eu-central-1', version: '1.31.5' }));
    expect(created.status).toBe(200);
    const names = Object.keys(providerDefaultAddons()).sort();
    expect(Object.keys(created.body.addons).sort()).toEqual(names);
    expect(created.body.podSecurityStandardsProfile).toBe('PRIVILEGED');
    expect(created.body.cni).toBeNull();
    // The service keeps its own words: the catalog's names (with its default add-ons), lower case, its default CNI.
    const direct = await member.get(`${clustersPath(f)}/tf`);
    expect(direct.body.addons).toHaveProperty('cert-manager');
    expect(direct.body.addons).toHaveProperty('metrics-server');
    expect(direct.body.addons).not.toHaveProperty('certManager');
    expect(direct.body.podSecurityStandardsProfile).toBe('privileged');
    expect(direct.body.cni).toBe('cilium');
    await settle(t);
    const read = await member.get(`${base}/tf`);
    expect(read.body.status).toBe('running');
    expect((await member.get(`${clustersPath(f)}/tf`)).body.status).toBe('started');
    expect(read.body.addons.kured).toEqual(providerDefaultAddons().kured);
    expect(read.body.addons.fluxOperator).toEqual({ enabled: false, customValues: {} });
    // Lists answer the same words.
    const list = await member.get(base);
    expect(Object.keys(list.body.content.find((c: { slug: string }) => c.slug === 'tf').addons).sort()).toEqual(names);

    // A change made on the interface's path shows through the client's name; one the client never named does not appear.
    const viaInterface = await member.patch(`${clustersPath(f)}/tf`).send({ addons: { 'cert-manager': { enabled: true, customValues: {} } } });
    expect(viaInterface.status).toBe(200);
    expect((await member.get(`${base}/tf`)).body.addons.certManager).toEqual({ enabled: true, customValues: {} });
    // Another profile is answered as the service has it.
    await member.patch(`${clustersPath(f)}/tf`).send({ podSecurityStandardsProfile: 'baseline' });
    expect((await member.get(`${base}/tf`)).body.podSecurityStandardsProfile).toBe('baseline');
  });

  it('a /compat PATCH naming one add-on in two vocabularies keeps the catalog name, with a Warning, instead of 400', async () => {
    const base = `/compat${clustersPath(f)}`;
    const member = t.as(f.users.member.token);
    expect((await member.post(base).send(providerClusterCreate({ name: 'merged', cloudAccountIdentity: f.accountIdentity, region: 'eu-central-1', version: '1.31.5' }))).status).toBe(200);
    // The provider's plan: a state read in the catalog's names (an older answer) merged with its default map.
    const addons = { ...providerDefaultAddons(), 'cert-manager': { enabled: true, customValues: {} }, 'network-policy': { enabled: true, customValues: {} } };
    const patched = await member.patch(`${base}/merged`).send({ addons });
    expect(patched.status).toBe(200);
    expect(String(patched.headers.warning)).toContain('addons.certManager was ignored: addons.cert-manager names the same add-on (cert-manager)');
    expect(String(patched.headers.warning)).toContain('addons.defaultNetworkPolicies was ignored');
    expect((await member.get(`${clustersPath(f)}/merged`)).body.addons['cert-manager'].enabled).toBe(true);
    // Both names read back, each with the add-on's state.
    const read = await member.get(`${base}/merged`);
    expect(read.body.addons.certManager).toEqual({ enabled: true, customValues: {} });
    expect(read.body.addons['cert-manager']).toEqual({ enabled: true, customValues: {} });
    // The interface's path keeps its rule: two names for one add-on are 400 there.
    const strict = await member.patch(`${clustersPath(f)}/merged`).send({ addons });
    expect(strict.status).toBe(400);
  });

  it("the Go client's node-pool update keeps what Go's zero values cannot say", async () => {
    const member = t.as(f.users.member.token);
    const pools = `${clustersPath(f)}/web/pools`;
    const made = await member.post(pools).send({ name: 'keep', nodeSize: 'm5.large', minSize: 1, maxSize: 3, autoScaling: true, enableNodeAutoReplacement: true, enableNodeReboots: true, upgradeStrategy: 'INPLACE' });
    expect(made.status).toBe(200);
    const update = { name: '', nodeSize: 'm5.large', minSize: 2, maxSize: 3, autoScaling: false, enableNodeAutoReplacement: false, enableNodeReboots: false, annotations: {}, labels: { a: 'b' }, taints: [] };
    const viaCompat = await member.put(`/compat${pools}/${made.body.id}`).send(update);
    expect(viaCompat.status).toBe(200);
    expect(viaCompat.body).toMatchObject({ name: 'keep', minSize: 2, autoScaling: true, enableNodeAutoReplacement: true, enableNodeReboots: true, upgradeStrategy: 'INPLACE', labels: { a: 'b' } });
    // The interface's PUT replaces the whole definition, as documented.
    const direct = await member.put(`${pools}/${made.body.id}`).send(update);
    expect(direct.body).toMatchObject({ autoScaling: false, enableNodeAutoReplacement: false, upgradeStrategy: 'REPLACE' });
  });

  it('memberships carry the id the original clients read; error bodies name the requested /compat path', async () => {
    const members = await t.as(f.users.viewer.token).get('/compat/api/v1/memberships');
    const [{ identity: orgIdentity }] = await t.db.query('SELECT identity FROM organisations WHERE slug = $1', [f.orgSlug]);
    expect(members.body.content.find((m: { slug: string }) => m.slug === f.orgSlug)).toMatchObject({ id: orgIdentity, organisationIdentity: orgIdentity });
    expect((await t.as(f.users.viewer.token).get('/api/v1/memberships')).body.content[0]).not.toHaveProperty('id');
    const cases: [string, number][] = [
      [`/compat/api/v1/orgs/${f.orgSlug}/clusters/${f.envSlug}/missing`, 404],
      [`/compat/api/v1/orgs/${f.orgSlug}/clusters/${f.envSlug}/web?show-compute=maybe`, 400],
      ['/compat/admin/v1/clusters', 403],
    ];
    for (const [path, status] of cases) {
      const res = await t.as(f.users.viewer.token).get(path);
      expect({ path, status: res.status }).toEqual({ path, status });
      expect(res.body.path).toBe(path.split('?')[0]);
    }
    const unauthenticated = await t.http().get(`/compat/api/v1/orgs/${f.orgSlug}/clusters`);
    expect(unauthenticated.body.path).toBe(`/compat/api/v1/orgs/${f.orgSlug}/clusters`);
  });
});
