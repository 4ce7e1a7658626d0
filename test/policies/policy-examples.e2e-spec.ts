import { readFileSync } from 'fs';
import { join } from 'path';
import { POLICY_EXAMPLES } from '../../src/policies/policy-examples';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * The ready policies of docs/policies.md (src/policies/policy-examples.ts) as written there, on the changes they
 * are about: the OpenAPI examples are the same bodies, and the policies judged on a change (oldObject, request,
 * Warn, Audit) do what docs/policies.md says. Judged on clusters as they are: policy-scans.e2e-spec.ts.
 */
describe('ready policies on changes', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });
  const example = (name: string) => POLICY_EXAMPLES.find((e) => e.body.name === name)!.body;
  const policiesPath = (f: OrgFixture) => `/api/v1/orgs/${f.orgSlug}/cluster-policies`;
  const adopt = async (f: OrgFixture, name: string) => {
    const res = await t.as(f.users.admin.token).post(policiesPath(f)).send(example(name));
    expect(res.status).toBe(200);
  };
  /** A running cluster named `web` (so it can be changed at once). */
  const runningCluster = async (f: OrgFixture, over: Record<string, unknown> = {}) => {
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, over));
    expect(res.status).toBe(200);
    await t.db.query(`UPDATE clusters SET status = 'started', desired_status = NULL, provision_status = 'DONE' WHERE identity = $1`, [res.body.identity]);
    return res.body as { identity: string; version: string };
  };

  it('offers every ready policy as an OpenAPI example of create, evaluate and the platform create', () => {
    const doc = JSON.parse(readFileSync(join(__dirname, '../../docs/openapi.json'), 'utf8'));
    const want = Object.fromEntries(POLICY_EXAMPLES.map((e) => [e.body.name, { summary: e.summary, value: e.body }]));
    for (const path of ['/api/v1/orgs/{organisationSlug}/cluster-policies', '/api/v1/orgs/{organisationSlug}/cluster-policies/evaluate', '/admin/v1/cluster-policies']) {
      expect({ path, examples: doc.paths[path].post.requestBody.content['application/json'].examples }).toEqual({ path, examples: want });
    }
  });

  it('keep-delete-protection: a production cluster keeps deleteProtection once set', async () => {
    const f = await createOrgFixture(t);
    await adopt(f, 'keep-delete-protection');
    await runningCluster(f);
    const member = t.as(f.users.member.token);
    expect((await member.patch(`${clustersPath(f)}/web`).send({ deleteProtection: true })).status).toBe(200);
    const removed = await member.patch(`${clustersPath(f)}/web`).send({ deleteProtection: false });
    expect(removed.status).toBe(400);
    expect(removed.body.errors).toEqual([
      { field: 'policies.keep-delete-protection', message: 'policy keep-delete-protection: deleteProtection cannot be removed from a production cluster' },
    ]);
  });

  it('no-version-downgrade: the version never goes back, with the message expression naming both versions', async () => {
    const f = await createOrgFixture(t);
    await adopt(f, 'no-version-downgrade');
    const c = await runningCluster(f);
    const [major, minor, patch] = c.version.split('.').map(Number);
    const older = `${major}.${minor}.${patch - 1}`;
    const down = await t.as(f.users.member.token).patch(`${clustersPath(f)}/web`).send({ version: older });
    expect(down.status).toBe(400);
    expect(down.body.errors).toEqual([{ field: 'policies.no-version-downgrade', message: `policy no-version-downgrade: the version cannot go back from ${c.version} to ${older}` }]);
  });

  it('production-delete-by-platform-admins: a member may not delete a production cluster, a platform administrator may', async () => {
    const f = await createOrgFixture(t);
    await adopt(f, 'production-delete-by-platform-admins');
    await runningCluster(f);
    const refused = await t.as(f.users.owner.token).delete(`${clustersPath(f)}/web`);
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0].message).toBe('policy production-delete-by-platform-admins: only platform administrators may delete production clusters');
    // The same owner, now a platform administrator (a platform administrator outside the organisation only reads it).
    await t.db.query(`UPDATE users SET platform_admin = true WHERE username = $1`, [f.users.owner.username]);
    const allowed = await t.as(f.users.owner.token).delete(`${clustersPath(f)}/web`);
    expect(allowed.status).toBeLessThan(300);
    const [row] = await t.db.query(`SELECT desired_status FROM clusters WHERE organisation_id = $1 AND slug = 'web'`, [f.orgId]);
    expect(row.desired_status).toBe('deleting');
  });

  it('production-release-channel (Warn) answers a Warning header; network-encryption (Audit) records CLUSTER_POLICY_VIOLATED', async () => {
    const f = await createOrgFixture(t);
    await adopt(f, 'production-release-channel');
    await adopt(f, 'network-encryption');
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { enableNetworkEncryption: false }));
    expect(res.status).toBe(200);
    expect(res.headers.warning).toContain('policy production-release-channel: production clusters must auto-upgrade on the stable or regular update channel');
    const [audit] = await t.db.query(`SELECT details FROM audit_events WHERE type = 'CLUSTER_POLICY_VIOLATED' AND organisation_id = $1`, [f.orgId]);
    expect(audit.details).toMatchObject({ policy: { new: 'network-encryption' }, action: { new: 'Audit' }, message: { new: 'the cluster runs without network encryption' } });
  });
});
