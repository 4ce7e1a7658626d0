import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { addMembership, auditCount, orgWithRoles, OrgFixture } from './org-fixtures';

describe('organisation members and memberships', () => {
  let t: TestApp;
  let f: OrgFixture;
  let userSeq = 0;

  beforeAll(async () => {
    t = await startTestApp();
    f = await orgWithRoles(t, 'Members Org');
  });
  afterAll(() => t.close());

  const freshUser = () => t.createUser(`fresh${++userSeq}`);
  const base = () => `/api/v1/organisations/${f.slug}`;

  describe('GET members and me', () => {
    it('lists members in form A with spec field names', async () => {
      const res = await t.as(f.viewer.token).get(`${base()}/members?sort=username,asc`);
      expect(res.status).toBe(200);
      expect(res.body.sort).toEqual({ empty: false, sorted: true, unsorted: false });
      expect(res.body.pageable.sort).toEqual(res.body.sort);
      expect(res.body.totalElements).toBeGreaterThanOrEqual(4);
      const owner = res.body.content.find((m: { username: string }) => m.username === f.owner.username);
      expect(owner).toEqual({
        email: { email: f.owner.email },
        identity: f.memberIdentity.OWNER,
        joinedAt: expect.any(String),
        kubernetesRole: 'CLUSTER_ADMIN',
        role: 'OWNER',
        subject: f.owner.identity,
        username: f.owner.username,
      });
      const names = res.body.content.map((m: { username: string }) => m.username);
      expect(names).toEqual([...names].sort());
    });

    it('pages and refuses unknown sort properties', async () => {
      const res = await t.as(f.viewer.token).get(`${base()}/members?size=2&page=1`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ number: 1, size: 2, numberOfElements: 2, first: false });
      expect(res.body.sort).toEqual({ empty: true, sorted: false, unsorted: true });
      const bad = await t.as(f.viewer.token).get(`${base()}/members?sort=password,asc`);
      expect(bad.status).toBe(400);
      expect(bad.body.errors[0].field).toBe('sort');
    });

    it('me answers the caller’s own membership for every role', async () => {
      for (const [role, u] of [
        ['ADMIN', f.admin],
        ['MEMBER', f.member],
        ['VIEWER', f.viewer],
      ] as const) {
        const res = await t.as(u.token).get(`${base()}/me`);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ role, subject: u.identity, username: u.username, identity: f.memberIdentity[role] });
      }
      expect((await t.as(f.outsider.token).get(`${base()}/me`)).status).toBe(403);
      // A platform administrator may read the organisation but has no membership of it.
      const admin = await t.admin().get(`${base()}/me`);
      expect(admin.status).toBe(404);
    });
  });

  describe('POST members', () => {
    it('adds a user by username with defaults and answers 200 with no body; audited', async () => {
      const u = await freshUser();
      const before = await auditCount(t);
      const res = await t.as(f.admin.token).post(`${base()}/members`).send({ username: u.username });
      expect(res.status).toBe(200);
      expect(res.text).toBe('');
      const [row] = await t.db.query(
        'SELECT identity, role, kubernetes_role FROM organisation_members WHERE organisation_id = $1 AND user_id = $2',
        [f.id, u.id],
      );
      expect(row).toMatchObject({ role: 'VIEWER', kubernetes_role: 'VIEW' });
      expect(await auditCount(t)).toBe(before + 1);
      const [audit] = await t.db.query('SELECT type, details, referenced_entity_identity FROM audit_events ORDER BY id DESC LIMIT 1');
      expect(audit).toEqual({
        type: 'ORGANISATION_MEMBER_ADDED',
        referenced_entity_identity: row.identity,
        details: {
          username: { old: null, new: u.username },
          role: { old: null, new: 'VIEWER' },
          kubernetesRole: { old: null, new: 'VIEW' },
        },
      });
      const [activity] = await t.db.query('SELECT message FROM activity_events WHERE organisation_id = $1 ORDER BY id DESC LIMIT 1', [f.id]);
      expect(activity.message).toBe(`${f.admin.username} added organisation member ${u.username} to ${f.slug} as VIEWER`);
      // The new member sees it in their memberships.
      const mine = await t.as(u.token).get('/api/v1/memberships');
      expect(mine.body.content).toEqual([
        {
          email: { email: u.email },
          identity: u.identity,
          kubernetesRole: 'VIEW',
          memberIdentity: row.identity,
          name: 'Members Org',
          organisationIdentity: f.identity,
          role: 'VIEWER',
          slug: { slugValue: f.slug },
        },
      ]);
    });

    it('adds a user by email with a role and kubernetesRole', async () => {
      const u = await freshUser();
      const res = await t
        .as(f.admin.token)
        .post(`${base()}/members`)
        .send({ email: { email: u.email.toUpperCase() }, role: 'MEMBER', kubernetesRole: 'EDIT' });
      expect(res.status).toBe(200);
      const [row] = await t.db.query('SELECT role, kubernetes_role FROM organisation_members WHERE organisation_id = $1 AND user_id = $2', [
        f.id,
        u.id,
      ]);
      expect(row).toEqual({ role: 'MEMBER', kubernetes_role: 'EDIT' });
    });

    it('404 for an unknown user, 409 for an existing member, 400 without username or email', async () => {
      const before = await auditCount(t);
      const unknown = await t.as(f.admin.token).post(`${base()}/members`).send({ username: 'nobody-here' });
      expect(unknown.status).toBe(404);
      expectErrorBody(unknown.body, 404);
      const dup = await t.as(f.admin.token).post(`${base()}/members`).send({ username: f.member.username });
      expect(dup.status).toBe(409);
      expect(dup.body.message).toMatch(/already a member/);
      const none = await t.as(f.admin.token).post(`${base()}/members`).send({ role: 'MEMBER' });
      expect(none.status).toBe(400);
      expect(none.body.errors[0].field).toBe('username');
      expect(await auditCount(t)).toBe(before);
    });

    it.each([
      [{ username: 'x', role: 'ROOT' }, 'role'],
      [{ username: 'x', kubernetesRole: 'ADMIN' }, 'kubernetesRole'],
      [{ email: { email: 'bad' } }, 'email.email'],
      [{ email: 42 }, 'email'],
      [{ username: '' }, 'username'],
      [{ username: 'x'.repeat(65) }, 'username'],
      [{ username: 'x', extra: true }, 'extra'],
    ])('refuses %j with 400 naming %s', async (body, field) => {
      const res = await t.as(f.admin.token).post(`${base()}/members?fieldValidation=Strict`).send(body);
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    });

    it('only an OWNER may grant OWNER', async () => {
      const u = await freshUser();
      const byAdmin = await t.as(f.admin.token).post(`${base()}/members`).send({ username: u.username, role: 'OWNER' });
      expect(byAdmin.status).toBe(403);
      expect(byAdmin.body.message).toMatch(/OWNER/);
      const byOwner = await t.as(f.owner.token).post(`${base()}/members`).send({ username: u.username, role: 'OWNER' });
      expect(byOwner.status).toBe(200);
    });
  });

  describe('PATCH and DELETE members: OWNER rules', () => {
    let g: OrgFixture;
    beforeAll(async () => {
      g = await orgWithRoles(t, 'Owner Rules');
    });
    const gBase = () => `/api/v1/organisations/${g.slug}`;

    it('changes role and kubernetesRole, audited with old and new values', async () => {
      const u = await freshUser();
      const id = await addMembership(t, g.id, u.id, 'VIEWER');
      const res = await t.as(g.admin.token).patch(`${gBase()}/members/${id}`).send({ role: 'MEMBER', kubernetesRole: 'EDIT' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ identity: id, role: 'MEMBER', kubernetesRole: 'EDIT', subject: u.identity, email: { email: u.email } });
      const [audit] = await t.db.query('SELECT type, details FROM audit_events ORDER BY id DESC LIMIT 1');
      expect(audit).toEqual({
        type: 'ORGANISATION_MEMBER_UPDATED',
        details: { role: { old: 'VIEWER', new: 'MEMBER' }, kubernetesRole: { old: 'VIEW', new: 'EDIT' } },
      });
    });

    it('the last OWNER can be neither demoted nor removed (409), not even by themselves', async () => {
      const before = await auditCount(t);
      const demote = await t.as(g.owner.token).patch(`${gBase()}/members/${g.memberIdentity.OWNER}`).send({ role: 'ADMIN' });
      expect(demote.status).toBe(409);
      expectErrorBody(demote.body, 409);
      expect(demote.body.message).toMatch(/last OWNER/);
      const remove = await t.as(g.owner.token).delete(`${gBase()}/members/${g.memberIdentity.OWNER}`);
      expect(remove.status).toBe(409);
      expect(remove.body.message).toMatch(/last OWNER/);
      expect(await auditCount(t)).toBe(before);
      const [row] = await t.db.query('SELECT role FROM organisation_members WHERE identity = $1', [g.memberIdentity.OWNER]);
      expect(row.role).toBe('OWNER');
      // Changing only the kubernetesRole of the last OWNER is fine.
      const k8s = await t.as(g.owner.token).patch(`${gBase()}/members/${g.memberIdentity.OWNER}`).send({ kubernetesRole: 'EDIT' });
      expect(k8s.status).toBe(200);
      expect(k8s.body.role).toBe('OWNER');
    });

    it('ADMIN may not promote to, demote or remove an OWNER (403); with two OWNERs an OWNER may', async () => {
      const admin = await t.as(g.admin.token).patch(`${gBase()}/members/${g.memberIdentity.MEMBER}`).send({ role: 'OWNER' });
      expect(admin.status).toBe(403);
      const promote = await t.as(g.owner.token).patch(`${gBase()}/members/${g.memberIdentity.MEMBER}`).send({ role: 'OWNER' });
      expect(promote.status).toBe(200);
      expect((await t.as(g.admin.token).patch(`${gBase()}/members/${g.memberIdentity.MEMBER}`).send({ role: 'ADMIN' })).status).toBe(403);
      expect((await t.as(g.admin.token).delete(`${gBase()}/members/${g.memberIdentity.MEMBER}`)).status).toBe(403);
      // Nor change an OWNER's kubernetesRole or environment overrides; nothing is written.
      const auditBefore = await auditCount(t);
      const k8s = await t.as(g.admin.token).patch(`${gBase()}/members/${g.memberIdentity.MEMBER}`).send({ kubernetesRole: 'NONE' });
      expect(k8s.status).toBe(403);
      await t.as(g.admin.token).post(`/api/v1/orgs/${g.slug}/environments`).send({ name: 'owner-env' }).expect(200);
      const auditAfterEnv = await auditCount(t);
      const override = await t
        .as(g.admin.token)
        .post(`/api/v1/orgs/${g.slug}/environments/owner-env/members/${g.memberIdentity.MEMBER}`)
        .send({ kubernetesRole: 'NONE' });
      expect(override.status).toBe(403);
      expect((await t.as(g.admin.token).delete(`/api/v1/orgs/${g.slug}/environments/owner-env/members/${g.memberIdentity.MEMBER}`)).status).toBe(403);
      expect(await auditCount(t)).toBe(auditAfterEnv);
      expect(auditAfterEnv).toBe(auditBefore + 1);
      // An OWNER may set another OWNER's override.
      const byOwner = await t
        .as(g.owner.token)
        .post(`/api/v1/orgs/${g.slug}/environments/owner-env/members/${g.memberIdentity.MEMBER}`)
        .send({ kubernetesRole: 'VIEW' });
      expect(byOwner.status).toBe(200);
      // A PATCH that changes nothing leaves no audit row and no activity event.
      const beforeNoop = await auditCount(t);
      const [{ n: activityBefore }] = await t.db.query(`SELECT count(*)::int AS n FROM activity_events`);
      const noop = await t.as(g.owner.token).patch(`${gBase()}/members/${g.memberIdentity.MEMBER}`).send({ role: 'OWNER' });
      expect(noop.status).toBe(200);
      expect(await auditCount(t)).toBe(beforeNoop);
      expect((await t.db.query(`SELECT count(*)::int AS n FROM activity_events`))[0].n).toBe(activityBefore);
      // Now two OWNERs: the original may step down.
      const demote = await t.as(g.owner.token).patch(`${gBase()}/members/${g.memberIdentity.OWNER}`).send({ role: 'ADMIN' });
      expect(demote.status).toBe(200);
      // g.member is now the last OWNER.
      const last = await t.as(g.member.token).delete(`${gBase()}/members/${g.memberIdentity.MEMBER}`);
      expect(last.status).toBe(409);
      // Restore: g.member makes g.owner OWNER again.
      expect((await t.as(g.member.token).patch(`${gBase()}/members/${g.memberIdentity.OWNER}`).send({ role: 'OWNER' })).status).toBe(200);
      const removeOwner = await t.as(g.owner.token).delete(`${gBase()}/members/${g.memberIdentity.MEMBER}`);
      expect(removeOwner.status).toBe(204);
    });

    it('DELETE removes a member (204), audited; unknown member 404; malformed id 400', async () => {
      const u = await freshUser();
      const id = await addMembership(t, g.id, u.id, 'MEMBER');
      const res = await t.as(g.admin.token).delete(`${gBase()}/members/${id}`);
      expect(res.status).toBe(204);
      expect(await t.db.query('SELECT 1 FROM organisation_members WHERE identity = $1', [id])).toHaveLength(0);
      const [audit] = await t.db.query('SELECT type, details FROM audit_events ORDER BY id DESC LIMIT 1');
      expect(audit.type).toBe('ORGANISATION_MEMBER_REMOVED');
      expect(audit.details.role).toEqual({ old: 'MEMBER', new: null });
      const again = await t.as(g.admin.token).delete(`${gBase()}/members/${id}`);
      expect(again.status).toBe(404);
      expectErrorBody(again.body, 404);
      const bad = await t.as(g.admin.token).delete(`${gBase()}/members/not-a-uuid`);
      expect(bad.status).toBe(400);
    });

    it('a member of another organisation is 404 here, not removable across organisations', async () => {
      const res = await t.as(g.admin.token).delete(`${gBase()}/members/${f.memberIdentity.VIEWER}`);
      expect(res.status).toBe(404);
      expect(await t.db.query('SELECT 1 FROM organisation_members WHERE identity = $1', [f.memberIdentity.VIEWER])).toHaveLength(1);
      const patch = await t.as(g.admin.token).patch(`${gBase()}/members/${f.memberIdentity.VIEWER}`).send({ role: 'ADMIN' });
      expect(patch.status).toBe(404);
    });
  });

  describe('GET /api/v1/memberships', () => {
    it('lists only the caller’s memberships, form A, sortable', async () => {
      const u = await freshUser();
      await addMembership(t, f.id, u.id, 'ADMIN');
      const other = await orgWithRoles(t, 'Another Org');
      await addMembership(t, other.id, u.id, 'VIEWER', 'NONE');
      const res = await t.as(u.token).get('/api/v1/memberships?sort=name,desc');
      expect(res.status).toBe(200);
      expect(res.body.totalElements).toBe(2);
      expect(res.body.sort).toEqual({ empty: false, sorted: true, unsorted: false });
      expect(res.body.content.map((m: { name: string }) => m.name)).toEqual(['Members Org', 'Another Org']);
      expect(res.body.content[1]).toMatchObject({ role: 'VIEWER', kubernetesRole: 'NONE', organisationIdentity: other.identity });
      const none = await t.as(f.outsider.token).get('/api/v1/memberships');
      expect(none.status).toBe(200);
      expect(none.body).toMatchObject({ content: [], empty: true, totalElements: 0 });
      expect((await t.http().get('/api/v1/memberships')).status).toBe(401);
      expect((await t.as(u.token).get('/api/v1/memberships?sort=identity,asc')).status).toBe(400);
    });
  });
});
