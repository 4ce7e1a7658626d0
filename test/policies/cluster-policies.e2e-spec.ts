import { clusterBody, clustersPath, createOrgFixture, OrgFixture } from '../clusters/cluster-fixtures';
import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';

/** Cluster policies: CRUD, roles, audit, write-time checks, scope, platform policies, enforcement on every change. */
describe('cluster policies', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  const policiesPath = (f: OrgFixture) => `/api/v1/orgs/${f.orgSlug}/cluster-policies`;
  const policy = (over: Record<string, unknown> = {}) => ({ name: 'ha', expression: 'object.highlyAvailable', message: 'must be HA', action: 'Deny', ...over });
  const createPolicy = async (f: OrgFixture, body: Record<string, unknown>) => {
    const res = await t.as(f.users.admin.token).post(policiesPath(f)).send(body);
    expect(res.status).toBe(200);
    return res.body as { identity: string; name: string };
  };
  const createCluster = async (f: OrgFixture, over: Record<string, unknown> = {}) => {
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, over));
    expect(res.status).toBe(200);
    return res.body as { identity: string; slug: { slugValue: string } };
  };
  const count = async (sql: string, params: unknown[] = []) => Number((await t.db.query(sql, params))[0].n);

  describe('writing policies', () => {
    it('creates, lists (form A), reads, updates and deletes a policy (ADMIN writes, VIEWER reads), audited with old and new', async () => {
      const f = await createOrgFixture(t);
      const viewer = t.as(f.users.viewer.token);
      expect((await t.as(f.users.member.token).post(policiesPath(f)).send(policy())).status).toBe(403);
      expect((await t.as(f.users.outsider.token).get(policiesPath(f))).status).toBe(403);
      const created = await createPolicy(f, policy({ environmentTypes: ['production'] }));
      expect(created).toMatchObject({ name: 'ha', scope: 'ORGANISATION', action: 'Deny', enabled: true, environments: null, environmentTypes: ['production'], createdBy: f.users.admin.username });

      const list = await viewer.get(`${policiesPath(f)}?size=10`);
      expect(list.status).toBe(200);
      expect(list.body).toMatchObject({ totalElements: 1, content: [{ identity: created.identity }], sort: { sorted: false } });
      expect((await viewer.get(`${policiesPath(f)}/${created.identity}`)).body.name).toBe('ha');
      expect((await viewer.patch(`${policiesPath(f)}/${created.identity}`).send({ enabled: false })).status).toBe(403);

      const patched = await t.as(f.users.admin.token).patch(`${policiesPath(f)}/${created.identity}`).send({ action: 'Warn', environments: ['production'] });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ action: 'Warn', environments: ['production'], environmentTypes: null });
      const [audit] = await t.db.query(`SELECT details FROM audit_events WHERE type = 'CLUSTER_POLICY_UPDATED' AND referenced_entity_identity = $1`, [created.identity]);
      expect(audit.details).toMatchObject({ action: { old: 'Deny', new: 'Warn' }, environmentTypes: { old: ['production'], new: null } });

      expect((await t.as(f.users.admin.token).delete(`${policiesPath(f)}/${created.identity}`)).status).toBe(204);
      expect((await viewer.get(`${policiesPath(f)}/${created.identity}`)).status).toBe(404);
      const types = (await t.db.query(`SELECT type FROM audit_events WHERE referenced_entity_identity = $1 ORDER BY id`, [created.identity])).map((r: { type: string }) => r.type);
      expect(types).toEqual(['CLUSTER_POLICY_CREATED', 'CLUSTER_POLICY_UPDATED', 'CLUSTER_POLICY_DELETED']);
    });

    it('refuses a taken name and the 51st policy with 409, and a name that is not slug-like with 400', async () => {
      const f = await createOrgFixture(t);
      await createPolicy(f, policy());
      const dup = await t.as(f.users.admin.token).post(policiesPath(f)).send(policy());
      expectErrorBody(dup.body, 409);
      expect(dup.body.message).toMatch(/already exists/);
      expectErrorBody((await t.as(f.users.admin.token).post(policiesPath(f)).send(policy({ name: 'Not A Slug' }))).body, 400);
      await t.db.query(
        `INSERT INTO cluster_policies (organisation_id, name, expression, message, action, created_by, created_at, modified_at)
         SELECT $1, 'p-' || g, 'true', 'm', 'Audit', 'seed', now(), now() FROM generate_series(1, 49) g`,
        [f.orgId],
      );
      const over = await t.as(f.users.admin.token).post(policiesPath(f)).send(policy({ name: 'one-too-many' }));
      expectErrorBody(over.body, 409);
      expect(over.body.message).toMatch(/already has 50 cluster policies/);
    });

    it('answers 400 naming the position of syntax and type errors, unknown fields, an expensive expression and an unsafe pattern', async () => {
      const f = await createOrgFixture(t);
      const post = (expression: string, extra: Record<string, unknown> = {}) => t.as(f.users.admin.token).post(policiesPath(f)).send(policy({ expression, ...extra }));
      const syntax = await post('object.highlyAvailable &&');
      expectErrorBody(syntax.body, 400);
      expect(syntax.body.errors).toEqual([{ field: 'expression', message: expect.stringMatching(/^expression: line 1, column 26: /) }]);
      const unknown = await post('object.highlyAvilable');
      expect(unknown.body.errors[0].message).toMatch(/^expression: line 1, column 8: No such key: highlyAvilable/);
      const types = await post('object.name + 1 == "x"');
      expect(types.body.errors[0].message).toMatch(/^expression: line 1, column 1: no such overload: string \+ int/);
      const multiline = await post('object.highlyAvailable &&\n  oldObject.verison == "1"');
      expect(multiline.body.errors[0].message).toMatch(/^expression: line 2, column 13: No such key: verison/);
      const notBool = await post('object.name');
      expect(notBool.body.errors[0].message).toMatch(/evaluates to string; it must evaluate to bool/);
      const msg = await post('true', { messageExpression: 'object.nodePools' });
      expect(msg.body.errors[0]).toMatchObject({ field: 'messageExpression', message: expect.stringMatching(/must evaluate to string/) });
      const costly = await post('object.nodePools.all(a, object.nodePools.all(b, a.labels.all(k, k.startsWith(b.name))))');
      expect(costly.body.errors[0].message).toMatch(/nested at most 2 deep/);
      const expensive = await post(
        'object.nodePools.all(a, object.nodePools.all(b, a.name.contains(b.name) && b.name.contains(a.name) && a.nodeSize.contains(b.nodeSize)))',
      );
      expect(expensive.body.errors[0].message).toMatch(/^expression: line 1, column 1: estimated cost \d+ exceeds the limit 100000/);
      expect((await post("object.name.matches('^(?=a)')")).body.errors[0].message).toMatch(/column 21: the pattern .* is not a valid RE2 regular expression/);
      expect((await post('object.name.matches(object.region)')).body.errors[0].message).toMatch(/string literal/);
      expect((await post("object.name.matches('^[a-z][a-z0-9-]*$')")).status).toBe(200);
      const both = await post('true', { name: 'both', environments: ['production'], environmentTypes: ['production'] });
      expect(both.body.errors[0].message).toMatch(/cannot both be set/);
      const noEnv = await post('true', { name: 'no-env', environments: ['nowhere'] });
      expect(noEnv.body.errors[0].message).toMatch(/no environment 'nowhere'/);
      expect((await post('x'.repeat(2049))).status).toBe(400);
      expect(await count(`SELECT count(*) AS n FROM cluster_policies WHERE organisation_id = $1`, [f.orgId])).toBe(1);
    });
  });

  describe('platform policies', () => {
    it('are written by platform administrators only, listed read-only to organisations and evaluated first', async () => {
      const f = await createOrgFixture(t);
      const body = policy({ name: 'platform-region', expression: "object.region == 'eu-west-1'", message: 'eu-west-1 only', environmentTypes: ['production'] });
      expect((await t.as(f.users.owner.token).post('/admin/v1/cluster-policies').send(body)).status).toBe(403);
      expectErrorBody((await t.admin().post('/admin/v1/cluster-policies').send({ ...body, environments: ['production'] })).body, 400);
      const created = await t.admin().post('/admin/v1/cluster-policies').send(body);
      expect(created.status).toBe(200);
      expect(created.body.scope).toBe('PLATFORM');
      try {
        await createPolicy(f, policy({ name: 'ha' }));
        const list = await t.as(f.users.viewer.token).get(policiesPath(f));
        expect(list.body.content.map((p: { name: string; scope: string }) => `${p.scope}:${p.name}`)).toEqual(['PLATFORM:platform-region', 'ORGANISATION:ha']);
        expect((await t.as(f.users.admin.token).patch(`${policiesPath(f)}/${created.body.identity}`).send({ enabled: false })).status).toBe(403);
        expect((await t.as(f.users.owner.token).delete(`${policiesPath(f)}/${created.body.identity}`)).status).toBe(403);

        const denied = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f));
        expectErrorBody(denied.body, 400);
        expect(denied.body.errors).toEqual([
          { field: 'platformPolicies.platform-region', message: 'platform policy platform-region: eu-west-1 only' },
          { field: 'policies.ha', message: 'policy ha: must be HA' },
        ]);
        expect(denied.body.message).toMatch(/denied by 2 cluster policies/);
        const ok = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { region: 'eu-west-1', enableHighAvailability: true }));
        expect(ok.status).toBe(200);
      } finally {
        expect((await t.admin().delete(`/admin/v1/cluster-policies/${created.body.identity}`)).status).toBe(204);
      }
      const types = (await t.db.query(`SELECT type FROM audit_events WHERE referenced_entity_identity = $1 ORDER BY id`, [created.body.identity])).map((r: { type: string }) => r.type);
      expect(types).toEqual(['CLUSTER_POLICY_CREATED', 'CLUSTER_POLICY_DELETED']);
    });
  });

  describe('scope', () => {
    it('applies a policy only to the environments or environment types it names', async () => {
      const f = await createOrgFixture(t);
      await t.db.query(`INSERT INTO environments (organisation_id, slug, name, type, created_at, modified_at) VALUES ($1, 'staging', 'Staging', 'staging', now(), now())`, [f.orgId]);
      const byType = await createPolicy(f, policy({ name: 'staging-ha', environmentTypes: ['staging'] }));
      expect((await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'a' }))).status).toBe(200);
      const staging = `/api/v1/orgs/${f.orgSlug}/clusters/staging`;
      expect((await t.as(f.users.member.token).post(staging).send(clusterBody(f, { name: 'b' }))).status).toBe(400);
      await t.as(f.users.admin.token).patch(`${policiesPath(f)}/${byType.identity}`).send({ environments: ['production'] });
      expect((await t.as(f.users.member.token).post(staging).send(clusterBody(f, { name: 'c' }))).status).toBe(200);
      expect((await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'd' }))).status).toBe(400);
      await t.as(f.users.admin.token).patch(`${policiesPath(f)}/${byType.identity}`).send({ enabled: false });
      expect((await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'e' }))).status).toBe(200);
    });
  });

  describe('enforcement of each action on each change', () => {
    type Op = { name: string; operation: string; resource: string; run: (f: OrgFixture, c: { identity: string; slug: { slugValue: string } }) => Promise<{ status: number; headers: Record<string, unknown>; body: any }>; written: (f: OrgFixture, id: string) => Promise<boolean> };
    const clusterPath = (f: OrgFixture, slug: string) => `${clustersPath(f)}/${slug}`;
    const ops: Op[] = [
      {
        name: 'cluster create',
        operation: 'CREATE',
        resource: 'clusters',
        run: (f) => t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'created' })),
        written: async (f) => (await count(`SELECT count(*) AS n FROM clusters WHERE organisation_id = $1 AND slug = 'created'`, [f.orgId])) === 1,
      },
      {
        name: 'cluster update',
        operation: 'UPDATE',
        resource: 'clusters',
        run: (f, c) => t.as(f.users.member.token).patch(clusterPath(f, c.slug.slugValue)).send({ description: 'changed' }),
        written: async (_f, id) => (await count(`SELECT count(*) AS n FROM clusters WHERE identity = $1 AND description = 'changed'`, [id])) === 1,
      },
      {
        name: 'desired status change',
        operation: 'UPDATE',
        resource: 'clusters',
        run: (f, c) => t.as(f.users.member.token).patch(clusterPath(f, c.slug.slugValue)).send({ status: 'stopping' }),
        written: async (_f, id) => (await count(`SELECT count(*) AS n FROM clusters WHERE identity = $1 AND desired_status = 'stopping'`, [id])) === 1,
      },
      {
        name: 'delete by PATCH',
        operation: 'DELETE',
        resource: 'clusters',
        run: (f, c) => t.as(f.users.member.token).patch(clusterPath(f, c.slug.slugValue)).send({ status: 'deleting' }),
        written: async (_f, id) => (await count(`SELECT count(*) AS n FROM clusters WHERE identity = $1 AND desired_status = 'deleting'`, [id])) === 1,
      },
      {
        name: 'delete by DELETE',
        operation: 'DELETE',
        resource: 'clusters',
        run: (f, c) => t.as(f.users.member.token).delete(clusterPath(f, c.slug.slugValue)),
        written: async (_f, id) => (await count(`SELECT count(*) AS n FROM clusters WHERE identity = $1 AND desired_status = 'deleting'`, [id])) === 1,
      },
      {
        name: 'node pool create',
        operation: 'UPDATE',
        resource: 'nodePools',
        run: (f, c) => t.as(f.users.member.token).post(`${clusterPath(f, c.slug.slugValue)}/pools`).send({ name: 'extra', nodeSize: 'm5.large', minSize: 1, maxSize: 2 }),
        written: async (_f, id) => (await count(`SELECT count(*) AS n FROM cluster_node_pools p JOIN clusters c ON c.id = p.cluster_id WHERE c.identity = $1 AND p.name = 'extra'`, [id])) === 1,
      },
      {
        name: 'node pool update',
        operation: 'UPDATE',
        resource: 'nodePools',
        run: async (f, c) => {
          const [pool] = await t.db.query(`SELECT p.identity FROM cluster_node_pools p JOIN clusters c ON c.id = p.cluster_id WHERE c.identity = $1`, [c.identity]);
          return t.as(f.users.member.token).put(`${clusterPath(f, c.slug.slugValue)}/pools/${pool.identity}`).send({ nodeSize: 'm5.large', minSize: 3, maxSize: 5 });
        },
        written: async (_f, id) => (await count(`SELECT count(*) AS n FROM cluster_node_pools p JOIN clusters c ON c.id = p.cluster_id WHERE c.identity = $1 AND p.min_size = 3`, [id])) === 1,
      },
      {
        name: 'node pool delete',
        operation: 'UPDATE',
        resource: 'nodePools',
        run: async (f, c) => {
          const [pool] = await t.db.query(`SELECT p.identity FROM cluster_node_pools p JOIN clusters c ON c.id = p.cluster_id WHERE c.identity = $1`, [c.identity]);
          return t.as(f.users.member.token).delete(`${clusterPath(f, c.slug.slugValue)}/pools/${pool.identity}`);
        },
        written: async (_f, id) => (await count(`SELECT count(*) AS n FROM cluster_node_pools p JOIN clusters c ON c.id = p.cluster_id WHERE c.identity = $1`, [id])) === 0,
      },
      {
        name: 'scheduled upgrade (admin)',
        operation: 'UPDATE',
        resource: 'scheduledClusterUpgrades',
        run: (_f, c) =>
          t.admin().post('/admin/v1/scheduled-cluster-upgrades').send({
            clusterIdentity: c.identity,
            toClusterVersion: '1.31.6',
            windowStart: '2030-01-01T00:00:00Z',
            windowEnd: '2030-01-01T04:00:00Z',
            ignoreMaintenanceSchedule: true,
          }),
        written: async (_f, id) => (await count(`SELECT count(*) AS n FROM scheduled_cluster_upgrades u JOIN clusters c ON c.id = u.cluster_id WHERE c.identity = $1`, [id])) === 1,
      },
    ];

    for (const op of ops) {
      for (const action of ['Deny', 'Warn', 'Audit'] as const) {
        it(`${action} on ${op.name}`, async () => {
          const f = await createOrgFixture(t);
          const c = await createCluster(f);
          // Settled and running, so every change below is allowed by the state machine.
          await t.db.query(`UPDATE clusters SET status = 'started', desired_status = NULL, provision_status = 'DONE' WHERE identity = $1`, [c.identity]);
          // Fails exactly for this operation on this resource, and names the version the cluster will have.
          const expression = `!(request.operation == '${op.operation}' && request.resource == '${op.resource}')`;
          const p = await createPolicy(f, {
            name: 'guard',
            expression,
            message: 'not now',
            messageExpression: `'not ' + request.operation + ' ' + request.resource + ' of ' + object.name + ' at ' + object.version + ' by ' + request.user.username`,
            action,
          });
          const res = await op.run(f, c);
          const user = op.name.includes('admin') ? 'admin' : f.users.member.username;
          const version = op.name.includes('upgrade') ? '1.31.6' : '1.31.5';
          const name = op.name === 'cluster create' ? 'created' : 'web';
          const text = `policy guard: not ${op.operation} ${op.resource} of ${name} at ${version} by ${user}`;
          if (action === 'Deny') {
            expectErrorBody(res.body, 400);
            expect(res.body.errors).toEqual([{ field: 'policies.guard', message: text }]);
            expect(await op.written(f, c.identity)).toBe(false);
            expect(await count(`SELECT count(*) AS n FROM audit_events WHERE organisation_id = $1 AND type <> 'CLUSTER_CREATED' AND type NOT LIKE 'CLUSTER_POLICY_%'`, [f.orgId])).toBe(0);
          } else {
            expect(res.status).toBeLessThan(300);
            expect(await op.written(f, c.identity)).toBe(true);
            const warnings = ([] as string[]).concat((res.headers.warning as string | string[] | undefined) ?? []);
            const violations = await t.db.query(`SELECT details, actor_username FROM audit_events WHERE type = 'CLUSTER_POLICY_VIOLATED' AND organisation_id = $1`, [f.orgId]);
            if (action === 'Warn') {
              expect(warnings).toEqual([`299 - ${JSON.stringify(text)}`]);
              expect(violations).toHaveLength(0);
            } else {
              expect(warnings).toEqual([]);
              expect(violations).toHaveLength(1);
              expect(violations[0].details).toMatchObject({ policy: { new: 'guard' }, action: { new: 'Audit' }, message: { new: text.replace('policy guard: ', '') }, operation: { new: op.operation } });
              const [activity] = await t.db.query(`SELECT message FROM activity_events WHERE type = 'CLUSTER_POLICY_VIOLATED' AND organisation_id = $1`, [f.orgId]);
              expect(activity.message).toMatch(/violates policy guard/);
            }
          }
          void p;
        });
      }
    }

    it('never blocks the system (or anyone) from finishing a deletion already under way', async () => {
      const f = await createOrgFixture(t);
      const c = await createCluster(f);
      await t.db.query(`UPDATE clusters SET status = 'started', desired_status = NULL, provision_status = 'DONE' WHERE identity = $1`, [c.identity]);
      await t.as(f.users.member.token).patch(`${clustersPath(f)}/web`).send({ status: 'deleting' });
      await createPolicy(f, policy({ name: 'deny-all', expression: 'false', message: 'no' }));
      const again = await t.as(f.users.member.token).patch(`${clustersPath(f)}/web`).send({ status: 'deleting' });
      expect(again.status).toBe(200);
    });

    it('emits the CLUSTER_POLICY_VIOLATED webhook event for an Audit finding', async () => {
      const f = await createOrgFixture(t);
      await t.db.query(
        `INSERT INTO webhook_subscriptions (identity, organisation_id, url, description, event_types, enabled, secret_ciphertext, created_by, created_at, modified_at)
         VALUES (gen_random_uuid(), $1, 'https://hooks.example.com/x', '', ARRAY['CLUSTER_POLICY_VIOLATED'], true, 'x', 'seed', now(), now())`,
        [f.orgId],
      );
      await createPolicy(f, policy({ name: 'audit-ha', action: 'Audit' }));
      await createCluster(f);
      const events = await t.db.query(`SELECT type, subject, data FROM webhook_events WHERE organisation_id = $1`, [f.orgId]);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ type: 'CLUSTER_POLICY_VIOLATED', subject: 'clusters/production/web', data: { details: { policy: { new: 'audit-ha' } } } });
    });
  });

  describe('oldObject rules', () => {
    it('refuses a version downgrade and the removal of deleteProtection in production', async () => {
      const f = await createOrgFixture(t);
      await createPolicy(f, { name: 'no-downgrade', expression: 'oldObject == null || semverCompare(object.version, oldObject.version) >= 0', message: 'no downgrade', action: 'Deny' });
      await createPolicy(f, {
        name: 'keep-protection',
        expression: 'oldObject == null || !oldObject.deleteProtection || object.deleteProtection',
        message: 'keep deleteProtection',
        action: 'Deny',
        environmentTypes: ['production'],
      });
      const c = await createCluster(f);
      await t.db.query(`UPDATE clusters SET status = 'started', desired_status = NULL, provision_status = 'DONE' WHERE identity = $1`, [c.identity]);
      const path = `${clustersPath(f)}/web`;
      const member = t.as(f.users.member.token);
      const down = await member.patch(path).send({ version: '1.31.4' });
      expect(down.body.errors).toEqual([{ field: 'policies.no-downgrade', message: 'policy no-downgrade: no downgrade' }]);
      expect((await member.patch(path).send({ version: '1.31.6' })).status).toBe(200);
      expect((await member.patch(path).send({ deleteProtection: true })).status).toBe(200);
      const removed = await member.patch(path).send({ deleteProtection: false });
      expect(removed.body.errors).toEqual([{ field: 'policies.keep-protection', message: 'policy keep-protection: keep deleteProtection' }]);
      const [row] = await t.db.query(`SELECT version, delete_protection FROM clusters WHERE identity = $1`, [c.identity]);
      expect(row).toEqual({ version: '1.31.6', delete_protection: true });
    });
  });
});
