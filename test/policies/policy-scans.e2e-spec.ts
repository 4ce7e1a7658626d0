import { readFileSync } from 'fs';
import { join } from 'path';
import { POLICY_EXAMPLES } from '../../src/policies/policy-examples';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture } from '../clusters/cluster-fixtures';
import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';

/** The ten ready policies, and evaluate / violations on a seeded organisation. */
describe('policy examples and scans', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });
  const policiesPath = (f: OrgFixture) => `/api/v1/orgs/${f.orgSlug}/cluster-policies`;

  it('docs/policies.md shows every ready policy exactly as the OpenAPI examples do', () => {
    const doc = readFileSync(join(__dirname, '../../docs/policies.md'), 'utf8');
    expect(POLICY_EXAMPLES).toHaveLength(10);
    for (const e of POLICY_EXAMPLES) {
      expect(doc).toContain(`"name": "${e.body.name}"`);
      expect(doc).toContain(JSON.stringify(e.body, null, 2));
    }
  });

  it('accepts each ready policy, passes a compliant cluster and fails a non-compliant one', async () => {
    const f = await createOrgFixture(t);
    const member = t.as(f.users.member.token);
    const good = await member.post(clustersPath(f)).send(
      clusterBody(f, {
        name: 'good',
        region: 'eu-west-1',
        enableHighAvailability: true,
        enableNetworkEncryption: true,
        enableAutoUpgrade: true,
        updateChannel: 'stable',
        podSecurityStandardsProfile: 'restricted',
        nodePools: [{ name: 'workers', nodeSize: 'm5.large', minSize: 2, maxSize: 4, labels: { team: 'web' } }],
      }),
    );
    expect(good.status).toBe(200);
    const bad = await member.post(clustersPath(f)).send(
      clusterBody(f, { name: 'bad', nodePools: [{ name: 'big', nodeSize: 'm5.large', minSize: 0, maxSize: 50 }] }),
    );
    expect(bad.status).toBe(200);
    await t.db.query(`UPDATE clusters SET region = 'us-east-1' WHERE slug = 'bad' AND organisation_id = $1`, [f.orgId]);
    // Judged on changes (oldObject, request), not on a cluster as it is: tested in cluster-policies.e2e-spec.ts.
    const changeOnly = new Set(['keep-delete-protection', 'no-version-downgrade', 'production-delete-by-platform-admins']);
    for (const e of POLICY_EXAMPLES) {
      const res = await t.as(f.users.viewer.token).post(`${policiesPath(f)}/evaluate`).send(e.body);
      expect(res.status).toBe(200);
      const by = Object.fromEntries(res.body.content.map((r: { clusterSlug: string; passed: boolean; message: string }) => [r.clusterSlug, r]));
      expect({ name: e.body.name, good: by.good.passed }).toEqual({ name: e.body.name, good: true });
      expect({ name: e.body.name, bad: by.bad.passed }).toEqual({ name: e.body.name, bad: changeOnly.has(e.body.name) });
      if (!changeOnly.has(e.body.name)) expect(by.bad.message).toBeTruthy();
      expect((await t.as(f.users.admin.token).post(policiesPath(f)).send(e.body)).status).toBe(200);
    }
    const regions = await t.as(f.users.viewer.token).post(`${policiesPath(f)}/evaluate`).send(POLICY_EXAMPLES.find((e) => e.body.name === 'approved-regions')!.body);
    expect(regions.body.content.find((r: { clusterSlug: string }) => r.clusterSlug === 'bad').message).toBe('region us-east-1 is not approved (eu-central-1, eu-west-1, ams1)');
    const labels = await t.as(f.users.viewer.token).post(`${policiesPath(f)}/evaluate`).send(POLICY_EXAMPLES.find((e) => e.body.name === 'node-pools-team-label')!.body);
    expect(labels.body.content.find((r: { clusterSlug: string }) => r.clusterSlug === 'bad').message).toBe('node pools without a team label: big');
    // Deleting a production cluster is left to platform administrators.
    await t.db.query(`UPDATE clusters SET status = 'started', desired_status = NULL, provision_status = 'DONE' WHERE organisation_id = $1`, [f.orgId]);
    const del = await member.delete(`${clustersPath(f)}/good`);
    expect(del.body.errors.map((e: { field: string }) => e.field)).toEqual(['policies.production-delete-by-platform-admins']);
  });

  it('evaluates and lists violations page by page on a seeded organisation', async () => {
    const f = await createOrgFixture(t);
    const first = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'seed' }));
    expect(first.status).toBe(200);
    // 1,999 more clusters copied from the first one: every third highly available.
    await t.db.query(
      `INSERT INTO clusters (organisation_id, environment_id, cloud_account_id, cloud_credentials_id, slug, name, region, cloud_provider, version,
         highly_available, status, desired_status, provision_status, created_at, modified_at)
       SELECT organisation_id, environment_id, cloud_account_id, cloud_credentials_id, 'c' || g, 'c' || g, region, cloud_provider, version,
              g % 3 = 0, 'started', NULL, 'DONE', now(), now()
         FROM clusters, generate_series(1, 1999) g WHERE slug = 'seed' AND organisation_id = $1`,
      [f.orgId],
    );
    await t.db.query(
      `INSERT INTO cluster_node_pools (cluster_id, name, node_size, min_size, max_size, provision_status, created_at, modified_at)
       SELECT id, 'workers', 'm5.large', 1, 3, 'DONE', now(), now() FROM clusters WHERE organisation_id = $1 AND slug <> 'seed'`,
      [f.orgId],
    );
    const body = { name: 'ha', expression: 'object.highlyAvailable && size(object.nodePools) > 0', message: 'not HA', action: 'Deny' };
    const page = await t.as(f.users.viewer.token).post(`${policiesPath(f)}/evaluate?page=3&size=500`).send(body);
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ totalElements: 2000, totalPages: 4, number: 3, size: 500, numberOfElements: 500 });
    expect(page.body.content.filter((r: { passed: boolean }) => r.passed).length).toBeGreaterThan(150);
    expectErrorBody((await t.as(f.users.viewer.token).post(`${policiesPath(f)}/evaluate`).send({ ...body, expression: 'object.nope' })).body, 400);

    const saved = await t.as(f.users.admin.token).post(policiesPath(f)).send({ ...body, enabled: false });
    const v0 = await t.as(f.users.viewer.token).get(`${policiesPath(f)}/${saved.body.identity}/violations?size=100`);
    expect(v0.status).toBe(200);
    // seed (not HA) + the 1,999 - 666 copies that are not HA.
    expect(v0.body).toMatchObject({ totalElements: 1334, numberOfElements: 100, number: 0 });
    expect(v0.body.content[0]).toEqual({ clusterIdentity: first.body.identity, clusterSlug: 'seed', environmentSlug: 'production', message: 'not HA' });
    const last = await t.as(f.users.viewer.token).get(`${policiesPath(f)}/${saved.body.identity}/violations?size=100&page=13`);
    expect(last.body).toMatchObject({ totalElements: 1334, numberOfElements: 34, last: true });
    expect((await t.as(f.users.outsider.token).get(`${policiesPath(f)}/${saved.body.identity}/violations`)).status).toBe(403);
  });
});
