import request from 'supertest';
import { buildOpenApiDocument } from '../../src/app.factory';
import { clusterBody, clustersPath, createOrgFixture, settle } from '../clusters/cluster-fixtures';
import { createOrgWithRoles, OrgFixture } from '../environments/fixtures';
import { createBody } from '../organisations/org-fixtures';
import { PROVIDER_ADDONS_WITHOUT_COUNTERPART, providerClusterCreate, providerDefaultAddons } from '../clients/original/terraform-provider';
import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';

/**
 * How ordinary HTTP clients (and the original Go client) talk to the service: empty JSON bodies, unknown
 * query parameters, unknown body properties (Kubernetes-style fieldValidation), lenient Spring paging, and
 * the bounded cost of hostile bodies.
 */
describe('interoperability with ordinary HTTP clients', () => {
  let t: TestApp;
  let org: OrgFixture;
  const member = () => t.as(org.users.MEMBER.token);
  const envs = () => `/api/v1/orgs/${org.slug}/environments`;

  beforeAll(async () => {
    t = await startTestApp();
    org = await createOrgWithRoles(t, 'interop');
  });
  afterAll(async () => t.close());

  describe('bodies', () => {
    it('treats an empty body with Content-Type application/json as no body, for DELETE and POST', async () => {
      await member().post(envs()).send({ name: 'gone-soon' }).expect(200);
      const del = await member().delete(`${envs()}/gone-soon`).set('Content-Type', 'application/json');
      expect(del.status).toBe(204);
      const [row] = await t.db.query(`SELECT deleted_at FROM environments WHERE slug = 'gone-soon'`);
      expect(row.deleted_at).not.toBeNull();

      // A bodiless POST to an operation with a body is validated as an empty object: 400 naming the field.
      const post = await member().post(envs()).set('Content-Type', 'application/json');
      expect(post.status).toBe(400);
      expectErrorBody(post.body, 400);
      expect(post.body.errors).toEqual([{ field: 'name', message: 'name is required' }]);

      // Whitespace only is empty too; broken JSON is still 400.
      const spaces = await member().post(envs()).set('Content-Type', 'application/json').send('  \n');
      expect(spaces.status).toBe(400);
      expect(spaces.body.errors[0].message).toBe('name is required');
      const broken = await member().post(envs()).set('Content-Type', 'application/json').send('{"name":');
      expect(broken.status).toBe(400);
      expect(broken.body.message).toMatch(/not valid JSON/);
    });

    it('still refuses prototype poisoning in JSON bodies', async () => {
      const res = await member().post(envs()).set('Content-Type', 'application/json').send('{"name":"abcd","__proto__":{"x":1}}');
      expect(res.status).toBe(400);
    });
  });

  describe('unknown query parameters', () => {
    it('are ignored on lists and single reads', async () => {
      const list = await member().get(`${envs()}?show-compute=true&utm_source=mail&pageable=x`);
      expect(list.status).toBe(200);
      expect(list.body.content).toBeDefined();
      await member().post(envs()).send({ name: 'query-env' }).expect(200);
      expect((await member().get(`${envs()}/query-env?foo=bar`)).status).toBe(200);
      const clusters = await member().get(`/api/v1/orgs/${org.slug}/clusters?show-compute=true&whatever=1`);
      expect(clusters.status).toBe(200);
    });
  });

  describe('unknown body properties (fieldValidation)', () => {
    it('Warn (default): drops them, proceeds, and names each in a Warning header', async () => {
      const res = await member().post(envs()).send({ name: 'warned', environmentId: 7, colour: 'red' });
      expect(res.status).toBe(200);
      expect(res.body.name).toBe('warned');
      const warnings = ([] as string[]).concat(res.headers.warning ?? []);
      const all = warnings.join(', ');
      expect(all).toContain('299 - "unknown field \\"environmentId\\""');
      expect(all).toContain('299 - "unknown field \\"colour\\""');
      // The stored row and the audit entry carry only known fields.
      const [audit] = await t.db.query(
        `SELECT details FROM audit_events WHERE type = 'ENVIRONMENT_CREATED' AND details->'name'->>'new' = 'warned'`,
      );
      expect(JSON.stringify(audit.details)).not.toMatch(/colour|environmentId/);
    });

    it('Warn names at most 10 fields, then one header saying how many more', async () => {
      const body: Record<string, unknown> = { name: 'many-unknown' };
      for (let i = 0; i < 15; i++) body[`extra${i}`] = i;
      const res = await member().post(envs()).send(body);
      expect(res.status).toBe(200);
      const raw = res.headers.warning as unknown as string | string[];
      const text = Array.isArray(raw) ? raw.join(', ') : raw;
      expect(text.match(/unknown field \\"/g)).toHaveLength(10);
      expect(text).toContain('5 more unknown fields were dropped');
    });

    it('Strict: 400 naming them, nothing written', async () => {
      const res = await member().post(`${envs()}?fieldValidation=Strict`).send({ name: 'strict-env', environmentId: 7 });
      expect(res.status).toBe(400);
      expectErrorBody(res.body, 400);
      expect(res.body.errors).toEqual([{ field: 'environmentId', message: 'unknown field "environmentId"' }]);
      expect(await t.db.query(`SELECT 1 FROM environments WHERE slug = 'strict-env'`)).toHaveLength(0);
    });

    it('Ignore: drops them silently', async () => {
      const res = await member().post(`${envs()}?fieldValidation=Ignore`).send({ name: 'ignored-env', environmentId: 7 });
      expect(res.status).toBe(200);
      expect(res.headers.warning).toBeUndefined();
    });

    it('an unknown fieldValidation value is 400 naming it', async () => {
      const res = await member().post(`${envs()}?fieldValidation=Loose`).send({ name: 'loose-env' });
      expect(res.status).toBe(400);
      expect(res.body.errors[0].field).toBe('fieldValidation');
    });

    it('wrong types and bounds of known fields stay 400 whatever the mode, and unknown nested fields warn', async () => {
      for (const mode of ['', '?fieldValidation=Ignore', '?fieldValidation=Warn']) {
        const res = await member().post(`${envs()}${mode}`).send({ name: 12, colour: 'red' });
        expect(res.status).toBe(400);
        expect(new Set(res.body.errors.map((e: { field: string }) => e.field))).toEqual(new Set(['name']));
      }
      const nested = await t
        .as(org.users.ADMIN.token)
        .post(`/api/v1/organisations/${org.slug}/members`)
        .send({ username: org.users.OUTSIDER.username, email: { email: org.users.OUTSIDER.email, verified: true } });
      expect([200, 409]).toContain(nested.status);
      expect(String(nested.headers.warning)).toContain('unknown field \\"email.verified\\"');
    });
  });

  describe('cost of bad bodies is bounded', () => {
    it('answers a 1 MiB body of ~95,000 unknown keys with a brief 400 from the shape bound, while /health answers', async () => {
      const body: Record<string, number> = { name: 1 };
      for (let i = 0; i < 95_000; i++) body[i.toString(36)] = 0;
      const json = JSON.stringify(body);
      expect(json.length).toBeGreaterThan(750_000);
      const server = t.app.getHttpServer();
      // Refused by the body's shape bound (src/http-hardening.ts), before any validator walks the keys; /health calls
      // sent alongside are answered. How long either takes is measured by the benchmarks, not asserted here.
      for (let round = 0; round < 3; round++) {
        const [res, ...health] = await Promise.all([
          member().post(envs()).set('Content-Type', 'application/json').send(json),
          request(server).get('/health'),
          request(server).get('/health'),
          request(server).get('/health'),
        ]);
        expect(res.status).toBe(400);
        expect(res.body.message).toMatch(/more than 256 properties/);
        // One refusal, not a validation error per key.
        expect(res.body.errors ?? []).toHaveLength(0);
        expect(JSON.stringify(res.body).length).toBeLessThan(16 * 1024);
        expect(health.map((h) => h.status)).toEqual([200, 200, 200]);
      }
    });

    it('refuses very many values and deep nesting before validation; error lists stop at 20', async () => {
      const many = await member().post(envs()).send({ name: 'x', list: Array.from({ length: 20_001 }, () => 1) });
      expect(many.status).toBe(400);
      expect(many.body.message).toMatch(/more than 20000 values/);

      let deep: Record<string, unknown> = {};
      for (let i = 0; i < 40; i++) deep = { d: deep };
      const deepRes = await member().post(envs()).send({ name: 'deep-one', ...deep });
      expect(deepRes.status).toBe(400);
      expect(deepRes.body.message).toMatch(/nested more than 32/);

      const body: Record<string, unknown> = { name: 'okname' };
      for (let i = 0; i < 200; i++) body[`u${i}`] = i;
      const strict = await member().post(`${envs()}?fieldValidation=Strict`).send(body);
      expect(strict.status).toBe(400);
      expect(strict.body.errors).toHaveLength(21);
      expect(strict.body.errors[20]).toEqual({ field: '', message: '180 more errors not listed' });
    });
  });

  describe('paging like Spring Data', () => {
    it('page < 0 or not a number is 0; size < 1 or not a number is the default; ignorecase sorts case-insensitively', async () => {
      for (const name of ['bravo', 'Alpha-env', 'charlie']) await member().post(envs()).send({ name }).expect(200);
      for (const q of ['page=-1&size=0', 'page=abc&size=xyz', 'page=&size=']) {
        const res = await member().get(`${envs()}?${q}`);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ number: 0, size: 50 });
      }
      const huge = await member().get(`${envs()}?size=100000`);
      expect(huge.body.size).toBe(500);
      const ci = await member().get(`${envs()}?sort=name,asc,ignorecase`);
      expect(ci.status).toBe(200);
      const names = ci.body.content.map((e: { name: string }) => e.name);
      expect(names).toEqual([...names].sort((a: string, b: string) => a.toLowerCase().localeCompare(b.toLowerCase())));
      expect(ci.body.sort).toEqual({ empty: false, sorted: true, unsorted: false });
      const ciDate = await member().get(`${envs()}?sort=createdAt,DESC,IgnoreCase`);
      expect(ciDate.status).toBe(200);
    });

    it('sort=constructor / toString / valueOf / __proto__ are 400 on every paged list of the OpenAPI document', async () => {
      const doc = buildOpenApiDocument(t.app);
      const admin = await t.createUser('interop-platform', { platformAdmin: true });
      const fill = (path: string) =>
        path
          .replace(/\{organisationSlug\}|\{organizationSlug\}/g, org.slug)
          .replace(/\{[A-Za-z]*Identity\}/g, '00000000-0000-4000-8000-000000000000')
          .replace(/\{[^}]+\}/g, 'nothing-here');
      let checked = 0;
      for (const [path, item] of Object.entries(doc.paths)) {
        const op = item.get;
        if (!op) continue;
        const params = (op.parameters ?? []) as { name?: string; in?: string }[];
        if (!params.some((p) => p.in === 'query' && p.name === 'sort')) continue;
        for (const prop of ['constructor', 'toString', 'valueOf', '__proto__', 'hasOwnProperty']) {
          const token = /organi[sz]ationSlug/.test(path) ? org.users.OWNER.token : admin.token;
          const res = await t.as(token).get(`${fill(path)}?sort=${prop},asc`);
          // A list under a path that needs an existing parent may answer 403/404 before paging; never 500.
          expect(res.status).not.toBe(500);
          if (!path.includes('{') || /^\/api\/v1\/orgs\/\{organisationSlug\}\/[a-z-]+$/.test(path)) {
            expect({ path, prop, status: res.status }).toEqual({ path, prop, status: 400 });
          }
        }
        checked++;
      }
      expect(checked).toBeGreaterThan(15);
    });
  });

  describe('lenient input forms and clusters as Terraform creates them', () => {
    it('creates a cluster with nodePools: [] that reaches started; pools are added afterwards', async () => {
      const f = await createOrgFixture(t);
      const created = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'bare', nodePools: [] }));
      expect(created.status).toBe(200);
      await settle(t);
      const got = await t.as(f.users.viewer.token).get(`${clustersPath(f)}/bare`);
      expect(got.body.status).toBe('started');
      expect(got.body.provisionStatus).toBe('DONE');
      const pool = await t
        .as(f.users.member.token)
        .post(`${clustersPath(f)}/bare/pools`)
        .send({ name: 'later', nodeSize: 'm5.large', minSize: 1, maxSize: 2 });
      expect(pool.status).toBe(200);
    });

    it("creates a cluster with the provider's default add-on map: its names are aliases, unknown disabled ones warn", async () => {
      const f = await createOrgFixture(t);
      const member = t.as(f.users.member.token);
      const body = providerClusterCreate({ name: 'tf-addons', cloudAccountIdentity: f.accountIdentity, region: 'eu-central-1', version: '1.31.5' });
      const created = await member.post(clustersPath(f)).send(body);
      expect({ status: created.status, body: created.status === 200 ? 'ok' : created.body }).toEqual({ status: 200, body: 'ok' });
      // The provider's default profile PRIVILEGED is the interface's privileged.
      expect(created.body.podSecurityStandardsProfile).toBe('privileged');
      // The aliases became the catalog's add-ons, with the provider's values.
      expect(created.body.addons).toMatchObject({
        'cert-manager': { enabled: false, customValues: {} },
        'ingress-controller': { enabled: false, customValues: { type: 'ingress-nginx' } },
        'network-policy': { enabled: true, customValues: {} },
        'node-reboots': { enabled: true, customValues: providerDefaultAddons().kured.customValues },
        'observability-agent': { enabled: false, customValues: {} },
      });
      for (const name of [...PROVIDER_ADDONS_WITHOUT_COUNTERPART, 'certManager', 'kured']) expect(created.body.addons[name]).toBeUndefined();
      // Each disabled add-on without a counterpart is named in a Warning header, as unknown fields are.
      const warnings = ([] as string[]).concat(created.headers.warning ?? []).join(', ');
      expect(warnings).toContain('299 - "unknown field \\"environmentId\\""');
      for (const name of PROVIDER_ADDONS_WITHOUT_COUNTERPART) expect(warnings).toContain(`unknown add-on \\"${name}\\" (disabled) was dropped`);
      const [row] = await t.db.query(`SELECT addons FROM clusters WHERE identity = $1`, [created.body.identity]);
      expect(Object.keys(row.addons).filter((k) => /[A-Z]/.test(k))).toEqual([]);

      // The provider's update sends the same map again, "" for a channel and a schedule it does not set, and its
      // profile in upper case: accepted the same way ("" detaches, as null does).
      await member.patch(`${clustersPath(f)}/tf-addons`).send({ updateChannel: 'stable' }).expect(200);
      const updated = await member.patch(`${clustersPath(f)}/tf-addons`).send({
        addons: providerDefaultAddons(),
        updateChannel: '',
        maintenanceScheduleIdentity: '',
        podSecurityStandardsProfile: 'PRIVILEGED',
        version: '1.31.5',
      });
      expect(updated.status).toBe(200);
      expect(updated.body.addons['node-reboots'].enabled).toBe(true);
      expect(updated.body).toMatchObject({ updateChannel: null, maintenanceSchedule: null, podSecurityStandardsProfile: 'privileged' });

      // Strict makes the unknown ones 400; an unknown enabled add-on is 400 naming the valid names; an alias and its
      // catalog name together are 400. Nothing is written.
      const strict = await member.post(`${clustersPath(f)}?fieldValidation=Strict`).send({ ...body, environmentId: undefined, name: 'tf-strict' });
      expect(strict.status).toBe(400);
      expect(strict.body.errors[0].field).toBe('addons.fluxOperator');
      const gpu = await member.post(clustersPath(f)).send({ ...body, name: 'tf-gpu', addons: { ...providerDefaultAddons(), gpu: { enabled: true, customValues: {} } } });
      expect(gpu.status).toBe(400);
      expect(gpu.body.errors).toEqual([{ field: 'addons.gpu', message: expect.stringContaining("'gpu' is not an add-on; use one of: cert-manager,") }]);
      const both = await member.patch(`${clustersPath(f)}/tf-addons`).send({ addons: { certManager: { enabled: true }, 'cert-manager': { enabled: false } } });
      expect(both.status).toBe(400);
      expect(both.body.errors[0].field).toBe('addons.certManager');
      expect(await t.db.query(`SELECT 1 FROM clusters WHERE slug IN ('tf-strict', 'tf-gpu')`)).toHaveLength(0);
    });

    it('accepts ipWhitelist items as CIDR strings and Email fields as plain strings', async () => {
      const f = await createOrgFixture(t);
      await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'walled' })).expect(200);
      const res = await t
        .as(f.users.member.token)
        .patch(`${clustersPath(f)}/walled`)
        .send({ ipWhitelist: ['203.0.113.0/24', { cidr: { ipRange: '198.51.100.0/24' }, description: 'office' }] });
      expect(res.status).toBe(200);
      expect(res.body.ipWhitelist).toEqual([
        { cidr: '203.0.113.0/24', description: '' },
        { cidr: '198.51.100.0/24', description: 'office' },
      ]);
      const bad = await t.as(f.users.member.token).patch(`${clustersPath(f)}/walled`).send({ ipWhitelist: ['not-a-cidr'] });
      expect(bad.status).toBe(400);

      const creator = await t.createUser('plain-email-owner');
      const org2 = await t.as(creator.token).post('/api/v1/organisations').send(createBody('Plain Email', { contactEmail: 'ops@plain.example' }));
      expect(org2.status).toBe(200);
      expect(org2.body.contactEmail).toBe('ops@plain.example');
    });

    it('the admin cluster list honours show-compute and hideDeleted', async () => {
      const f = await createOrgFixture(t);
      await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'to-delete' })).expect(200);
      await settle(t);
      await t.as(f.users.member.token).patch(`${clustersPath(f)}/to-delete`).send({ status: 'deleting' }).expect(200);
      await settle(t);
      const admin = await t.createUser('interop-admin2', { platformAdmin: true });
      const hidden = await t.as(admin.token).get('/admin/v1/clusters?show-compute=true&hideDeleted=true&size=500');
      expect(hidden.status).toBe(200);
      expect(hidden.body.content.some((c: { slug: string }) => c.slug === 'to-delete')).toBe(false);
      const all = await t.as(admin.token).get('/admin/v1/clusters?hideDeleted=false&size=500');
      const gone = all.body.content.find((c: { slug: string }) => c.slug === 'to-delete'); // plain strings in the admin API
      expect(gone).toMatchObject({ status: 'deleted' });
      expect(gone.deletedAt).toEqual(expect.any(String));
      expect(hidden.body.sort).toEqual({ empty: true, sorted: false, unsorted: true }); // page form A
    });

    it('the admin client reads and upgrades a cluster by identity (GET and PUT /admin/v1/clusters/{identity})', async () => {
      const f = await createOrgFixture(t);
      const created = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'by-id' }));
      await settle(t);
      const admin = await t.createUser('interop-admin3', { platformAdmin: true });
      const got = await t.as(admin.token).get(`/admin/v1/clusters/${created.body.identity}`);
      expect(got.status).toBe(200);
      expect(got.body).toMatchObject({ identity: created.body.identity, status: 'started', actualState: expect.any(Object) });
      const put = await t
        .as(admin.token)
        .put(`/admin/v1/clusters/${created.body.identity}`)
        .set('Content-Type', 'application/json')
        .send({ clusterIdentity: created.body.identity, version: '1.31.6' });
      expect(put.status).toBe(200);
      expect(put.body.version).toBe('1.31.6');
      const [audit] = await t.db.query(
        `SELECT actor_username FROM audit_events WHERE cluster_slug = 'by-id' AND type <> 'CLUSTER_CREATED' AND actor_username <> 'system' ORDER BY id DESC LIMIT 1`,
      );
      expect(audit.actor_username).toBe('interop-admin3');
      const mismatch = await t.as(admin.token).put(`/admin/v1/clusters/${created.body.identity}`).send({ clusterIdentity: f.accountIdentity, version: '1.31.6' });
      expect(mismatch.status).toBe(400);
      expect((await t.as(admin.token).get('/admin/v1/clusters/00000000-0000-4000-8000-000000000000')).status).toBe(404);
      expect((await t.as(f.users.owner.token).get(`/admin/v1/clusters/${created.body.identity}`)).status).toBe(403);
    });
  });
});
