import * as http from 'http';
import type { AddressInfo } from 'net';
import { Webhook } from 'standardwebhooks';
import { ClusterDriverResolver } from '../../src/cluster-drivers/cluster-driver-resolver';
import { clusterBody, clustersPath, createOrgFixture } from '../clusters/cluster-fixtures';
import { expectErrorBody, startTestApp, TestApp, TestUser } from '../support/test-app';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo=';
const OTHER_SECRET = 'whsec_ZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmY=';
const PATH = '/admin/v1/cluster-drivers';

/** A driver that answers capabilities to requests signed with SECRET and 401 to the others. */
async function capabilitiesDriver() {
  const server = http.createServer((req, res) => {
    try {
      new Webhook(SECRET).verify('', req.headers as Record<string, string>);
    } catch {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { class: 'terminal', code: 'BadSignature', message: 'signature refused' } }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ protocolVersion: 'v1', driver: { name: 'capabilities-only', version: '0.1.0' }, cloudProviders: ['platform_1'], features: ['stopStart'] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('cluster driver registry (/admin/v1/cluster-drivers)', () => {
  let t: TestApp;
  let plain: TestUser;
  let driver: Awaited<ReturnType<typeof capabilitiesDriver>>;
  const resolve = (cloudProvider: string, cloudProfile: string | null) => t.app.get(ClusterDriverResolver).resolve({ cloudProvider, cloudProfile });
  /** The resolver sees a change once the NOTIFY of its commit arrives: wait for it (bounded). */
  const eventually = async (check: () => Promise<void>) => {
    for (let i = 0; ; i++) {
      try {
        return await check();
      } catch (e) {
        if (i > 100) throw e;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };

  beforeAll(async () => {
    t = await startTestApp();
    plain = await t.createUser('plain-driver-user');
    driver = await capabilitiesDriver();
  });
  afterAll(async () => {
    await driver.close();
    await t.close();
  });

  it('is for platform administrators only', async () => {
    const calls = [
      () => t.as(plain.token).get(PATH),
      () => t.as(plain.token).post(PATH).send({ name: 'x', url: driver.url, signingSecret: SECRET, cloudProviders: ['platform_1'] }),
      () => t.as(plain.token).get(`${PATH}/x`),
      () => t.as(plain.token).patch(`${PATH}/x`).send({ enabled: false }),
      () => t.as(plain.token).delete(`${PATH}/x`),
      () => t.as(plain.token).post(`${PATH}/x/health-check`),
    ];
    for (const call of calls) {
      const res = await call();
      expect(res.status).toBe(403);
      expectErrorBody(res.body, 403);
    }
    expect((await t.http().get(PATH)).status).toBe(401);
    expect(await t.db.query(`SELECT * FROM cluster_drivers`)).toEqual([]);
  });

  it("registers a driver from the OpenAPI document's examples on a fresh install, and reads and removes it by the path example", async () => {
    const doc = (await t.http().get('/v3/api-docs').expect(200)).body;
    const op = doc.paths[PATH].post;
    const schema = doc.components.schemas[op.requestBody.content['application/json'].schema.$ref.split('/').pop()];
    const body = Object.fromEntries(Object.entries(schema.properties as Record<string, { example?: unknown }>).filter(([, p]) => p.example !== undefined).map(([k, p]) => [k, p.example]));
    expect(Object.keys(body).sort()).toEqual(['cloudProfiles', 'cloudProviders', 'enabled', 'name', 'signingSecret', 'url']);
    const res = await t.admin().post(PATH).send(body);
    expect(res.status).toBe(200);
    // Registered disabled: trying the example moves no cluster to a driver that is not running.
    expect(res.body).toMatchObject({ name: body.name, enabled: false });
    // The path example names the demo's (disabled) driver, so that Try it out finds it on a demo install
    // (test/demo/demo-data.e2e-spec.ts); here, without the demo, the registered example is read and removed.
    const param = doc.paths[`${PATH}/{driver}`].get.parameters.find((p: { name: string }) => p.name === 'driver');
    expect(param.example ?? param.schema.example).toBe('example-driver');
    expect((await t.admin().get(`${PATH}/${body.name}`)).status).toBe(200);
    expect((await t.admin().delete(`${PATH}/${body.name}`)).status).toBe(204);
    await t.db.query(`DELETE FROM audit_events WHERE type LIKE 'CLUSTER_DRIVER_%'`);
  });

  it('registers a driver with its secret sealed and never answered, audited, and resolves clusters to it', async () => {
    expect(await resolve('platform_1', 'platform-1-default')).toBeNull();
    const res = await t.admin().post(PATH).send({ name: 'provider-driver', url: `${driver.url}/`, signingSecret: SECRET, cloudProviders: ['platform_1'] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      identity: expect.any(String),
      name: 'provider-driver',
      url: driver.url,
      cloudProviders: ['platform_1'],
      cloudProfiles: [],
      enabled: true,
      timeoutMs: 15000,
      maxInFlight: 16,
      health: { status: 'UNKNOWN', checkedAt: null, message: null, protocolVersion: null, driver: null, cloudProviders: [], features: [] },
      createdAt: expect.any(String),
      modifiedAt: expect.any(String),
    });
    const secretPart = SECRET.slice(6, 30);
    const [row] = await t.db.query(`SELECT * FROM cluster_drivers WHERE name = 'provider-driver'`);
    expect(JSON.stringify(row)).not.toContain(secretPart);
    expect(row.secret_ciphertext).toMatch(/^v1\./);
    const audit = await t.db.query(`SELECT type, referenced_entity_identity, details FROM audit_events WHERE type LIKE 'CLUSTER_DRIVER_%' ORDER BY id`);
    expect(audit).toEqual([{ type: 'CLUSTER_DRIVER_CREATED', referenced_entity_identity: res.body.identity, details: expect.objectContaining({ name: { old: null, new: 'provider-driver' } }) }]);
    expect(JSON.stringify(audit)).not.toContain(secretPart);
    for (const read of [await t.admin().get(PATH), await t.admin().get(`${PATH}/provider-driver`), await t.admin().get(`${PATH}/${res.body.identity}`)]) {
      expect(read.status).toBe(200);
      expect(JSON.stringify(read.body)).not.toContain(secretPart);
    }
    expect((await t.admin().get(PATH)).body.content.map((d: { name: string }) => d.name)).toEqual(['provider-driver']);

    await eventually(async () => expect((await resolve('platform_1', 'platform-1-default'))?.name).toBe('provider-driver'));
    expect((await resolve('platform_1', null))?.name).toBe('provider-driver');
    expect(await resolve('platform_2', 'platform-2-default')).toBeNull();

    // A driver for the cloud profile comes before the provider's.
    const byProfile = await t.admin().post(PATH).send({ name: 'profile-driver', url: driver.url, signingSecret: SECRET, cloudProfiles: ['platform-1-default'] });
    expect(byProfile.status).toBe(200);
    await eventually(async () => expect((await resolve('platform_1', 'platform-1-default'))?.name).toBe('profile-driver'));
    expect((await resolve('platform_1', null))?.name).toBe('provider-driver');
    // Disabled, it serves nothing.
    expect((await t.admin().patch(`${PATH}/profile-driver`).send({ enabled: false })).status).toBe(200);
    await eventually(async () => expect((await resolve('platform_1', 'platform-1-default'))?.name).toBe('provider-driver'));
  });

  it('refuses bad input with a 400 naming the field, and a taken name or a served provider with 409', async () => {
    const base = { name: 'bad', url: driver.url, signingSecret: SECRET, cloudProviders: ['platform_2'] };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, cloudProviders: ['nope'] }, 'cloudProviders.0'],
      [{ ...base, cloudProviders: [], cloudProfiles: ['nope'] }, 'cloudProfiles.0'],
      [{ ...base, cloudProviders: [] }, 'cloudProviders'],
      [{ ...base, signingSecret: 'not-a-secret' }, 'signingSecret'],
      [{ ...base, signingSecret: undefined }, 'signingSecret'],
      [{ ...base, url: 'http://user:pw@127.0.0.1:1' }, 'url'],
      [{ ...base, url: 'ftp://127.0.0.1' }, 'url'],
      [{ ...base, name: 'Not A Name' }, 'name'],
      [{ ...base, timeoutMs: 10 }, 'timeoutMs'],
    ];
    for (const [body, field] of cases) {
      const res = await t.admin().post(PATH).send(body);
      expect({ field, status: res.status }).toEqual({ field, status: 400 });
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    const taken = await t.admin().post(PATH).send({ ...base, name: 'provider-driver' });
    expect(taken.status).toBe(409);
    const served = await t.admin().post(PATH).send({ ...base, cloudProviders: ['platform_1'] });
    expect(served.status).toBe(409);
    expect(served.body.message).toContain("'provider-driver' already serves cloud provider 'platform_1'");
    expect((await t.admin().get(`${PATH}/nope`)).status).toBe(404);
    expect((await t.admin().patch(`${PATH}/nope`).send({ enabled: true })).status).toBe(404);
    expect((await t.admin().delete(`${PATH}/nope`)).status).toBe(404);
    expect((await t.admin().post(`${PATH}/nope/health-check`)).status).toBe(404);
    expect(await t.db.query(`SELECT name FROM cluster_drivers WHERE name = 'bad'`)).toEqual([]);
  });

  it('changes only what a PATCH names, writes nothing for a PATCH that changes nothing, and records a secret rotation without the secret', async () => {
    const count = async () => (await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE type = 'CLUSTER_DRIVER_UPDATED'`))[0].n;
    const before = await count();
    const same = await t.admin().patch(`${PATH}/provider-driver`).send({ cloudProviders: ['platform_1'], signingSecret: SECRET });
    expect(same.status).toBe(200);
    expect(await count()).toBe(before);
    const changed = await t.admin().patch(`${PATH}/provider-driver`).send({ signingSecret: OTHER_SECRET, timeoutMs: 2000 });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ timeoutMs: 2000, maxInFlight: 16, cloudProviders: ['platform_1'] });
    const [audit] = await t.db.query(`SELECT details FROM audit_events WHERE type = 'CLUSTER_DRIVER_UPDATED' ORDER BY id DESC LIMIT 1`);
    expect(audit.details).toEqual({ timeoutMs: { old: 15000, new: 2000 }, signingSecret: { old: '[redacted]', new: '[redacted]' } });
  });

  it("health-checks a driver through its signed capabilities, records the result and counts the calls in the driver's metrics", async () => {
    // provider-driver now signs with OTHER_SECRET: the driver refuses it.
    const refused = await t.admin().post(`${PATH}/provider-driver/health-check`);
    expect(refused.status).toBe(200);
    expect(refused.body.health).toMatchObject({ status: 'UNHEALTHY', checkedAt: expect.any(String), message: 'BadSignature: signature refused', driver: null });
    // Back to the driver's secret: healthy, with what it answered.
    expect((await t.admin().patch(`${PATH}/provider-driver`).send({ signingSecret: SECRET })).status).toBe(200);
    const healthy = await t.admin().post(`${PATH}/provider-driver/health-check`);
    expect(healthy.body.health).toEqual({
      status: 'HEALTHY',
      checkedAt: expect.any(String),
      message: null,
      protocolVersion: 'v1',
      driver: { name: 'capabilities-only', version: '0.1.0' },
      cloudProviders: ['platform_1'],
      features: ['stopStart'],
    });
    expect((await t.admin().get(`${PATH}/provider-driver`)).body.health.status).toBe('HEALTHY');
    const audit = await t.db.query(`SELECT details FROM audit_events WHERE type = 'CLUSTER_DRIVER_HEALTH_CHECKED' ORDER BY id`);
    expect(audit.map((a: { details: { healthStatus: { new: string } } }) => a.details.healthStatus.new)).toEqual(['UNHEALTHY', 'HEALTHY']);

    // An unreachable driver.
    const gone = await t.admin().post(PATH).send({ name: 'gone-driver', url: 'http://127.0.0.1:9', signingSecret: SECRET, cloudProviders: ['platform_3'] });
    expect(gone.status).toBe(200);
    const down = await t.admin().post(`${PATH}/gone-driver/health-check`);
    expect(down.body.health).toMatchObject({ status: 'UNHEALTHY', message: expect.stringMatching(/^DriverUnreachable: The cluster driver 'gone-driver' could not be reached/) });

    const metrics = (await t.admin().get('/metrics')).text;
    expect(metrics).toContain('cms_cluster_driver_calls_total{driver="provider-driver",operation="capabilities",outcome="ok"} 1');
    expect(metrics).toContain('cms_cluster_driver_calls_total{driver="provider-driver",operation="capabilities",outcome="terminal"} 1');
    expect(metrics).toContain('cms_cluster_driver_calls_total{driver="gone-driver",operation="capabilities",outcome="retryable"} 1');
    expect(metrics).toMatch(/cms_cluster_driver_call_duration_seconds_count\{driver="provider-driver",operation="capabilities"\} 2/);
    expect(metrics).toContain('# TYPE cms_cluster_driver_calls_in_flight gauge');
    expect(metrics).not.toContain(SECRET.slice(6, 30));
  });

  it('refuses to delete or disable a driver while it serves clusters that are not deleted', async () => {
    const f = await createOrgFixture(t);
    const created = await t.as(f.users.admin.token).post(clustersPath(f)).send(clusterBody(f));
    expect(created.status).toBe(200);
    const del = await t.admin().delete(`${PATH}/provider-driver`);
    expect(del.status).toBe(409);
    expect(del.body.message).toContain('serves 1 cluster(s)');
    expect((await t.admin().patch(`${PATH}/provider-driver`).send({ enabled: false })).status).toBe(409);
    expect((await t.admin().patch(`${PATH}/provider-driver`).send({ cloudProviders: ['platform_2'] })).status).toBe(409);
    // Serving the cluster's profile instead keeps it served: allowed.
    expect((await t.admin().patch(`${PATH}/provider-driver`).send({ cloudProviders: [], cloudProfiles: ['platform-1-default'] })).status).toBe(200);
    // A driver that serves nothing of it goes: 204, audited.
    const gone = await t.admin().delete(`${PATH}/gone-driver`);
    expect(gone.status).toBe(204);
    expect((await t.admin().get(`${PATH}/gone-driver`)).status).toBe(404);
    expect(await t.db.query(`SELECT type FROM audit_events WHERE type = 'CLUSTER_DRIVER_DELETED'`)).toEqual([{ type: 'CLUSTER_DRIVER_DELETED' }]);
  });
});
