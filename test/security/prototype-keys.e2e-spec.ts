import { clusterBody, clustersPath, createOrgFixture, OrgFixture } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * Keys that are also names of Object.prototype members are data like any other: kept in every map
 * (labels, annotations, metadata, add-on values, alert labels), never silently dropped, never a 500.
 */
describe('map keys named like Object.prototype members', () => {
  let t: TestApp;
  let f: OrgFixture;
  const KEYS = { constructor: 'c', toString: 't', valueOf: 'v', hasOwnProperty: 'h' };

  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
  });
  afterAll(() => t.close());

  it('keeps them in node pool labels and annotations', async () => {
    const res = await t
      .as(f.users.member.token)
      .post(clustersPath(f))
      .send(clusterBody(f, { name: 'protokeys', nodePools: [{ name: 'p', nodeSize: 'm5.large', minSize: 1, maxSize: 2, labels: KEYS, annotations: KEYS }] }));
    expect(res.status).toBe(200);
    const pools = await t.as(f.users.viewer.token).get(`${clustersPath(f)}/protokeys/pools`);
    expect(pools.body[0].labels).toEqual(KEYS);
    expect(pools.body[0].annotations).toEqual(KEYS);
  });

  it('keeps them in cloud account metadata', async () => {
    const res = await t
      .as(f.users.admin.token)
      .post(`/api/v1/orgs/${f.orgSlug}/cloud-accounts`)
      .send({ cloudProfile: 'platform-1-default', displayName: 'Proto keys', metadata: KEYS });
    expect(res.status).toBe(200);
    expect(res.body.metadata).toEqual(KEYS);
  });
});
