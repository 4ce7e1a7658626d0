import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { orgWithRoles, OrgFixture } from '../organisations/org-fixtures';
import { seedCluster, seedEnvironment } from '../observability/fixtures';

describe('audit events and activity feed (read endpoints)', () => {
  let t: TestApp;
  let f: OrgFixture;
  let other: OrgFixture;

  beforeAll(async () => {
    t = await startTestApp();
    f = await orgWithRoles(t, 'Audited Org');
    other = await orgWithRoles(t, 'Other Org');
    // Three changes a minute apart, so createdAt orders them.
    for (const name of ['First Rename', 'Second Rename', 'Third Rename']) {
      t.clock.advance(60_000);
      await t.as(f.admin.token).patch(`/api/v1/organisations/${f.slug}`).send({ organisationName: name }).expect(200);
    }
    // Cluster-scoped rows as later modules (and the reconciler) write them.
    const insert = (orgId: number, orgSlug: string, env: string, cluster: string, type: string, actor: string, actorId: number | null) =>
      t.db.query(
        `INSERT INTO audit_events (type, actor_id, actor_username, organisation_id, organisation_slug, environment_id, environment_slug,
                                   cluster_id, cluster_slug, cluster_node_pool_id, cluster_node_pool_name, cloud_account_name,
                                   referenced_entity_identity, details, created_at)
         VALUES ($1, $2, $3, $4, $5, 11, $6, 22, $7, 33, 'pool-a', 'acct', 'ref-1', $8, now() + interval '1 hour')`,
        [type, actorId, actor, orgId, orgSlug, env, cluster, JSON.stringify({ status: { old: 'new', new: 'provisioning' } })],
      );
    // The per-cluster list needs the cluster to exist (a deleted one counts): prod/web, and a deleted prod/api.
    const prod = await seedEnvironment(t, f.id, 'prod');
    await seedCluster(t, f.id, prod, 'web', { tenant: false });
    await seedCluster(t, f.id, prod, 'api', { tenant: false, deleted: true });
    await insert(f.id, f.slug, 'prod', 'web', 'CLUSTER_UPDATED', 'system', null);
    await insert(f.id, f.slug, 'prod', 'web', 'NODE_POOL_CREATED', f.member.username, f.member.id);
    await insert(f.id, f.slug, 'prod', 'api', 'CLUSTER_CREATED', f.member.username, f.member.id);
    await insert(f.id, f.slug, 'staging', 'web', 'CLUSTER_CREATED', f.member.username, f.member.id);
    await insert(other.id, other.slug, 'prod', 'web', 'CLUSTER_CREATED', other.owner.username, other.owner.id);
  });
  afterAll(async () => {
    t.clock.set(null);
    await t.close();
  });

  describe('GET /api/v1/orgs/{organisationSlug}/audit-events', () => {
    it('pages the organisation’s events in form B, newest first, with the spec’s fields', async () => {
      const res = await t.as(f.viewer.token).get(`/api/v1/orgs/${f.slug}/audit-events`);
      expect(res.status).toBe(200);
      expect(res.body.sort).toEqual([{ ascending: true, direction: 'ASC', ignoreCase: false, nullHandling: 'NATIVE', property: 'createdAt' }]);
      expect(res.body.pageable).toMatchObject({ pageNumber: 0, pageSize: 50, offset: 0, paged: true, unpaged: false, sort: res.body.sort });
      const [{ n }] = await t.db.query('SELECT count(*)::int AS n FROM audit_events WHERE organisation_id = $1', [f.id]);
      expect(res.body.totalElements).toBe(n);
      const times = res.body.content.map((e: { createdAt: string }) => Date.parse(e.createdAt));
      expect(times).toEqual([...times].sort((a, b) => a - b));

      const patch = res.body.content.find((e: { type: string; details: { name?: { new: string } } }) =>
        e.type === 'ORGANISATION_UPDATED' && e.details.name?.new === 'Third Rename');
      expect(patch).toEqual({
        actorId: f.admin.id,
        actorUsername: f.admin.username,
        cloudAccountName: null,
        clusterId: null,
        clusterNodePoolId: null,
        clusterNodePoolName: null,
        clusterSlug: null,
        createdAt: expect.any(String),
        customerId: f.id,
        customerSlug: f.slug,
        details: { name: { old: 'Second Rename', new: 'Third Rename' } },
        environmentId: null,
        environmentSlug: null,
        referencedEntityIdentity: f.identity,
        type: 'ORGANISATION_UPDATED',
      });
      const renames = res.body.content
        .filter((e: { type: string }) => e.type === 'ORGANISATION_UPDATED')
        .map((e: { details: { name: { new: string } } }) => e.details.name.new);
      expect(renames).toEqual(['First Rename', 'Second Rename', 'Third Rename']);
      expect(res.body.content.every((e: { customerId: number }) => e.customerId === f.id)).toBe(true);
    });

    it('sorts by createdAt asc and by type, pages, and refuses unknown properties', async () => {
      const asc = await t.as(f.viewer.token).get(`/api/v1/orgs/${f.slug}/audit-events?sort=createdAt,asc`);
      expect(asc.body.content[0].type).toBe('ORGANISATION_CREATED');
      const byType = await t.as(f.viewer.token).get(`/api/v1/orgs/${f.slug}/audit-events?sort=type,asc`);
      const types = byType.body.content.map((e: { type: string }) => e.type);
      expect(types).toEqual([...types].sort());
      const page = await t.as(f.viewer.token).get(`/api/v1/orgs/${f.slug}/audit-events?size=2&page=1`);
      expect(page.body).toMatchObject({ number: 1, size: 2, numberOfElements: 2, first: false });
      const bad = await t.as(f.viewer.token).get(`/api/v1/orgs/${f.slug}/audit-events?sort=details,asc`);
      expect(bad.status).toBe(400);
      expectErrorBody(bad.body, 400);
      expect(bad.body.errors[0].field).toBe('sort');
      const badSize = await t.as(f.viewer.token).get(`/api/v1/orgs/${f.slug}/audit-events?size=0`);
      expect(badSize.status).toBe(200);
      expect(badSize.body.size).toBe(50);
      const ci = await t.as(f.viewer.token).get(`/api/v1/orgs/${f.slug}/audit-events?sort=type,desc,ignorecase`);
      expect(ci.status).toBe(200);
      expect(ci.body.sort).toEqual([expect.objectContaining({ property: 'type', direction: 'DESC', ignoreCase: true })]);
    });
  });

  describe('GET /api/v1/orgs/{organisationSlug}/audit-events/{environmentSlug}/{cluster}', () => {
    it('returns only that cluster’s events of this organisation, without referencedEntityIdentity', async () => {
      const res = await t.as(f.viewer.token).get(`/api/v1/orgs/${f.slug}/audit-events/prod/web`);
      expect(res.status).toBe(200);
      expect(res.body.totalElements).toBe(2);
      expect(res.body.sort[0]).toMatchObject({ property: 'createdAt', direction: 'ASC' });
      for (const e of res.body.content) {
        expect(e).not.toHaveProperty('referencedEntityIdentity');
        expect(e).toMatchObject({ customerId: f.id, customerSlug: f.slug, environmentSlug: 'prod', clusterSlug: 'web' });
      }
      const sys = res.body.content.find((e: { type: string }) => e.type === 'CLUSTER_UPDATED');
      expect(sys).toEqual({
        actorId: null,
        actorUsername: 'system',
        cloudAccountName: 'acct',
        clusterId: 22,
        clusterNodePoolId: 33,
        clusterNodePoolName: 'pool-a',
        clusterSlug: 'web',
        createdAt: expect.any(String),
        customerId: f.id,
        customerSlug: f.slug,
        details: { status: { old: 'new', new: 'provisioning' } },
        environmentId: 11,
        environmentSlug: 'prod',
        type: 'CLUSTER_UPDATED',
      });
      const byType = await t.as(f.viewer.token).get(`/api/v1/orgs/${f.slug}/audit-events/prod/web?sort=type,asc`);
      expect(byType.body.content.map((e: { type: string }) => e.type)).toEqual(['CLUSTER_UPDATED', 'NODE_POOL_CREATED']);
    });

    it('an unknown cluster is 404, a deleted one still answers; a malformed slug is 400; outsiders 403', async () => {
      const unknown = await t.as(f.viewer.token).get(`/api/v1/orgs/${f.slug}/audit-events/prod/nothing`);
      expect(unknown.status).toBe(404);
      expectErrorBody(unknown.body, 404);
      expect((await t.as(f.viewer.token).get(`/api/v1/orgs/${f.slug}/audit-events/staging/web`)).status).toBe(404);
      const deleted = await t.as(f.viewer.token).get(`/api/v1/orgs/${f.slug}/audit-events/prod/api`);
      expect(deleted.status).toBe(200);
      expect(deleted.body.totalElements).toBe(1);
      const bad = await t.as(f.viewer.token).get(`/api/v1/orgs/${f.slug}/audit-events/prod/Bad%20Slug`);
      expect(bad.status).toBe(400);
      expect(bad.body.errors.map((e: { field: string }) => e.field)).toContain('cluster');
      const outsider = await t.as(other.owner.token).get(`/api/v1/orgs/${f.slug}/audit-events/prod/web`);
      expect(outsider.status).toBe(403);
    });
  });

  describe('GET /api/v1/organisations/{organisationSlug}/activity', () => {
    it('pages activity in form A, newest first, with message, type and actor', async () => {
      const res = await t.as(f.viewer.token).get(`/api/v1/organisations/${f.slug}/activity`);
      expect(res.status).toBe(200);
      expect(res.body.sort).toEqual({ empty: false, sorted: true, unsorted: false });
      expect(res.body.pageable.sort).toEqual(res.body.sort);
      expect(res.body.size).toBe(50);
      const [first, , , last] = res.body.content;
      expect(first).toEqual({
        createdAt: expect.any(String),
        message: `${f.admin.username} updated organisation ${f.slug}`,
        type: 'ORGANISATION_UPDATED',
        actor: { identity: f.admin.identity, username: f.admin.username },
      });
      expect(last).toEqual({
        createdAt: expect.any(String),
        message: `${f.owner.username} created organisation ${f.slug}`,
        type: 'ORGANISATION_CREATED',
        actor: { identity: f.owner.identity, username: f.owner.username },
      });
      expect(res.body.totalElements).toBe(4);
      const times = res.body.content.map((e: { createdAt: string }) => Date.parse(e.createdAt));
      expect(times).toEqual([...times].sort((a, b) => b - a));
    });

    it('shows background events with the system actor', async () => {
      await t.db.query(
        `INSERT INTO activity_events (organisation_id, type, message, actor_identity, actor_username, created_at)
         VALUES ($1, 'CLUSTER_PROVISIONED', 'system provisioned cluster prod/web', NULL, 'system', now() + interval '2 hours')`,
        [f.id],
      );
      const res = await t.as(f.member.token).get(`/api/v1/organisations/${f.slug}/activity?size=1`);
      expect(res.body.content).toEqual([
        { createdAt: expect.any(String), message: 'system provisioned cluster prod/web', type: 'CLUSTER_PROVISIONED', actor: { identity: null, username: 'system' } },
      ]);
      expect(res.body).toMatchObject({ size: 1, totalElements: 5, totalPages: 5, first: true, last: false });
    });

    it('sorts ascending on request and refuses unknown properties', async () => {
      const asc = await t.as(f.viewer.token).get(`/api/v1/organisations/${f.slug}/activity?sort=createdAt,asc`);
      expect(asc.body.content[0].type).toBe('ORGANISATION_CREATED');
      const bad = await t.as(f.viewer.token).get(`/api/v1/organisations/${f.slug}/activity?sort=message,asc`);
      expect(bad.status).toBe(400);
      expect(bad.body.errors[0].field).toBe('sort');
      const outsider = await t.as(other.owner.token).get(`/api/v1/organisations/${f.slug}/activity`);
      expect(outsider.status).toBe(403);
    });
  });
});
