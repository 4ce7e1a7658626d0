import { execFileSync } from 'child_process';
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { PassThrough } from 'stream';
import { parse } from 'yaml';
import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, settle } from './cluster-fixtures';

const decode = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');
const TOKEN_IN_COMMAND = /--token '(cmsjoin_[A-Za-z0-9_-]{43})'/;

/** bash -n: the generated scripts at least parse (they are not run). */
function bashParses(script: string): void {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'byon-')), 'script.sh');
  fs.writeFileSync(file, script);
  execFileSync('bash', ['-n', file]);
}

describe('bring-your-own-node clusters', () => {
  let t: TestApp;
  let f: OrgFixture;
  let accountIdentity: string;
  let cluster: string;
  let pools: string;
  let workers: { id: number; identity: string };
  let edge: { id: number; identity: string };
  const tokens: string[] = [];
  let logText = '';
  const logs = new PassThrough();
  logs.on('data', (chunk: Buffer) => (logText += chunk.toString('utf8')));

  const joinConfig = async (poolIdentity: string, as = f.users.member.token) => {
    const res = await t.as(as).post(`${pools}/${poolIdentity}/join-config`).send();
    if (res.status === 200) {
      const token = TOKEN_IN_COMMAND.exec(res.body.joinCommand)?.[1];
      if (token) tokens.push(token);
    }
    return res;
  };
  const tokenOf = (res: { body: { joinCommand: string } }) => TOKEN_IN_COMMAND.exec(res.body.joinCommand)![1];
  const register = (token: string | null, body: Record<string, unknown>) => {
    const req = t.http().post('/api/v1/node-registrations');
    if (token !== null) req.set('Authorization', `Bearer ${token}`);
    return req.send(body);
  };
  const node = (name: string, extra: Record<string, unknown> = {}) => ({
    name,
    address: '10.20.0.11',
    kubeletVersion: 'v1.31.5',
    cpu: 16,
    memory: 65536,
    ...extra,
  });

  beforeAll(async () => {
    t = await startTestApp({ AUTH_FAILURE_LIMIT_PER_MINUTE: '40', NODE_REGISTRATION_LIMIT_PER_MINUTE: '6', LOG_LEVEL: 'debug' }, undefined, logs);
    f = await createOrgFixture(t);
    cluster = `${clustersPath(f)}/dc`;
    pools = `${cluster}/pools`;
  });
  afterAll(() => t.close());

  it('creates a cloud account on the byon profile and a cluster without credentials; region and node size are labels', async () => {
    const acc = await t.as(f.users.admin.token).post(`/api/v1/orgs/${f.orgSlug}/cloud-accounts`).send({ cloudProfile: 'byon-default', displayName: 'Own datacenter' });
    expect(acc.status).toBe(200);
    expect(acc.body.primaryCloudCredentialsIdentity).toBeNull();
    accountIdentity = acc.body.identity;

    const base = {
      ...clusterBody(f),
      name: 'dc',
      cloudAccountIdentity: accountIdentity,
      region: 'amsterdam-dc2',
      nodePools: [
        { name: 'workers', nodeSize: 'bare-metal-32c', minSize: 0, maxSize: 2, labels: { rack: 'r12' }, taints: [{ key: 'dedicated', value: 'byon', effect: 'NoSchedule' }] },
        { name: 'edge', nodeSize: 'small', minSize: 0, maxSize: 3 },
      ],
    };
    let res = await t.as(f.users.member.token).post(clustersPath(f)).send({ ...base, region: 'Amsterdam DC 2' });
    expectErrorBody(res.body, 400);
    expect(res.body.errors[0].field).toBe('region');
    res = await t.as(f.users.member.token).post(clustersPath(f)).send({ ...base, nodePools: [{ name: 'w', nodeSize: 'Big Box!', minSize: 0, maxSize: 1 }] });
    expectErrorBody(res.body, 400);
    expect(res.body.errors[0].field).toBe('nodePools.0.nodeSize');

    res = await t.as(f.users.member.token).post(clustersPath(f)).send(base);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ region: 'amsterdam-dc2', cloudProvider: 'byon', status: 'new' });

    const list = await t.as(f.users.viewer.token).get(pools);
    expect(list.body.map((p: { name: string; nodeSize: string; nodeCount: number; nodes: unknown[] }) => [p.name, p.nodeSize, p.nodeCount, p.nodes])).toEqual([
      ['workers', 'bare-metal-32c', 0, []],
      ['edge', 'small', 0, []],
    ]);
    workers = { id: list.body[0].id, identity: list.body[0].identity };
    edge = { id: list.body[1].id, identity: list.body[1].identity };
  });

  it('refuses a join config before the control plane exists, then the cluster starts without waiting for nodes', async () => {
    const early = await joinConfig(workers.identity);
    expectErrorBody(early.body, 409);
    expect(early.body.message).toMatch(/CLUSTER_PROVISIONED/);

    await settle(t);
    const c = await t.as(f.users.viewer.token).get(cluster);
    expect(c.body).toMatchObject({ status: 'started', provisionStatus: 'DONE' });
    // The cluster's pools wait for their nodes.
    const list = await t.as(f.users.viewer.token).get(pools);
    expect(list.body.map((p: { provisionStatus: string }) => p.provisionStatus)).toEqual(['ACCEPTED', 'ACCEPTED']);
  });

  it('answers a join config (MEMBER) with coherent scripts, kubelet config, cloud-init and a join command carrying a fresh token', async () => {
    expect((await joinConfig(workers.identity, f.users.viewer.token)).status).toBe(403);
    const res = await joinConfig(workers.identity);
    expect(res.status).toBe(200);
    expect(res.body.versions).toEqual({ cloudInit: '24.1', kubernetes: '1.31.5', containerd: '1.7.24', crictl: '1.31.1' });
    const token = tokenOf(res);
    expect(res.body.joinCommand).toBe(
      `sudo /usr/local/bin/cms-node-join --api-url 'http://localhost:8080' --node-pool '${workers.identity}' --token '${token}'`,
    );

    const install = decode(res.body.installScriptBase64);
    expect(install).toMatch(/^#!\/usr\/bin\/env bash\n/);
    expect(install).toContain(`KUBERNETES_VERSION='1.31.5'`);
    expect(install).toContain(`CONTAINERD_VERSION='1.7.24'`);
    expect(install).toContain(`CRICTL_VERSION='1.31.1'`);
    expect(install).toContain('https://dl.k8s.io/release/v${KUBERNETES_VERSION}/bin/linux/${ARCH}/kubelet');
    expect(install).toContain('node.cluster-management.example.com/pool=workers,rack=r12');
    expect(install).not.toContain(token);
    bashParses(install);
    const upgrade = decode(res.body.upgradeScriptBase64);
    expect(upgrade).toContain(`KUBERNETES_VERSION='1.31.5'`);
    bashParses(upgrade);

    const kubelet = parse(decode(res.body.kubeletConfigBase64));
    expect(kubelet).toMatchObject({
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      cgroupDriver: 'systemd',
      clusterDNS: ['10.96.0.10'],
      containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
      registerWithTaints: [{ key: 'dedicated', value: 'byon', effect: 'NoSchedule' }],
    });
    // The install script writes exactly that kubelet config and the cluster's CA.
    expect(install).toContain(res.body.kubeletConfigBase64);
    const oidc = await t.as(f.users.member.token).get(`${cluster}/oidc-config`);
    expect(install).toContain(Buffer.from(oidc.body.caCertificate).toString('base64'));

    const userData = decode(res.body.cloudInitUserDataBase64);
    expect(userData.startsWith('#cloud-config\n')).toBe(true);
    const cloudInit = parse(userData);
    expect(decode(cloudInit.write_files[0].content)).toBe(install);
    expect(cloudInit.runcmd).toEqual([
      ['bash', cloudInit.write_files[0].path],
      ['/usr/local/bin/cms-node-join', '--api-url', 'http://localhost:8080', '--node-pool', workers.identity, '--token', token],
    ]);

    // Only the hash is stored; the audit row names the token's identity, never the token.
    const [row] = await t.db.query(`SELECT token_hash, max_nodes, expires_at, created_at, identity FROM node_join_tokens WHERE node_pool_id = $1`, [workers.id]);
    expect(row.token_hash).toBe(createHash('sha256').update(token).digest('hex'));
    expect(row.max_nodes).toBe(2);
    expect(new Date(row.expires_at).getTime() - new Date(row.created_at).getTime()).toBe(60 * 60 * 1000);
    const [audit] = await t.db.query(`SELECT actor_username, cluster_node_pool_name, details FROM audit_events WHERE type = 'NODE_POOL_JOIN_CONFIG_CREATED'`);
    expect(audit.actor_username).toBe(f.users.member.username);
    expect(audit.cluster_node_pool_name).toBe('workers');
    expect(audit.details.joinTokenIdentity).toEqual({ old: null, new: row.identity });
  });

  it('registers two nodes with the token: the pool lists them, is DONE and counts them in compute', async () => {
    const token = tokens[tokens.length - 1];
    const first = await register(token, node('worker-01', { nodePoolIdentity: workers.identity }));
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      identity: expect.any(String),
      name: 'worker-01',
      address: '10.20.0.11',
      kubeletVersion: 'v1.31.5',
      cpu: 16,
      memory: 65536,
      joinedAt: expect.any(String),
      lastRegisteredAt: expect.any(String),
      nodePoolIdentity: workers.identity,
      clusterIdentity: expect.any(String),
      created: true,
    });
    const second = await register(token, node('worker-02', { address: 'fd00::12', cpu: 8, memory: 32768 }));
    expect(second.status).toBe(200);
    // The join token's budget (NODE_REGISTRATION_LIMIT_PER_MINUTE=6 here): two spent.
    expect(first.headers['ratelimit-limit']).toBe('6');
    expect(second.headers).toMatchObject({ 'ratelimit-limit': '6', 'ratelimit-remaining': '4' });
    expect(Number(second.headers['ratelimit-reset'])).toBeGreaterThan(0);

    const pool = (await t.as(f.users.viewer.token).get(pools)).body[0];
    expect(pool.provisionStatus).toBe('DONE');
    expect(pool.nodeCount).toBe(2);
    expect(pool.nodes.map((n: { name: string; address: string }) => [n.name, n.address])).toEqual([
      ['worker-01', '10.20.0.11'],
      ['worker-02', 'fd00::12'],
    ]);
    expect((await t.as(f.users.viewer.token).get(pools)).body[1]).toMatchObject({ provisionStatus: 'ACCEPTED', nodeCount: 0 });

    const c = await t.as(f.users.viewer.token).get(`${cluster}?show-compute=true`);
    expect(c.body).toMatchObject({ cpu: 24, memory: 98304 });
    const compute = await t.as(f.users.viewer.token).get(`/api/v1/compute-information/organisation/${f.orgSlug}`);
    expect(compute.body).toMatchObject({ totalClusters: 1, totalCpu: 24, totalMemory: 98304 });

    const audits = await t.db.query(`SELECT actor_username, referenced_entity_identity, details FROM audit_events WHERE type = 'NODE_REGISTERED' ORDER BY id`);
    expect(audits).toHaveLength(2);
    expect(audits[0].actor_username).toBe('system');
    expect(audits[0].referenced_entity_identity).toBe(first.body.identity);
    expect(audits[0].details.name).toEqual({ old: null, new: 'worker-01' });
  });

  it('reuse: a token registers up to maxSize new nodes; the same name again updates the node; a full pool is 409', async () => {
    const token = tokens[tokens.length - 1];
    const again = await register(token, node('worker-01', { address: '10.20.0.21', kubeletVersion: 'v1.31.5' }));
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ name: 'worker-01', address: '10.20.0.21', created: false });
    const nodes = (await t.as(f.users.viewer.token).get(pools)).body[0].nodes;
    expect(nodes).toHaveLength(2);
    expect(nodes[0].joinedAt).toBe(again.body.joinedAt);

    const spent = await register(token, node('worker-03'));
    expectErrorBody(spent.body, 401);
    expect(spent.body.message).toMatch(/already registered its 2 node/);

    const fresh = tokenOf(await joinConfig(workers.identity));
    const full = await register(fresh, node('worker-03'));
    expectErrorBody(full.body, 409);
    expect(full.body.message).toMatch(/maxSize/);
  });

  it('a token only registers into its own pool', async () => {
    const edgeToken = tokenOf(await joinConfig(edge.identity));
    const cross = await register(edgeToken, node('edge-01', { nodePoolIdentity: workers.identity }));
    expectErrorBody(cross.body, 401);
    expect(cross.body.message).toMatch(/not valid for node pool/);
    const ok = await register(edgeToken, node('edge-01', { nodePoolIdentity: edge.identity }));
    expect(ok.body).toMatchObject({ nodePoolIdentity: edge.identity, created: true });
    let list = (await t.as(f.users.viewer.token).get(pools)).body;
    expect(list.map((p: { nodeCount: number }) => p.nodeCount)).toEqual([2, 1]);

    // The same new name registered twice at once: one node, created once.
    const twice = await Promise.all([register(edgeToken, node('edge-05')), register(edgeToken, node('edge-05'))]);
    expect(twice.map((r) => r.status)).toEqual([200, 200]);
    expect(twice.map((r) => r.body.created).sort()).toEqual([false, true]);
    list = (await t.as(f.users.viewer.token).get(pools)).body;
    expect(list.map((p: { nodeCount: number }) => p.nodeCount)).toEqual([2, 2]);
  });

  it('refuses missing, unknown, expired and revoked tokens (401) and validates the body', async () => {
    expectErrorBody((await register(null, node('edge-02'))).body, 401);
    expectErrorBody((await register('cmsjoin_not-a-real-token', node('edge-02'))).body, 401);

    const expiring = tokenOf(await joinConfig(edge.identity));
    t.clock.advance(60 * 60 * 1000 + 1000);
    const expired = await register(expiring, node('edge-02'));
    expectErrorBody(expired.body, 401);
    expect(expired.body.message).toMatch(/expired/);

    const revoked = tokenOf(await joinConfig(edge.identity));
    const bad = await register(revoked, node('Edge_02', { address: 'not-an-ip' }));
    expectErrorBody(bad.body, 400);
    expect(bad.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['address', 'name']);
    expect((await t.as(f.users.viewer.token).delete(`${pools}/${edge.identity}/join-tokens`)).status).toBe(403);
    const res = await t.as(f.users.member.token).delete(`${pools}/${edge.id}/join-tokens`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ revoked: 1 }); // this one; the expired ones are closed without being counted
    const refused = await register(revoked, node('edge-02'));
    expectErrorBody(refused.body, 401);
    expect(refused.body.message).toMatch(/revoked/);
    const [audit] = await t.db.query(`SELECT details FROM audit_events WHERE type = 'NODE_POOL_JOIN_TOKENS_REVOKED'`);
    expect(audit.details.revokedTokens).toEqual({ old: 1, new: 0 });
  });

  it('a version upgrade changes the versions and the upgrade script of the next join config', async () => {
    const patch = await t.as(f.users.member.token).patch(cluster).send({ version: '1.32.0' });
    expect(patch.status).toBe(200);
    // Until the control plane runs the new version, nodes are given the version it runs.
    expect((await joinConfig(workers.identity)).body.versions.kubernetes).toBe('1.31.5');
    await settle(t);
    const res = await joinConfig(workers.identity);
    expect(res.body.versions).toEqual({ cloudInit: '24.1', kubernetes: '1.32.0', containerd: '2.0.2', crictl: '1.32.0' });
    const upgrade = decode(res.body.upgradeScriptBase64);
    expect(upgrade).toContain(`KUBERNETES_VERSION='1.32.0'`);
    expect(upgrade).toContain(`CONTAINERD_VERSION='2.0.2'`);
  });

  it('never writes a token into audit rows, activity, the token table or the logs', async () => {
    expect(tokens.length).toBeGreaterThanOrEqual(6);
    const dumps: { t: string }[] = await t.db.query(
      `SELECT details::text || coalesce(referenced_entity_identity, '') AS t FROM audit_events
       UNION ALL SELECT row_to_json(a)::text FROM activity_events a
       UNION ALL SELECT row_to_json(n)::text FROM node_join_tokens n`,
    );
    for (const token of tokens) expect(dumps.filter((d) => d.t.includes(token))).toEqual([]);
    expect(logText).toContain('/api/v1/node-registrations'); // the requests were logged ...
    for (const token of tokens) expect(logText.includes(token)).toBe(false); // ... without their tokens
  });

  it('answers 409 for the join config of a pool of a cloud cluster', async () => {
    const cloud = await createOrgFixture(t);
    expect((await t.as(cloud.users.member.token).post(clustersPath(cloud)).send(clusterBody(cloud))).status).toBe(200);
    const [pool] = (await t.as(cloud.users.member.token).get(`${clustersPath(cloud)}/web/pools`)).body;
    const res = await t.as(cloud.users.member.token).post(`${clustersPath(cloud)}/web/pools/${pool.identity}/join-config`).send();
    expectErrorBody(res.body, 409);
    expect(res.body.message).toMatch(/bring-your-own-node/);
    expect(pool).toMatchObject({ nodeCount: 2, nodes: [] });
  });

  it('rate limits: failed tokens per address, registrations per token', async () => {
    const edgeToken = tokenOf(await joinConfig(edge.identity));
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await register(edgeToken, node('edge-01'))).status);
    expect(statuses.slice(0, 6)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(statuses[7]).toBe(429);

    let last = 0;
    for (let i = 0; i < 45 && last !== 429; i++) last = (await register('cmsjoin_wrong', node('edge-09'))).status;
    expect(last).toBe(429);
  });
});
