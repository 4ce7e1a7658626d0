import { startTestApp, TestApp } from '../support/test-app';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, settle } from './cluster-fixtures';

/** The delete guards of other contexts see clusters created through the API and deleted by the reconciler. */
describe('delete guards of environments, cloud accounts and organisations with real clusters', () => {
  let t: TestApp;
  let f: OrgFixture;

  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
    expect((await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f))).status).toBe(200);
    await settle(t);
  });
  afterAll(() => t.close());

  it('refuses while the cluster lives, then follows its deletion (cloud account: 24 hours later)', async () => {
    const account = `/api/v1/orgs/${f.orgSlug}/cloud-accounts/${f.accountIdentity}`;
    const env = `/api/v1/orgs/${f.orgSlug}/environments/${f.envSlug}`;
    const [org] = await t.db.query(`SELECT identity FROM organisations WHERE id = $1`, [f.orgId]);
    const orgDelete = `/api/v1/organisations/${org.identity}`;

    expect((await t.as(f.users.admin.token).delete(account)).status).toBe(409);
    expect((await t.as(f.users.member.token).delete(env)).status).toBe(409);
    expect((await t.as(f.users.owner.token).delete(orgDelete)).status).toBe(409);

    expect((await t.as(f.users.member.token).delete(`${clustersPath(f)}/web`)).status).toBe(200);
    await settle(t);
    const tenants = await t.db.query(`SELECT count(*)::int AS n FROM observability_tenants WHERE organisation_id = $1 AND deleted_at IS NULL`, [f.orgId]);
    expect(tenants[0].n).toBe(0);

    const recent = await t.as(f.users.admin.token).delete(account);
    expect(recent.status).toBe(409);
    expect(recent.body.message).toContain('24 hours');
    t.clock.advance(25 * 3600 * 1000);
    expect((await t.as(f.users.admin.token).delete(account)).status).toBe(204);
    expect((await t.as(f.users.member.token).delete(env)).status).toBe(204);
    expect((await t.as(f.users.owner.token).delete(orgDelete)).status).toBe(204);
  });
});
