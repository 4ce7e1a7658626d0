import { clustersPath, createOrgFixture, OrgFixture } from '../clusters/cluster-fixtures';
import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';

/**
 * Request shapes the real Go client (avisi-cloud/go-client v0.17.0, run by hand against the service: docs/compat.md)
 * sends and that failed there, replayed byte for byte as its encoding/json writes them.
 */
describe('the Go client requests that failed when the real client was run', () => {
  let t: TestApp;
  let f: OrgFixture;

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '1000' });
    f = await createOrgFixture(t);
  });
  afterAll(async () => t.close());

  /**
   * `CreateCluster` with inline node pools: the client's NodePools struct has no `omitempty` on `identity` and
   * `upgradeStrategy`, so a pool that sets neither arrives with both as "" (json.Marshal of
   * `CreateCluster{Name, CloudAccountIdentity, Region, Version, NodePools: []NodePools{{Name, NodeSize, MinSize, MaxSize, AutoScaling}}}`).
   */
  const goCreateCluster = (name: string, upgradeStrategy: string) =>
    `{"name":"${name}","environmentId":"","cloudAccountIdentity":"${f.accountIdentity}","region":"eu-central-1","version":"1.31.5",` +
    '"enableNATGateway":false,"enableNetworkEncryption":false,"enablePodSecurityStandards":false,"enableMultiAvailabilityZones":false,' +
    '"enableAutoUpgrade":false,"enableHighAvailability":false,' +
    `"nodePools":[{"name":"workers","identity":"","autoScaling":true,"minSize":1,"maxSize":3,"nodeSize":"m5.large","upgradeStrategy":"${upgradeStrategy}"}]}`;

  it.each([
    ['the interface path', ''],
    ['/compat', '/compat'],
  ])('CreateCluster with an inline pool whose upgradeStrategy is Go\'s "" gets the default strategy on %s', async (_label, base) => {
    const name = `go${base ? 'compat' : 'plain'}`;
    const res = await t
      .as(f.users.member.token)
      .post(`${base}${clustersPath(f)}`)
      .set('Content-Type', 'application/json')
      .send(goCreateCluster(name, ''));
    expect({ status: res.status, message: res.body.message }).toEqual({ status: 200, message: undefined });
    const pools = await t.as(f.users.viewer.token).get(`${base}${clustersPath(f)}/${name}/pools`);
    expect(pools.status).toBe(200);
    expect(pools.body).toEqual([expect.objectContaining({ name: 'workers', upgradeStrategy: 'REPLACE', autoScaling: true, minSize: 1, maxSize: 3 })]);
  });

  it('an inline pool that names a strategy keeps it, and one the service does not know is still a 400 naming the values', async () => {
    const named = await t.as(f.users.member.token).post(`/compat${clustersPath(f)}`).set('Content-Type', 'application/json').send(goCreateCluster('gonamed', 'INPLACE'));
    expect(named.status).toBe(200);
    const pools = await t.as(f.users.viewer.token).get(`${clustersPath(f)}/gonamed/pools`);
    expect(pools.body[0].upgradeStrategy).toBe('INPLACE');

    const bad = await t.as(f.users.member.token).post(`/compat${clustersPath(f)}`).set('Content-Type', 'application/json').send(goCreateCluster('gobad', 'SOMETIMES'));
    expect(bad.status).toBe(400);
    expectErrorBody(bad.body, 400);
    expect(bad.body.message).toContain('nodePools.0.upgradeStrategy must be one of the following values: REPLACE');
  });

  it('a /compat request for an operation the service does not have (the client\'s .../alertmanager) names the path the client requested', async () => {
    const path = `/api/v1/orgs/${f.orgSlug}/monitoring/production-web/alertmanager`;
    const compat = await t.as(f.users.viewer.token).get(`/compat${path}?page=1`);
    expect(compat.status).toBe(404);
    expectErrorBody(compat.body, 404);
    expect({ message: compat.body.message, path: compat.body.path }).toEqual({ message: `Cannot GET /compat${path}?page=1`, path: `/compat${path}` });
    // The interface's path is named as it was requested too.
    const plain = await t.as(f.users.viewer.token).get(path);
    expect({ status: plain.status, message: plain.body.message, path: plain.body.path }).toEqual({ status: 404, message: `Cannot GET ${path}`, path });
  });
});
