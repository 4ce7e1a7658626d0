import { randomUUID } from 'crypto';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

/** Bounds the OpenAPI document states are the ones the service enforces (400 naming the field). */
describe('request bounds stated in the document are enforced', () => {
  let t: TestApp;
  let f: OrgFixture;
  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
  });
  afterAll(() => t.close());

  const fieldsOf = (body: { errors?: { field: string }[] }) => (body.errors ?? []).map((e) => e.field);

  it('scheduled-upgrade list filters: at most 100 clusterIdentities', async () => {
    const ids = Array.from({ length: 101 }, () => randomUUID()).join(',');
    const res = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/scheduled-cluster-upgrades?clusterIdentities=${ids}`);
    expect(res.status).toBe(400);
    expect(fieldsOf(res.body)).toContain('clusterIdentities');
    const ok = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/scheduled-cluster-upgrades?clusterIdentities=${randomUUID()}`);
    expect(ok.status).toBe(200);
  });

  it('cluster create: CIDRs, label values and add-on values are bounded', async () => {
    const long = 'x'.repeat(4097);
    const res = await t
      .as(f.users.member.token)
      .post(clustersPath(f))
      .send(
        clusterBody(f, {
          name: 'bounded',
          clusterPodSubnet: { ipRange: `10.0.0.0/8${' '.repeat(40)}` },
          nodePools: [{ name: 'workers', nodeSize: 'm5.large', minSize: 1, maxSize: 2, labels: { tier: long } }],
          addons: { 'metrics-server': { enabled: true, customValues: { a: long } } },
        }),
      );
    expect(res.status).toBe(400);
    expect(fieldsOf(res.body)).toEqual(expect.arrayContaining(['clusterPodSubnet.ipRange', 'nodePools.0.labels', 'addons']));
  });
});
