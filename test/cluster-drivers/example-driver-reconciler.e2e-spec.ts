import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { observeRequest } from '../../drivers/conformance/fixtures';
import type { DesiredClusterSpec } from '../../src/cluster-drivers/driver-contract';
import { HTTP_DRIVER_DEFAULTS, HttpClusterDriver } from '../../src/cluster-drivers/http-cluster-driver';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, reconciler } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';
import { startExampleDriver } from './example-driver-process';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo=';

/**
 * The service drives clusters through the example driver running as a separate process, registered through the
 * administrators' API: created, a pool resized (Reconciling until the driver reports the generation, then Ready),
 * and the driver killed in the middle of an operation and started again: nothing is lost, no effect repeated.
 */
describe('clusters through the example driver (a separate process)', () => {
  let t: TestApp;
  let f: OrgFixture;
  let dir: string;
  let stateFile: string;
  let driver: Awaited<ReturnType<typeof startExampleDriver>>;
  let port: string;
  const clusterPath = () => `${clustersPath(f)}/web`;
  const get = async () => (await t.as(f.users.viewer.token).get(clusterPath())).body;
  const pools = async () => (await t.as(f.users.viewer.token).get(`${clusterPath()}/pools`)).body;
  const condition = (body: { conditions?: { type: string; status: string }[] }, type: string) => body.conditions?.find((c) => c.type === type);
  /** What the example driver itself observes of the cluster (asked directly, as the conformance kit does). */
  const observed = async (identity: string) => {
    const client = new HttpClusterDriver({ ...HTTP_DRIVER_DEFAULTS, name: 'direct', url: `http://127.0.0.1:${port}`, secret: SECRET, backoffBaseMs: 0, backoffMaxMs: 0 });
    return client.observe(observeRequest({ identity, generation: 1 } as DesiredClusterSpec));
  };
  /** Reconciler passes (the driver's retry hints passed on the service's clock, the driver's work in real time) until `done`. */
  const until = async (done: () => Promise<boolean>, what: string) => {
    for (let i = 0; i < 300; i++) {
      if (await done()) return;
      t.clock.advance(10_000);
      await reconciler(t).runOnce();
      await new Promise((r) => setTimeout(r, 30));
    }
    throw new Error(`not reached: ${what} (cluster: ${JSON.stringify(await get())})`);
  };

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cms-driver-e2e-'));
    stateFile = path.join(dir, 'state.json');
    driver = await startExampleDriver({ secret: SECRET, stateFile, stepMs: 20 });
    port = new URL(driver.url).port;
    t = await startTestApp();
    const registered = await t.admin().post('/admin/v1/cluster-drivers').send({ name: 'example', url: driver.url, signingSecret: SECRET, cloudProviders: ['platform_1'], timeoutMs: 2000 });
    expect(registered.status).toBe(200);
    expect((await t.admin().post('/admin/v1/cluster-drivers/example/health-check')).body.health).toMatchObject({ status: 'HEALTHY', driver: { name: 'example-driver' } });
    f = await createOrgFixture(t);
  });
  afterAll(async () => {
    await driver.stop();
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('creates the cluster through the example driver', async () => {
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'web' }));
    expect(res.status).toBe(200);
    await until(async () => (await get()).status === 'started' && condition(await get(), 'Ready')?.status === 'True', 'started and Ready');
    const c = await get();
    expect(c).toMatchObject({ status: 'started', provisionStatus: 'DONE', generation: 1, observedGeneration: 1 });
    expect(await observed(c.identity)).toMatchObject({ exists: true, state: 'running', observedGeneration: 1, nodePools: [{ readyNodes: 2, desiredNodes: 2, ready: true }] });
  });

  it('resizes a pool: Reconciling until the example driver reports the generation, then Ready', async () => {
    const [pool] = await pools();
    const resized = await t.as(f.users.member.token).put(`${clusterPath()}/pools/${pool.identity}`).send({ name: pool.name, nodeSize: 'm5.large', minSize: 3, maxSize: 5 });
    expect(resized.status).toBe(200);
    const g = resized.body.generation as number;
    let c = await get();
    expect(c).toMatchObject({ generation: g, observedGeneration: g - 1 });
    expect(condition(c, 'Reconciling')).toMatchObject({ status: 'True' });
    expect(condition((await pools())[0], 'Reconciling')).toMatchObject({ status: 'True' });
    await until(async () => (await get()).observedGeneration === g, `observedGeneration ${g}`);
    c = await get();
    expect(condition(c, 'Ready')).toMatchObject({ status: 'True' });
    expect(condition(c, 'Reconciling')).toMatchObject({ status: 'False' });
    const [after] = await pools();
    expect(after).toMatchObject({ minSize: 3, provisionStatus: 'DONE', observedGeneration: g });
    expect(condition(after, 'Ready')).toMatchObject({ status: 'True' });
    expect((await observed(c.identity)).nodePools[0]).toMatchObject({ desiredNodes: 3, readyNodes: 3, ready: true });
  });

  it('loses nothing and repeats no effect when the driver is killed in the middle of an operation', async () => {
    // A slower cloud for this test (a node a minute), on the same port and state file.
    await driver.stop();
    driver = await startExampleDriver({ secret: SECRET, stateFile, stepMs: 60_000, extra: ['--port', port] });
    const [pool] = await pools();
    const resized = await t.as(f.users.member.token).put(`${clusterPath()}/pools/${pool.identity}`).send({ name: pool.name, nodeSize: 'm5.large', minSize: 4, maxSize: 5 });
    const g = resized.body.generation as number;
    const identity = (await get()).identity as string;
    // One pass hands the generation to the driver (it answers at once and works node by node) ...
    t.clock.advance(10_000);
    await reconciler(t).runOnce();
    const key = `${identity}:${g}`;
    const keys = () => (JSON.parse(fs.readFileSync(stateFile, 'utf8')).clusters[identity].keys as string[]).filter((k) => k === key);
    expect(keys()).toEqual([key]);
    expect((await observed(identity)).nodePools[0]).toMatchObject({ desiredNodes: 4, readyNodes: 3, ready: false });
    // ... and the driver dies before it is done.
    await driver.stop('SIGKILL');
    for (let i = 0; i < 2; i++) {
      t.clock.advance(10_000);
      await reconciler(t).runOnce();
    }
    let c = await get();
    expect(c).toMatchObject({ generation: g, observedGeneration: g - 1, status: 'started' });
    expect(condition(c, 'Reconciling')).toMatchObject({ status: 'True' });
    expect(condition(c, 'Degraded')?.status ?? 'False').toBe('False');
    expect((await pools())[0]).toMatchObject({ minSize: 4 });

    // Started again on the same port and state file: the operation goes on, and ends at the same generation.
    driver = await startExampleDriver({ secret: SECRET, stateFile, stepMs: 20, extra: ['--port', port] });
    await until(async () => (await get()).observedGeneration === g, `observedGeneration ${g} after the restart`);
    c = await get();
    expect(condition(c, 'Ready')).toMatchObject({ status: 'True' });
    expect((await observed(identity)).nodePools[0]).toMatchObject({ desiredNodes: 4, readyNodes: 4 });
    // The key the service sent again after the restart was known: acted on once.
    expect(keys()).toEqual([key]);
    const metrics = (await t.admin().get('/metrics')).text;
    expect(metrics).toMatch(/cms_cluster_driver_calls_total\{driver="example",operation="(apply|observe)",outcome="(retryable|backoff)"\} [1-9]/);
  });
});
