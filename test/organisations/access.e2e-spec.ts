import { randomUUID } from 'crypto';
import { ADMIN_TOKEN, expectErrorBody, startTestApp, TestApp, TestUser } from '../support/test-app';
import { addMembership, auditCount, createBody, orgWithRoles, OrgFixture, RoleName } from './org-fixtures';

type Method = 'get' | 'post' | 'patch' | 'delete';
interface Target {
  slug: string;
  identity: string;
  memberIdentity: string;
}
interface Endpoint {
  name: string;
  method: Method;
  least: RoleName;
  ok: number;
  path: (o: Target) => string;
  /** Builds a fresh target (and body) for each allowed call of a non-repeatable mutation. */
  prepare?: (f: OrgFixture) => Promise<{ target?: Partial<Target>; body?: unknown }>;
  body?: unknown;
}

const ORDER: RoleName[] = ['VIEWER', 'MEMBER', 'ADMIN', 'OWNER'];
const allows = (role: RoleName, least: RoleName) => ORDER.indexOf(role) >= ORDER.indexOf(least);

let changeSeq = 0;

describe('organisation access: role matrix and tenant isolation', () => {
  let t: TestApp;
  let f: OrgFixture;
  let b: OrgFixture;
  let seq = 0;

  beforeAll(async () => {
    t = await startTestApp();
    f = await orgWithRoles(t, 'Matrix Org');
    b = await orgWithRoles(t, 'Bravo Org');
  });
  afterAll(() => t.close());

  const fresh = async (): Promise<TestUser> => t.createUser(`matrix${++seq}`);

  const endpoints: Endpoint[] = [
    { name: 'GET organisation', method: 'get', least: 'VIEWER', ok: 200, path: (o) => `/api/v1/organisations/${o.slug}` },
    {
      name: 'PATCH organisation',
      method: 'patch',
      least: 'ADMIN',
      ok: 200,
      path: (o) => `/api/v1/organisations/${o.slug}`,
      // A different value each time: a PATCH that changes nothing writes no audit row.
      prepare: async () => ({ body: { billingEmail: { email: `billing-${++changeSeq}@matrix.example` } } }),
    },
    { name: 'GET me', method: 'get', least: 'VIEWER', ok: 200, path: (o) => `/api/v1/organisations/${o.slug}/me` },
    { name: 'GET members', method: 'get', least: 'VIEWER', ok: 200, path: (o) => `/api/v1/organisations/${o.slug}/members` },
    {
      name: 'POST members',
      method: 'post',
      least: 'ADMIN',
      ok: 200,
      path: (o) => `/api/v1/organisations/${o.slug}/members`,
      prepare: async () => ({ body: { username: (await fresh()).username, role: 'MEMBER' } }),
    },
    {
      name: 'PATCH member',
      method: 'patch',
      least: 'ADMIN',
      ok: 200,
      path: (o) => `/api/v1/organisations/${o.slug}/members/${o.memberIdentity}`,
      prepare: async () => ({ body: { kubernetesRole: ++changeSeq % 2 ? 'EDIT' : 'VIEW' } }),
    },
    {
      name: 'DELETE member',
      method: 'delete',
      least: 'ADMIN',
      ok: 204,
      path: (o) => `/api/v1/organisations/${o.slug}/members/${o.memberIdentity}`,
      prepare: async (org) => ({ target: { memberIdentity: await addMembership(t, org.id, (await fresh()).id, 'MEMBER') } }),
    },
    { name: 'GET quotas', method: 'get', least: 'VIEWER', ok: 200, path: (o) => `/api/v1/organisations/${o.slug}/quotas` },
    { name: 'GET compute', method: 'get', least: 'VIEWER', ok: 200, path: (o) => `/api/v1/compute-information/organisation/${o.slug}` },
    { name: 'GET activity', method: 'get', least: 'VIEWER', ok: 200, path: (o) => `/api/v1/organisations/${o.slug}/activity` },
    { name: 'GET audit events', method: 'get', least: 'VIEWER', ok: 200, path: (o) => `/api/v1/orgs/${o.slug}/audit-events` },
    { name: 'GET usage', method: 'get', least: 'VIEWER', ok: 200, path: (o) => `/api/v1/orgs/${o.slug}/usage?groupBy=environment` },
    { name: 'GET statements', method: 'get', least: 'VIEWER', ok: 200, path: (o) => `/api/v1/orgs/${o.slug}/statements` },
    { name: 'GET budgets', method: 'get', least: 'VIEWER', ok: 200, path: (o) => `/api/v1/orgs/${o.slug}/budgets` },
    {
      name: 'POST budgets',
      method: 'post',
      least: 'ADMIN',
      ok: 200,
      path: (o) => `/api/v1/orgs/${o.slug}/budgets`,
      prepare: async () => ({ body: { name: `Budget ${++changeSeq}`, amount: '100', currency: 'EUR' } }),
    },
    {
      name: 'GET statement',
      method: 'get',
      least: 'VIEWER',
      ok: 404, // a period that has not begun: members learn that (404), outsiders do not (403)
      path: (o) => `/api/v1/orgs/${o.slug}/statements/2999-01`,
    },
    {
      name: 'GET cluster audit events',
      method: 'get',
      least: 'VIEWER',
      ok: 404, // no cluster prod/web in this organisation: members learn that (404), outsiders do not (403)
      path: (o) => `/api/v1/orgs/${o.slug}/audit-events/prod/web`,
    },
    {
      name: 'DELETE organisation',
      method: 'delete',
      least: 'OWNER',
      ok: 204,
      path: (o) => `/api/v1/organisations/${o.identity}`,
      prepare: async (org) => {
        // A throwaway organisation with the same people in the same roles.
        const res = await t.as(org.owner.token).post('/api/v1/organisations').send(createBody(`Throwaway ${++seq}`));
        const [row] = await t.db.query('SELECT id FROM organisations WHERE identity = $1', [res.body.identity]);
        for (const [role, u] of [
          ['ADMIN', org.admin],
          ['MEMBER', org.member],
          ['VIEWER', org.viewer],
        ] as const)
          await addMembership(t, row.id, u.id, role);
        return { target: { identity: res.body.identity, slug: res.body.slug.slugValue } };
      },
    },
  ];

  const targetOf = (o: OrgFixture, memberRole: RoleName = 'MEMBER'): Target => ({
    slug: o.slug,
    identity: o.identity,
    memberIdentity: o.memberIdentity[memberRole],
  });

  const send = (token: string | null, method: Method, path: string, body?: unknown) => {
    const req = token ? t.as(token)[method](path) : t.http()[method](path);
    return body !== undefined ? req.send(body as object) : req;
  };

  describe.each(endpoints.map((e) => [e.name, e] as const))('%s', (_, e) => {
    it.each(['OWNER', 'ADMIN', 'MEMBER', 'VIEWER', 'non-member', 'unauthenticated'])('as %s', async (who) => {
      const token =
        who === 'unauthenticated' ? null : who === 'non-member' ? f.outsider.token : f[who.toLowerCase() as 'owner'].token;
      const allowed = who !== 'unauthenticated' && who !== 'non-member' && allows(who as RoleName, e.least);
      let target = targetOf(f);
      let body = e.body;
      if (allowed && e.prepare) {
        const p = await e.prepare(f);
        target = { ...target, ...p.target };
        body = p.body ?? body;
      } else if (e.prepare && e.method === 'post') {
        body = (await e.prepare(f)).body;
      }
      const before = await auditCount(t);
      const res = await send(token, e.method, e.path(target), body);
      const expected = who === 'unauthenticated' ? 401 : allowed ? e.ok : 403;
      expect({ who, status: res.status, body: res.status >= 400 ? res.body : undefined }).toMatchObject({ who, status: expected });
      if (expected >= 400) {
        expectErrorBody(res.body, expected);
        // A refused request never leaves an audit row.
        expect(await auditCount(t)).toBe(before);
      } else if (e.method !== 'get') {
        expect(await auditCount(t)).toBe(before + 1);
      }
    });
  });

  describe('tenant isolation', () => {
    it.each(endpoints.map((e) => [e.name, e] as const))(
      '%s: a member of another organisation and an unknown slug get the same 403',
      async (_, e) => {
        const before = await auditCount(t);
        const body = e.method === 'post' ? { username: f.member.username } : e.body;
        const other = await send(f.owner.token, e.method, e.path(targetOf(b)), body);
        const unknownTarget = { slug: 'no-such-org', identity: randomUUID(), memberIdentity: randomUUID() };
        const missing = await send(f.owner.token, e.method, e.path(unknownTarget), body);
        expect(other.status).toBe(403);
        expect(missing.status).toBe(403);
        expectErrorBody(other.body, 403);
        const key = (o: Target) => (e.name === 'DELETE organisation' ? o.identity : o.slug);
        expect(other.body.message).toBe(`You are not a member of organisation '${key(targetOf(b))}'.`);
        expect(missing.body.message).toBe(`You are not a member of organisation '${key(unknownTarget)}'.`);
        expect(await auditCount(t)).toBe(before);
      },
    );

    it('nothing of organisation B changed', async () => {
      const [org] = await t.db.query('SELECT billing_email, version FROM organisations WHERE id = $1', [b.id]);
      expect(org).toEqual({ billing_email: null, version: 1 });
      const members = await t.db.query('SELECT role, kubernetes_role FROM organisation_members WHERE organisation_id = $1 ORDER BY id', [b.id]);
      expect(members).toEqual([
        { role: 'OWNER', kubernetes_role: 'CLUSTER_ADMIN' },
        { role: 'ADMIN', kubernetes_role: 'VIEW' },
        { role: 'MEMBER', kubernetes_role: 'VIEW' },
        { role: 'VIEWER', kubernetes_role: 'VIEW' },
      ]);
    });

    it('B’s data does not appear in A’s lists', async () => {
      const members = await t.as(f.viewer.token).get(`/api/v1/organisations/${f.slug}/members?size=500`);
      const names = members.body.content.map((m: { username: string }) => m.username);
      expect(names).not.toContain(b.owner.username);
      const audit = await t.as(f.viewer.token).get(`/api/v1/orgs/${f.slug}/audit-events?size=500`);
      expect(audit.body.content.every((ev: { customerSlug: string }) => ev.customerSlug === f.slug)).toBe(true);
      const activity = await t.as(f.viewer.token).get(`/api/v1/organisations/${f.slug}/activity?size=500`);
      expect(activity.body.content.some((a: { message: string }) => a.message.includes(b.slug))).toBe(false);
    });
  });

  describe('OpenAPI', () => {
    it('documents every operation here with its responses', async () => {
      const res = await t.http().get('/v3/api-docs');
      expect(res.status).toBe(200);
      const paths = res.body.paths;
      const expected: [string, string, string][] = [
        ['post', '/api/v1/organisations', '200'],
        ['get', '/api/v1/organisations/{organisationSlug}', '200'],
        ['patch', '/api/v1/organisations/{organisationSlug}', '200'],
        ['delete', '/api/v1/organisations/{organisationIdentity}', '204'],
        ['get', '/api/v1/organisations/{organisationSlug}/me', '200'],
        ['get', '/api/v1/organisations/{organisationSlug}/members', '200'],
        ['post', '/api/v1/organisations/{organisationSlug}/members', '200'],
        ['patch', '/api/v1/organisations/{organisationSlug}/members/{memberIdentity}', '200'],
        ['delete', '/api/v1/organisations/{organisationSlug}/members/{memberIdentity}', '204'],
        ['get', '/api/v1/organisations/{organisationSlug}/quotas', '200'],
        ['get', '/api/v1/organisations/{organisationSlug}/activity', '200'],
        ['get', '/api/v1/memberships', '200'],
        ['get', '/api/v1/compute-information/organisation/{organisationSlug}', '200'],
        ['get', '/api/v1/orgs/{organisationSlug}/audit-events', '200'],
        ['get', '/api/v1/orgs/{organisationSlug}/audit-events/{environmentSlug}/{cluster}', '200'],
        ['get', '/api/v1/orgs/{organisationSlug}/usage', '200'],
        ['get', '/api/v1/orgs/{organisationSlug}/statements', '200'],
        ['get', '/api/v1/orgs/{organisationSlug}/statements/{period}', '200'],
        ['get', '/api/v1/orgs/{organisationSlug}/usage/export', '200'],
        ['get', '/api/v1/orgs/{organisationSlug}/budgets', '200'],
        ['post', '/api/v1/orgs/{organisationSlug}/budgets', '200'],
        ['get', '/admin/v1/organisations', '200'],
      ];
      for (const [method, path, status] of expected) {
        const op = paths[path]?.[method];
        expect({ method, path, documented: !!op }).toEqual({ method, path, documented: true });
        expect(Object.keys(op.responses)).toEqual(expect.arrayContaining([status, '401', '500']));
        expect(op.summary).toEqual(expect.any(String));
        const names = (op.parameters ?? []).map((p: { name: string; in: string }) => `${p.in}:${p.name}`);
        expect(new Set(names).size).toBe(names.length);
      }
      const create = res.body.components.schemas.CreateOrganisationRequest;
      expect(create.required).toEqual(expect.arrayContaining(['acceptedAgreements', 'contactEmail', 'organisationName', 'organisationType']));
      expect(create.properties.organisationType.enum).toEqual(['BUSINESS', 'ENTERPRISE', 'INDIVIDUAL', 'TRIAL']);
    });
  });

  describe('platform administrators who are not members', () => {
    it('may read every organisation but not change it (except delete)', async () => {
      for (const e of endpoints.filter((x) => x.method === 'get' && x.name !== 'GET me')) {
        const res = await send(ADMIN_TOKEN, 'get', e.path(targetOf(b)));
        expect({ name: e.name, status: res.status }).toEqual({ name: e.name, status: e.ok === 404 ? 404 : 200 });
      }
      const patch = await send(ADMIN_TOKEN, 'patch', `/api/v1/organisations/${b.slug}`, { organisationName: 'Admin Rename' });
      expect(patch.status).toBe(403);
    });
  });
});
