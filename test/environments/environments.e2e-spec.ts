import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { createOrgWithRoles, insertCloudAccount, insertCluster, OrgFixture } from './fixtures';

const ENV_KEYS = [
  'createdAt',
  'deletedAt',
  'description',
  'id',
  'identity',
  'modifiedAt',
  'name',
  'organisationSlug',
  'purpose',
  'slug',
  'totalClusters',
  'totalCpu',
  'totalMemory',
  'type',
].sort();

describe('environments', () => {
  let t: TestApp;
  let org: OrgFixture;
  let base: string;
  let member: ReturnType<TestApp['as']>;

  beforeAll(async () => {
    t = await startTestApp();
    org = await createOrgWithRoles(t, 'envorg');
    base = `/api/v1/orgs/${org.slug}/environments`;
    member = t.as(org.users.MEMBER.token);
  });
  afterAll(() => t.close());

  const fieldsOf = (body: { errors?: { field: string }[] }) => (body.errors ?? []).map((e) => e.field).sort();

  it('creates an environment: exact response shape, slug from the name, audit and activity rows', async () => {
    const res = await member.post(base).send({ name: 'Production EU', description: 'd', purpose: 'p', type: 'production' });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(ENV_KEYS);
    expect(res.body).toMatchObject({
      name: 'Production EU',
      slug: { slugValue: 'production-eu' },
      organisationSlug: { slugValue: 'envorg' },
      description: 'd',
      purpose: 'p',
      type: 'production',
      deletedAt: null,
      totalClusters: null,
      totalCpu: null,
      totalMemory: null,
    });
    expect(typeof res.body.id).toBe('number');
    expect(res.body.identity).toMatch(/^[0-9a-f-]{36}$/);
    const audit = await t.db.query(
      `SELECT type, environment_id, environment_slug, organisation_slug, actor_username, details FROM audit_events WHERE referenced_entity_identity = $1`,
      [res.body.identity],
    );
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      type: 'ENVIRONMENT_CREATED',
      environment_id: res.body.id,
      environment_slug: 'production-eu',
      organisation_slug: 'envorg',
      actor_username: org.users.MEMBER.username,
    });
    expect(audit[0].details.name).toEqual({ old: null, new: 'Production EU' });
    const activity = await t.db.query(`SELECT message FROM activity_events WHERE organisation_id = $1 AND type = 'ENVIRONMENT_CREATED'`, [
      org.id,
    ]);
    expect(activity.map((a: { message: string }) => a.message)).toContain(`${org.users.MEMBER.username} created environment production-eu`);
  });

  it('enforces every bound at and just past its limit, naming the field', async () => {
    const ok = await member.post(base).send({ name: 'abc', description: 'x'.repeat(500), purpose: 'y'.repeat(255), type: 'demo' });
    expect(ok.status).toBe(200);
    const ok25 = await member.post(base).send({ name: 'n'.repeat(25) });
    expect(ok25.status).toBe(200);
    expect(ok25.body.type).toBeNull();

    for (const [body, field] of [
      [{ name: 'ab' }, 'name'],
      [{ name: 'n'.repeat(26) }, 'name'],
      [{}, 'name'],
      [{ name: 123 }, 'name'],
      [{ name: 'okname', description: 'x'.repeat(501) }, 'description'],
      [{ name: 'okname', purpose: 'y'.repeat(256) }, 'purpose'],
      [{ name: 'okname', type: 'prod' }, 'type'],
      [{ name: 'okname', colour: 'red' }, 'colour'],
    ] as [Record<string, unknown>, string][]) {
      const res = await member.post(`${base}?fieldValidation=Strict`).send(body);
      expect(res.status).toBe(400);
      expectErrorBody(res.body, 400);
      expect(fieldsOf(res.body)).toContain(field);
    }
    const all = await member.post(base).send({ name: 'a', description: 'x'.repeat(501), purpose: 'y'.repeat(256), type: 'nope' });
    expect(all.status).toBe(400);
    expect(fieldsOf(all.body)).toEqual(['description', 'name', 'purpose', 'type']);
    const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM environments WHERE name = 'okname'`);
    expect(n).toBe(0);
  });

  it('accepts every environment type', async () => {
    for (const type of ['production', 'staging', 'development', 'demo', 'other']) {
      const res = await member.post(base).send({ name: `type ${type}`, type });
      expect(res.status).toBe(200);
      expect(res.body.type).toBe(type);
    }
  });

  it('refuses a slug already taken in the organisation (409), allows it in another organisation', async () => {
    await member.post(base).send({ name: 'staging' }).expect(200);
    const dup = await member.post(base).send({ name: 'Staging!' });
    expect(dup.status).toBe(409);
    expectErrorBody(dup.body, 409);
    expect(dup.body.message).toMatch(/staging/);
    const other = await createOrgWithRoles(t, 'envorg2');
    const res = await t.as(other.users.MEMBER.token).post(`/api/v1/orgs/${other.slug}/environments`).send({ name: 'staging' });
    expect(res.status).toBe(200);
    expect(res.body.slug).toEqual({ slugValue: 'staging' });
  });

  it('refuses names whose slug would be empty or collide with a route', async () => {
    for (const name of ['!!!!', 'count', 'Types']) {
      const res = await member.post(base).send({ name });
      expect(res.status).toBe(400);
      expect(fieldsOf(res.body)).toEqual(['name']);
    }
  });

  it('gets one, counts, 404s unknown slugs', async () => {
    const created = await member.post(base).send({ name: 'getme' }).expect(200);
    const got = await member.get(`${base}/getme`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created.body);
    const missing = await member.get(`${base}/nope-nope`);
    expect(missing.status).toBe(404);
    expectErrorBody(missing.body, 404);
    const count = await member.get(`${base}/count`);
    expect(count.status).toBe(200);
    const [{ n }] = await t.db.query('SELECT count(*)::int AS n FROM environments WHERE organisation_id = $1 AND deleted_at IS NULL', [org.id]);
    expect(count.body).toEqual({ count: n });
  });

  it('lists in page form A, with compute only when show-compute=true', async () => {
    const res = await member.get(`${base}?size=2&sort=name,desc`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ size: 2, number: 0, first: true, sort: { sorted: true, unsorted: false, empty: false } });
    expect(res.body.pageable.sort).toEqual({ sorted: true, unsorted: false, empty: false });
    expect(res.body.content).toHaveLength(2);
    expect(res.body.content[0].name >= res.body.content[1].name).toBe(true);
    expect(res.body.content[0].totalClusters).toBeNull();

    const env = await member.post(base).send({ name: 'computed' }).expect(200);
    const account = await insertCloudAccount(t, org.id);
    const clusterId = await insertCluster(t, { orgId: org.id, environmentId: env.body.id, cloudAccountId: account.id, slug: 'c1' });
    await t.db.query(
      `INSERT INTO cluster_node_pools (cluster_id, name, node_size, min_size, max_size) VALUES ($1, 'pool', 'm5.xlarge', 3, 5)`,
      [clusterId],
    );
    await insertCluster(t, { orgId: org.id, environmentId: env.body.id, cloudAccountId: account.id, slug: 'gone', deletedAt: new Date() });
    const list = await member.get(`${base}?show-compute=true&size=500`);
    const computed = list.body.content.find((e: { name: string }) => e.name === 'computed');
    expect(computed).toMatchObject({ totalClusters: 1, totalCpu: 12, totalMemory: 49152 });
    const empty = list.body.content.find((e: { name: string }) => e.name === 'getme');
    expect(empty).toMatchObject({ totalClusters: 0, totalCpu: 0, totalMemory: 0 });
    const one = await member.get(`${base}/computed?show-compute=true`);
    expect(one.body).toMatchObject({ totalClusters: 1, totalCpu: 12, totalMemory: 49152 });
    const plain = await member.get(`${base}/computed`);
    expect(plain.body.totalClusters).toBeNull();

    const badSort = await member.get(`${base}?sort=colour,asc`);
    expect(badSort.status).toBe(400);
    expect(fieldsOf(badSort.body)).toEqual(['sort']);
    const badFlag = await member.get(`${base}?show-compute=yes`);
    expect(badFlag.status).toBe(400);
    expect(fieldsOf(badFlag.body)).toEqual(['show-compute']);
  });

  it('updates within the same bounds; renaming keeps the slug; null clears optional fields', async () => {
    await member.post(base).send({ name: 'patchme', description: 'old', type: 'demo' }).expect(200);
    const res = await member.patch(`${base}/patchme`).send({ name: 'Patched Name', description: null, purpose: 'p'.repeat(255) });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'Patched Name', slug: { slugValue: 'patchme' }, description: null, type: 'demo' });
    const audit = await t.db.query(`SELECT details FROM audit_events WHERE type = 'ENVIRONMENT_UPDATED' AND environment_slug = 'patchme'`);
    expect(audit).toHaveLength(1);
    expect(audit[0].details).toEqual({
      name: { old: 'patchme', new: 'Patched Name' },
      description: { old: 'old', new: null },
      purpose: { old: null, new: 'p'.repeat(255) },
    });
    await member.patch(`${base}/patchme`).send({ name: 'abc', description: 'x'.repeat(500) }).expect(200);
    await member.patch(`${base}/patchme`).send({ name: 'n'.repeat(25) }).expect(200);
    for (const [body, field] of [
      [{ name: 'ab' }, 'name'],
      [{ name: 'n'.repeat(26) }, 'name'],
      [{ name: null }, 'name'],
      [{ description: 'x'.repeat(501) }, 'description'],
      [{ purpose: 'y'.repeat(256) }, 'purpose'],
      [{ type: 'prod' }, 'type'],
      [{ slug: 'x' }, 'slug'],
    ] as [Record<string, unknown>, string][]) {
      const bad = await member.patch(`${base}/patchme?fieldValidation=Strict`).send(body);
      expect(bad.status).toBe(400);
      expect(fieldsOf(bad.body)).toContain(field);
    }
    expect((await member.patch(`${base}/nope-nope`).send({ name: 'abc' })).status).toBe(404);
  });

  it('refuses to delete an environment holding clusters (409), deletes it softly once they are deleted', async () => {
    const env = await member.post(base).send({ name: 'doomed' }).expect(200);
    const account = await insertCloudAccount(t, org.id);
    const clusterId = await insertCluster(t, { orgId: org.id, environmentId: env.body.id, cloudAccountId: account.id, slug: 'web' });
    const refused = await member.delete(`${base}/doomed`);
    expect(refused.status).toBe(409);
    expectErrorBody(refused.body, 409);
    expect(refused.body.message).toMatch(/1 cluster/);
    await t.db.query(`UPDATE clusters SET deleted_at = now(), status = 'deleted' WHERE id = $1`, [clusterId]);
    const del = await member.delete(`${base}/doomed`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    const [row] = await t.db.query('SELECT deleted_at FROM environments WHERE id = $1', [env.body.id]);
    expect(row.deleted_at).toBeInstanceOf(Date);
    expect((await member.get(`${base}/doomed`)).status).toBe(404);
    expect((await member.delete(`${base}/doomed`)).status).toBe(404);
    const list = await member.get(`${base}?size=500`);
    expect(list.body.content.map((e: { name: string }) => e.name)).not.toContain('doomed');
    const audit = await t.db.query(`SELECT details FROM audit_events WHERE type = 'ENVIRONMENT_DELETED' AND environment_id = $1`, [env.body.id]);
    expect(audit).toHaveLength(1);
    expect(audit[0].details.name).toEqual({ old: 'doomed', new: null });
    // The slug is free again.
    const again = await member.post(base).send({ name: 'doomed' });
    expect(again.status).toBe(200);
    expect(again.body.id).not.toBe(env.body.id);
  });

  it('documents the operations with their bounds in the OpenAPI document', async () => {
    const doc = (await t.http().get('/v3/api-docs')).body;
    const root = '/api/v1/orgs/{organisationSlug}/environments';
    expect(Object.keys(doc.paths[root]).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths[`${root}/{environmentSlug}`]).sort()).toEqual(['delete', 'get', 'patch']);
    expect(Object.keys(doc.paths[`${root}/{environmentSlug}/members/{memberIdentity}`]).sort()).toEqual(['delete', 'post']);
    expect(doc.paths[`${root}/count`].get).toBeDefined();
    expect(doc.paths[`${root}/{environmentSlug}/members`].get).toBeDefined();
    expect(doc.paths[root].get.parameters.map((p: { name: string }) => p.name)).toContain('show-compute');
    const create = doc.components.schemas.CreateEnvironmentRequest;
    expect(create.required).toEqual(['name']);
    expect(create.properties.name).toMatchObject({ minLength: 3, maxLength: 25 });
    expect(create.properties.description.maxLength).toBe(500);
    expect(create.properties.purpose.maxLength).toBe(255);
    expect(create.properties.type.enum).toEqual(['production', 'staging', 'development', 'demo', 'other']);
    expect(doc.paths[`${root}/{environmentSlug}`].delete.responses['409']).toBeDefined();
  });

  describe('members', () => {
    let env: string;
    beforeAll(async () => {
      await member.post(base).send({ name: 'team-env' }).expect(200);
      env = `${base}/team-env/members`;
    });

    it('lists every organisation member with the organisation kubernetesRole (page form A)', async () => {
      const res = await member.get(env);
      expect(res.status).toBe(200);
      expect(res.body.sort).toEqual({ sorted: false, unsorted: true, empty: true });
      expect(res.body.totalElements).toBe(4);
      const viewer = res.body.content.find((m: { memberIdentity: string }) => m.memberIdentity === org.memberIdentity.VIEWER);
      expect(Object.keys(viewer).sort()).toEqual(['createdAt', 'email', 'kubernetesRole', 'memberIdentity']);
      expect(viewer).toMatchObject({ email: org.users.VIEWER.email, kubernetesRole: 'VIEW' });
      const sorted = await member.get(`${env}?sort=email,desc`);
      const emails = sorted.body.content.map((m: { email: string }) => m.email);
      expect(emails).toEqual([...emails].sort().reverse());
    });

    it('overrides a member role, answers the member array, and reverts on delete', async () => {
      const admin = t.as(org.users.ADMIN.token);
      const target = org.memberIdentity.VIEWER;
      const res = await admin.post(`${env}/${target}`).send({ kubernetesRole: 'CLUSTER_ADMIN' });
      expect(res.status).toBe(200);
      expect(Array.isArray(res.body)).toBe(true);
      expect(res.body).toHaveLength(4);
      const entry = res.body.find((m: { memberIdentity: string }) => m.memberIdentity === target);
      expect(entry).toMatchObject({ kubernetesRole: 'CLUSTER_ADMIN', email: org.users.VIEWER.email });
      // Only this environment changes.
      await member.post(base).send({ name: 'other-env' }).expect(200);
      const other = await member.get(`${base}/other-env/members`);
      expect(other.body.content.find((m: { memberIdentity: string }) => m.memberIdentity === target).kubernetesRole).toBe('VIEW');

      const update = await admin.post(`${env}/${target}`).send({ kubernetesRole: 'NONE' });
      expect(update.body.find((m: { memberIdentity: string }) => m.memberIdentity === target).kubernetesRole).toBe('NONE');
      const [{ n }] = await t.db.query('SELECT count(*)::int AS n FROM environment_members');
      expect(n).toBe(1);

      const del = await admin.delete(`${env}/${target}`);
      expect(del.status).toBe(204);
      const after = await member.get(env);
      expect(after.body.content.find((m: { memberIdentity: string }) => m.memberIdentity === target).kubernetesRole).toBe('VIEW');
      const again = await admin.delete(`${env}/${target}`);
      expect(again.status).toBe(404);
      expectErrorBody(again.body, 404);

      const audit = await t.db.query(
        `SELECT type, environment_slug, details FROM audit_events WHERE referenced_entity_identity = $1 ORDER BY id`,
        [target],
      );
      expect(audit.map((a: { type: string }) => a.type)).toEqual([
        'ENVIRONMENT_MEMBER_UPDATED',
        'ENVIRONMENT_MEMBER_UPDATED',
        'ENVIRONMENT_MEMBER_REMOVED',
      ]);
      expect(audit[0].environment_slug).toBe('team-env');
      expect(audit[0].details.kubernetesRole).toEqual({ old: 'VIEW', new: 'CLUSTER_ADMIN' });
      expect(audit[2].details.kubernetesRole).toEqual({ old: 'NONE', new: 'VIEW' });
    });

    it('re-posting a member with the role it already has writes nothing: no audit row, activity entry or webhook event', async () => {
      const admin = t.as(org.users.ADMIN.token);
      const target = org.memberIdentity.MEMBER;
      // A subscription to every event, so a webhook event would be recorded if one were emitted.
      const hook = await admin.post(`/api/v1/orgs/${org.slug}/webhooks`).send({ url: 'http://127.0.0.1:9/env-members', eventTypes: ['*'] });
      expect(hook.status).toBe(200);
      expect((await admin.post(`${env}/${target}`).send({ kubernetesRole: 'EDIT' })).status).toBe(200);
      const count = async () => {
        const [row] = await t.db.query(
          `SELECT (SELECT count(*)::int FROM audit_events WHERE organisation_id = $1) AS audit,
                  (SELECT count(*)::int FROM activity_events WHERE organisation_id = $1) AS activity,
                  (SELECT count(*)::int FROM webhook_events WHERE organisation_id = $1) AS events`,
          [org.id],
        );
        return row;
      };
      const before = await count();
      expect(before.events).toBeGreaterThan(0);
      for (let i = 0; i < 3; i++) {
        const again = await admin.post(`${env}/${target}`).send({ kubernetesRole: 'EDIT' });
        expect(again.status).toBe(200);
        expect(again.body.find((m: { memberIdentity: string }) => m.memberIdentity === target).kubernetesRole).toBe('EDIT');
      }
      expect(await count()).toEqual(before);
      // Pinning the role a member already inherits is a change (the override now exists): recorded once, as that.
      const viewer = org.memberIdentity.VIEWER;
      expect((await admin.post(`${env}/${viewer}`).send({ kubernetesRole: 'VIEW' })).status).toBe(200);
      const [pinned] = await t.db.query(`SELECT details FROM audit_events WHERE referenced_entity_identity = $1 ORDER BY id DESC LIMIT 1`, [viewer]);
      expect(pinned.details).toEqual({ override: { old: null, new: 'VIEW' } });
      await admin.delete(`${env}/${viewer}`).expect(204);
      await admin.delete(`${env}/${target}`).expect(204);
      await admin.delete(`/api/v1/orgs/${org.slug}/webhooks/${hook.body.identity}`).expect(204);
    });

    it('validates the member and the role', async () => {
      const admin = t.as(org.users.ADMIN.token);
      const unknown = await admin.post(`${env}/00000000-0000-4000-8000-000000000000`).send({ kubernetesRole: 'EDIT' });
      expect(unknown.status).toBe(404);
      const other = await createOrgWithRoles(t, 'envorg3');
      const foreign = await admin.post(`${env}/${other.memberIdentity.OWNER}`).send({ kubernetesRole: 'EDIT' });
      expect(foreign.status).toBe(404);
      const badId = await admin.post(`${env}/not-a-uuid`).send({ kubernetesRole: 'EDIT' });
      expect(badId.status).toBe(400);
      expect(fieldsOf(badId.body)).toEqual(['memberIdentity']);
      for (const body of [{}, { kubernetesRole: 'ADMIN' }, { kubernetesRole: 'EDIT', extra: 1 }]) {
        const bad = await admin.post(`${env}/${org.memberIdentity.MEMBER}?fieldValidation=Strict`).send(body);
        expect(bad.status).toBe(400);
        expect(fieldsOf(bad.body).length).toBeGreaterThan(0);
      }
      const noEnv = await admin.post(`${base}/nope-nope/members/${org.memberIdentity.MEMBER}`).send({ kubernetesRole: 'EDIT' });
      expect(noEnv.status).toBe(404);
    });
  });

  describe('role matrix', () => {
    const cases: { name: string; call: (as: ReturnType<TestApp["as"]>, i: number) => Promise<{ status: number; body: Record<string, unknown> }>; least: string }[] = [
      { name: 'list', least: 'VIEWER', call: (as) => as.get(base) },
      { name: 'count', least: 'VIEWER', call: (as) => as.get(`${base}/count`) },
      { name: 'get', least: 'VIEWER', call: (as) => as.get(`${base}/matrix`) },
      { name: 'members', least: 'VIEWER', call: (as) => as.get(`${base}/matrix/members`) },
      { name: 'create', least: 'MEMBER', call: (as, i) => as.post(base).send({ name: `rolecreate ${i}` }) },
      { name: 'update', least: 'MEMBER', call: (as) => as.patch(`${base}/matrix`).send({ description: 'x' }) },
      { name: 'delete', least: 'MEMBER', call: (as, i) => as.delete(`${base}/matrix-${i}`) },
      { name: 'set member', least: 'ADMIN', call: (as) => as.post(`${base}/matrix/members/${org.memberIdentity.MEMBER}`).send({ kubernetesRole: 'EDIT' }) },
      { name: 'remove member', least: 'ADMIN', call: (as) => as.delete(`${base}/matrix/members/${org.memberIdentity.VIEWER}`) },
    ];
    const order = ['VIEWER', 'MEMBER', 'ADMIN', 'OWNER'];

    beforeAll(async () => {
      await member.post(base).send({ name: 'matrix' }).expect(200);
      for (let i = 0; i < 8; i++) await member.post(base).send({ name: `matrix-${i}` }).expect(200);
      await t.db.query(
        `INSERT INTO environment_members (environment_id, member_id, kubernetes_role, created_at, modified_at)
         SELECT e.id, m.id, 'EDIT', now(), now() FROM environments e, organisation_members m
          WHERE e.slug = 'matrix' AND e.organisation_id = $1 AND m.identity = $2`,
        [org.id, org.memberIdentity.VIEWER],
      );
    });

    it.each(cases.map((c) => [c.name, c] as const))('%s', async (_, c) => {
      let i = 0;
      for (const role of ['VIEWER', 'MEMBER', 'ADMIN', 'OWNER'] as const) {
        const res = await c.call(t.as(org.users[role].token), i++);
        const allowed = order.indexOf(role) >= order.indexOf(c.least);
        if (allowed) expect([200, 204]).toContain(res.status);
        else expect(res.status).toBe(403);
        if (c.name === 'remove member' && allowed) {
          // put the override back for the next allowed role
          await t.db.query(
            `INSERT INTO environment_members (environment_id, member_id, kubernetes_role, created_at, modified_at)
             SELECT e.id, m.id, 'EDIT', now(), now() FROM environments e, organisation_members m
              WHERE e.slug = 'matrix' AND e.organisation_id = $1 AND m.identity = $2 ON CONFLICT DO NOTHING`,
            [org.id, org.memberIdentity.VIEWER],
          );
        }
      }
      const outsider = await c.call(t.as(org.users.OUTSIDER.token), 7);
      expect(outsider.status).toBe(403);
      expectErrorBody(outsider.body as Record<string, unknown>, 403);
      const anon = await t.http().get(`${base}/count`);
      expect(anon.status).toBe(401);
    });

    it('unauthenticated calls are 401 on every route', async () => {
      for (const [method, path] of [
        ['get', base],
        ['post', base],
        ['get', `${base}/count`],
        ['get', `${base}/matrix`],
        ['patch', `${base}/matrix`],
        ['delete', `${base}/matrix`],
        ['get', `${base}/matrix/members`],
        ['post', `${base}/matrix/members/${org.memberIdentity.MEMBER}`],
        ['delete', `${base}/matrix/members/${org.memberIdentity.MEMBER}`],
      ] as const) {
        const res = await t.http()[method](path).send({});
        expect(res.status).toBe(401);
      }
    });
  });
});
