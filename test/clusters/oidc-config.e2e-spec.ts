import { X509Certificate } from 'crypto';
import { parse } from 'yaml';
import { DEFAULT_CLUSTER_OIDC_ISSUER } from '../../src/clusters/cluster-access.service';
import { AppConfig } from '../../src/config/app-config';
import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, reconciler, settle } from './cluster-fixtures';

describe('cluster OIDC configuration and kubeconfig', () => {
  let t: TestApp;
  let f: OrgFixture;
  let web: string;
  let issuer: string;

  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
    issuer = (t.get(AppConfig).OIDC_ISSUER_URL ?? DEFAULT_CLUSTER_OIDC_ISSUER).replace(/\/$/, '');
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'web' }));
    expect(res.status).toBe(200);
    web = `${clustersPath(f)}/web`;
  });
  afterAll(() => t.close());

  it('is 409 until the control plane is provisioned (OIDC client first, then endpoint and CA)', async () => {
    let res = await t.as(f.users.viewer.token).get(`${web}/oidc-config`);
    expectErrorBody(res.body, 409);
    expect(res.body.message).toMatch(/CLUSTER_PROVISIONED/);
    expectErrorBody((await t.as(f.users.member.token).get(`${web}/kubeconfig`)).body, 409);

    // new -> provisioning, then OIDC_PROVISIONED: the client exists, the endpoint not yet.
    await reconciler(t).runOnce();
    await reconciler(t).runOnce();
    const [row] = await t.db.query(
      `SELECT a.oidc_client_id, a.api_endpoint FROM cluster_access a JOIN clusters c ON c.id = a.cluster_id WHERE c.slug = 'web' AND c.organisation_id = $1`,
      [f.orgId],
    );
    expect(row.oidc_client_id).toMatch(/^cluster-[0-9a-f-]{36}$/);
    expect(row.api_endpoint).toBeNull();
    res = await t.as(f.users.viewer.token).get(`${web}/oidc-config`);
    expect(res.status).toBe(409);
  });

  it('answers endpoint, a real self-signed CA, the client and the issuer once provisioned; VIEWER gets the secret as <secret>', async () => {
    await settle(t);
    const [cluster] = await t.db.query(`SELECT identity, status FROM clusters WHERE slug = 'web' AND organisation_id = $1`, [f.orgId]);
    expect(cluster.status).toBe('started');

    const member = await t.as(f.users.member.token).get(`${web}/oidc-config`);
    expect(member.status).toBe(200);
    expect(member.body).toEqual({
      endpoint: expect.stringMatching(new RegExp(`^https://web-${cluster.identity.slice(0, 8)}\\.eu-central-1\\.clusters\\.example\\.net:6443$`)),
      caCertificate: expect.stringMatching(/^-----BEGIN CERTIFICATE-----\n[\s\S]+\n-----END CERTIFICATE-----\n$/),
      clientId: `cluster-${cluster.identity}`,
      clientSecret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      issuerUrl: issuer,
    });
    const ca = new X509Certificate(member.body.caCertificate);
    expect(ca.ca).toBe(true);
    expect(ca.verify(ca.publicKey)).toBe(true);
    expect(ca.subject).toContain(`web-${cluster.identity.slice(0, 8)}`);

    const viewer = await t.as(f.users.viewer.token).get(`${web}/oidc-config`);
    expect(viewer.status).toBe(200);
    expect(viewer.body).toEqual({ ...member.body, clientSecret: '<secret>' });
    const admin = await t.as(f.users.owner.token).get(`${web}/oidc-config`);
    expect(admin.body.clientSecret).toBe(member.body.clientSecret);
    expect((await t.as(f.users.outsider.token).get(`${web}/oidc-config`)).status).toBe(403);

    // The secret is sealed at rest.
    const [stored] = await t.db.query(`SELECT oidc_client_secret_ciphertext AS c FROM cluster_access WHERE oidc_client_id = $1`, [member.body.clientId]);
    expect(stored.c).toMatch(/^v1\./);
    expect(stored.c).not.toContain(member.body.clientSecret);
  });

  it('gives each cluster its own CA and client', async () => {
    expect((await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'api' }))).status).toBe(200);
    await settle(t);
    const a = (await t.as(f.users.member.token).get(`${web}/oidc-config`)).body;
    const b = (await t.as(f.users.member.token).get(`${clustersPath(f)}/api/oidc-config`)).body;
    expect(b.clientId).not.toBe(a.clientId);
    expect(b.clientSecret).not.toBe(a.clientSecret);
    expect(b.caCertificate).not.toBe(a.caCertificate);
    expect(b.endpoint).not.toBe(a.endpoint);
  });

  it('answers a kubeconfig (YAML) with the server, the CA and the oidc-login exec plugin; MEMBER and above', async () => {
    const oidc = (await t.as(f.users.member.token).get(`${web}/oidc-config`)).body;
    const res = await t.as(f.users.member.token).get(`${web}/kubeconfig`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/yaml/);
    const doc = parse(res.text);
    expect(doc.apiVersion).toBe('v1');
    expect(doc.kind).toBe('Config');
    const name = `${f.orgSlug}-${f.envSlug}-web`;
    expect(doc['current-context']).toBe(name);
    expect(doc.contexts).toEqual([{ name, context: { cluster: name, user: `oidc-${name}` } }]);
    expect(doc.clusters).toHaveLength(1);
    expect(doc.clusters[0].cluster.server).toBe(oidc.endpoint);
    expect(Buffer.from(doc.clusters[0].cluster['certificate-authority-data'], 'base64').toString('utf8')).toBe(oidc.caCertificate);
    const exec = doc.users[0].user.exec;
    expect(doc.users[0].name).toBe(`oidc-${name}`);
    expect(exec.apiVersion).toBe('client.authentication.k8s.io/v1beta1');
    expect(exec.command).toBe('kubectl');
    expect(exec.args).toEqual([
      'oidc-login',
      'get-token',
      `--oidc-issuer-url=${issuer}`,
      `--oidc-client-id=${oidc.clientId}`,
      `--oidc-client-secret=${oidc.clientSecret}`,
    ]);

    expect((await t.as(f.users.viewer.token).get(`${web}/kubeconfig`)).status).toBe(403);
    expect((await t.as(f.users.member.token).get(`${clustersPath(f)}/nope/kubeconfig`)).status).toBe(404);
  });

  it('keeps the client secret from READ_ONLY tokens: <secret> in the OIDC configuration, 403 naming why for the kubeconfig', async () => {
    const full = (await t.as(f.users.owner.token).get(`${web}/oidc-config`)).body;
    const ro = await t.as(f.users.owner.token).post('/sts/v1/personal-access-tokens').send({ name: 'ro', type: { name: 'READ_ONLY' } });
    expect(ro.status).toBe(200);
    const oidc = await t.as(ro.body.token).get(`${web}/oidc-config`);
    expect(oidc.status).toBe(200);
    expect(oidc.body).toEqual({ ...full, clientSecret: '<secret>' });
    const kube = await t.as(ro.body.token).get(`${web}/kubeconfig`);
    expect(kube.status).toBe(403);
    expectErrorBody(kube.body, 403);
    expect(kube.body.message).toMatch(/OIDC client secret.*FULL_ACCESS/);
    expect(kube.text).not.toContain(full.clientSecret);
  });
});
