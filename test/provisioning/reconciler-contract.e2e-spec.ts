import { ClusterDriverResolver } from '../../src/cluster-drivers/cluster-driver-resolver';
import type { ApplyRequest } from '../../src/cluster-drivers/driver-contract';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, reconciler, settle } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';
import { RecordingDriver } from './recording-driver';

/**
 * The reconciler on the driver contract (issue 38): desired-state changes of a started cluster reach the driver with
 * the full spec and an idempotency key per generation; Reconciling until the driver reports the generation applied,
 * then Ready; changes made during a call follow in order; lost work is asked for again with the same key; terminal
 * errors show Degraded without a retry storm.
 */
describe('reconciler on the driver contract', () => {
  let t: TestApp;
  let f: OrgFixture;
  let driver: RecordingDriver;
  let identity: string;
  const path = () => `${clustersPath(f)}/web`;

  beforeAll(async () => {
    t = await startTestApp();
    driver = new RecordingDriver();
    jest.spyOn(t.app.get<ClusterDriverResolver>(ClusterDriverResolver as never), 'resolve').mockResolvedValue(driver);
    f = await createOrgFixture(t);
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'web' }));
    expect(res.status).toBe(200);
    identity = res.body.identity;
    await settle(t);
  });
  afterAll(() => t.close());

  const get = async () => (await t.as(f.users.viewer.token).get(path())).body;
  const condition = (body: { conditions: { type: string }[] }, type: string) => body.conditions.find((c) => c.type === type);
  const applies = () => driver.requestsOf(identity) as ApplyRequest[];
  /** A pass after the driver's retry hint has passed. */
  const pass = async () => {
    t.clock.advance(10_000);
    return reconciler(t).runOnce();
  };

  it('creates the cluster through apply calls with the full spec, one idempotency key per generation', async () => {
    const c = await get();
    expect(c).toMatchObject({ status: 'started', provisionStatus: 'DONE', generation: 1, observedGeneration: 1 });
    expect(condition(c, 'Ready')).toMatchObject({ status: 'True', observedGeneration: 1 });
    const first = applies()[0];
    expect(first).toMatchObject({
      idempotencyKey: `${identity}:1`,
      operation: { kind: 'create', step: 'provisioning' },
      cluster: {
        identity,
        generation: 1,
        slug: 'web',
        organisation: { slug: f.orgSlug },
        environment: { slug: 'production', type: 'production' },
        cloudProvider: 'platform_1',
        cloudProfile: 'platform-1-default',
        region: 'eu-central-1',
        version: '1.31.5',
        desiredState: 'running',
        oidc: { clientId: `cluster-${identity}` },
        nodePools: [{ name: 'workers', generation: 1, nodeType: { name: 'm5.large', cpu: 2, memoryMb: 8192 }, minSize: 2, maxSize: 4, selfManaged: false }],
      },
      cloudAccount: { identity: f.accountIdentity, name: 'Main account', cloudProvider: 'platform_1' },
    });
    expect(first.cluster.zones.length).toBeGreaterThan(0);
    // Create, provisioning steps and start are all generation 1: every call carries the same key and the same spec.
    expect(new Set(applies().map((r) => r.idempotencyKey))).toEqual(new Set([`${identity}:1`]));
    expect(driver.conflicts).toEqual([]);
  });

  it('a pool resize, an add-on change and a version change reach the driver; Reconciling until applied, then Ready', async () => {
    driver.callsToApply = 2; // the provider works asynchronously: the generation is applied at the second call
    try {
    const pools = (await t.as(f.users.viewer.token).get(`${path()}/pools`)).body;
    const resized = await t.as(f.users.member.token).put(`${path()}/pools/${pools[0].identity}`).send({ name: 'workers', nodeSize: 'm5.large', minSize: 3, maxSize: 5 });
    expect(resized.status).toBe(200);
    const g = resized.body.generation as number;
    expect((await get()).observedGeneration).toBe(g - 1);

    const before = applies().length;
    expect(await reconciler(t).runOnce()).toBe(0); // called, not applied yet
    const call = applies()[before];
    expect(call).toMatchObject({ idempotencyKey: `${identity}:${g}`, operation: { kind: 'update', step: 'update' } });
    expect(call.cluster.nodePools[0]).toMatchObject({ identity: pools[0].identity, minSize: 3, maxSize: 5, generation: g });
    let c = await get();
    expect(c).toMatchObject({ generation: g, observedGeneration: g - 1, status: 'started' });
    expect(condition(c, 'Reconciling')).toMatchObject({ status: 'True' });
    expect(condition(c, 'Ready')).toMatchObject({ status: 'False' });
    let pool = (await t.as(f.users.viewer.token).get(`${path()}/pools`)).body[0];
    expect(pool).toMatchObject({ generation: g, observedGeneration: 1 });
    expect(condition(pool, 'Reconciling')).toMatchObject({ status: 'True' });

    expect(await pass()).toBe(1);
    c = await get();
    expect(c).toMatchObject({ generation: g, observedGeneration: g });
    expect(condition(c, 'Ready')).toMatchObject({ status: 'True', reason: 'Applied', observedGeneration: g });
    expect(condition(c, 'Reconciling')).toMatchObject({ status: 'False' });
    pool = (await t.as(f.users.viewer.token).get(`${path()}/pools`)).body[0];
    expect(pool).toMatchObject({ generation: g, observedGeneration: g, provisionStatus: 'DONE' });
    expect(condition(pool, 'Ready')).toMatchObject({ status: 'True' });
    const [applied] = await t.db.query(`SELECT details FROM audit_events WHERE cluster_slug = 'web' AND type = 'CLUSTER_CHANGES_APPLIED' ORDER BY id DESC LIMIT 1`);
    expect(applied.details.generation).toEqual({ old: g - 1, new: g });
    const [activity] = await t.db.query(`SELECT message FROM activity_events WHERE type = 'CLUSTER_CHANGES_APPLIED' ORDER BY id DESC LIMIT 1`);
    expect(activity.message).toBe(`system applied generation ${g} of cluster production/web`);

    // An add-on.
    const addon = await t.as(f.users.member.token).patch(path()).send({ addons: { 'cert-manager': { enabled: true, customValues: { replicas: '2' } } } });
    expect(addon.status).toBe(200);
    await reconciler(t).runOnce();
    expect(applies().at(-1)!.cluster.addons).toContainEqual({ name: 'cert-manager', enabled: true, settings: { replicas: '2' } });
    expect((await get()).observedGeneration).toBe(g);
    await pass();
    expect((await get()).observedGeneration).toBe(g + 1);

    // A version (the upgrade step: CLUSTER_UPGRADED once the driver reports the version).
    const upgrade = await t.as(f.users.member.token).patch(path()).send({ version: '1.31.6' });
    expect(upgrade.status).toBe(200);
    await reconciler(t).runOnce();
    expect(applies().at(-1)).toMatchObject({ operation: { kind: 'upgrade', step: 'upgrade' }, cluster: { version: '1.31.6', generation: g + 2 } });
    expect((await t.as(f.users.viewer.token).get(`${path()}?includeDetails=true`)).body.actualState.version).toBe('1.31.5');
    await pass();
    c = (await t.as(f.users.viewer.token).get(`${path()}?includeDetails=true`)).body;
    expect(c).toMatchObject({ version: '1.31.6', observedGeneration: g + 2, actualState: { version: '1.31.6' } });
    expect(condition(c, 'Ready')).toMatchObject({ status: 'True' });
    const [upgraded] = await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE cluster_slug = 'web' AND type = 'CLUSTER_UPGRADED'`);
    expect(upgraded.n).toBe(1);
    expect(driver.conflicts).toEqual([]);
    } finally {
      driver.callsToApply = 1;
    }
  });

  it('a change made during a driver call is applied next, in order, and none is lost', async () => {
    const start = (await get()).generation as number;
    let changed = false;
    driver.during = async (req) => {
      if (changed || req.cluster.generation !== start + 1) return;
      changed = true;
      // While the driver works on generation start+1, the user changes the cluster again.
      const res = await t.as(f.users.member.token).patch(path()).send({ ipWhitelist: [{ cidr: { ipRange: '198.51.100.0/24' }, description: 'vpn' }] });
      expect(res.status).toBe(200);
    };
    try {
      expect((await t.as(f.users.member.token).patch(path()).send({ enableNetworkEncryption: true })).status).toBe(200);
      await settle(t);
    } finally {
      driver.during = null;
    }
    const updates = applies().filter((r) => r.cluster.generation > start);
    expect(updates.map((r) => r.cluster.generation)).toEqual([start + 1, start + 2]);
    expect(updates[0].cluster).toMatchObject({ networkEncryption: true, ipAllowList: [] });
    expect(updates[1].cluster).toMatchObject({ networkEncryption: true, ipAllowList: [{ cidr: '198.51.100.0/24', description: 'vpn' }] });
    const c = await get();
    expect(c).toMatchObject({ generation: start + 2, observedGeneration: start + 2 });
    expect(condition(c, 'Ready')).toMatchObject({ status: 'True' });
  });

  it('work whose record is lost (the lease taken over, as when a worker dies) is asked for again with the same key: no effect repeats', async () => {
    const start = (await get()).generation as number;
    let stolen = false;
    driver.during = async (req) => {
      if (stolen || req.cluster.generation !== start + 1) return;
      stolen = true;
      // Another replica took the cluster over while this call ran: this worker's record will find its lease gone.
      await t.db.query(`UPDATE clusters SET reconcile_lease_token = gen_random_uuid(), reconcile_lease_until = $2 WHERE identity = $1`, [identity, t.clock.now()]);
    };
    try {
      expect((await t.as(f.users.member.token).patch(path()).send({ podSecurityStandardsProfile: 'restricted' })).status).toBe(200);
      expect(await reconciler(t).runOnce()).toBe(0); // the step's record was superseded
      expect((await get()).observedGeneration).toBe(start);
      await settle(t);
    } finally {
      driver.during = null;
    }
    const calls = applies().filter((r) => r.cluster.generation === start + 1);
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(new Set(calls.map((r) => r.idempotencyKey))).toEqual(new Set([`${identity}:${start + 1}`]));
    expect(driver.acted.filter((k) => k === `${identity}:${start + 1}`)).toHaveLength(1);
    expect(driver.conflicts).toEqual([]);
    expect((await get()).observedGeneration).toBe(start + 1);
  });

  it('a terminal error shows Degraded with the driver message, without a retry storm, until the spec changes', async () => {
    const start = (await get()).generation as number;
    driver.failWith = (req) =>
      req.cluster.nodePools.some((p) => p.nodeType.name === 'm5.2xlarge')
        ? { error: { class: 'terminal', code: 'QuotaExceeded', message: 'The account has no quota for m5.2xlarge in eu-central-1' } }
        : null;
    try {
      const pools = (await t.as(f.users.viewer.token).get(`${path()}/pools`)).body;
      expect((await t.as(f.users.member.token).put(`${path()}/pools/${pools[0].identity}`).send({ name: 'workers', nodeSize: 'm5.2xlarge', minSize: 3, maxSize: 5 })).status).toBe(200);
      await reconciler(t).runOnce();
      let c = (await t.as(f.users.viewer.token).get(path())).body;
      expect(c).toMatchObject({ status: 'started', generation: start + 1, observedGeneration: start });
      expect(condition(c, 'Degraded')).toMatchObject({ status: 'True', reason: 'QuotaExceeded', message: 'The account has no quota for m5.2xlarge in eu-central-1' });
      expect(condition(c, 'Ready')).toMatchObject({ status: 'False', reason: 'Degraded' });
      const [row] = await t.db.query(`SELECT last_error, next_attempt_at FROM clusters WHERE identity = $1`, [identity]);
      expect(row.last_error).toBe('The account has no quota for m5.2xlarge in eu-central-1');
      expect(new Date(row.next_attempt_at).getTime()).toBeGreaterThanOrEqual(t.clock.now().getTime() + 3600_000 - 1000);

      // No retry storm: passes over the next minutes call nothing.
      const calls = applies().length;
      for (let i = 0; i < 5; i++) {
        t.clock.advance(60_000);
        await reconciler(t).runOnce();
      }
      expect(applies().length).toBe(calls);
      const audits = await t.db.query(`SELECT details FROM audit_events WHERE cluster_slug = 'web' AND type = 'CLUSTER_DEGRADED'`);
      expect(audits).toHaveLength(1);
      expect(audits[0].details.error).toEqual({ old: null, new: 'QuotaExceeded: The account has no quota for m5.2xlarge in eu-central-1' });

      // A change of the spec is tried at once.
      expect((await t.as(f.users.member.token).put(`${path()}/pools/${pools[0].identity}`).send({ name: 'workers', nodeSize: 'm5.xlarge', minSize: 3, maxSize: 5 })).status).toBe(200);
      await settle(t);
      expect(applies().length).toBeGreaterThan(calls);
      c = (await t.as(f.users.viewer.token).get(path())).body;
      expect(c).toMatchObject({ generation: start + 2, observedGeneration: start + 2 });
      expect(condition(c, 'Degraded')).toMatchObject({ status: 'False' });
      expect(condition(c, 'Ready')).toMatchObject({ status: 'True' });
    } finally {
      driver.failWith = null;
    }
  });

  it('a driver that cannot be reached (a retryable call error) backs off and keeps the cluster as it is', async () => {
    const start = (await get()).generation as number;
    driver.failWith = () => ({ error: { class: 'retryable', code: 'DriverUnreachable', message: 'The cluster driver cannot be reached' }, throwIt: true });
    try {
      expect((await t.as(f.users.member.token).patch(path()).send({ enableHighAvailability: true })).status).toBe(200);
      await reconciler(t).runOnce();
      const [row] = await t.db.query(`SELECT status, attempts, last_error, next_attempt_at FROM clusters WHERE identity = $1`, [identity]);
      expect(row).toMatchObject({ status: 'started', attempts: 1, last_error: 'The cluster driver cannot be reached' });
      expect(new Date(row.next_attempt_at).getTime()).toBeGreaterThan(t.clock.now().getTime());
      const c = await get();
      expect(condition(c, 'Reconciling')).toMatchObject({ status: 'True', reason: 'DriverRetrying' });
      const calls = applies().length;
      await reconciler(t).runOnce(); // backing off: no call
      expect(applies().length).toBe(calls);
    } finally {
      driver.failWith = null;
    }
    await pass();
    await settle(t);
    expect(await get()).toMatchObject({ generation: start + 1, observedGeneration: start + 1, status: 'started' });
  });

  it('a retryable error in the observation loses the cluster to unknown (Ready Unknown) until an observation finds it', async () => {
    const start = (await get()).generation as number;
    let failures = 1;
    driver.failWith = () => (failures-- > 0 ? { error: { class: 'retryable', code: 'Throttled', message: 'The provider throttled the request' } } : null);
    try {
      expect((await t.as(f.users.member.token).patch(path()).send({ enableHighAvailability: false })).status).toBe(200);
      await reconciler(t).runOnce();
      let c = await get();
      expect(c.status).toBe('unknown');
      expect(condition(c, 'Ready')).toMatchObject({ status: 'Unknown', reason: 'DriverError', message: 'The provider throttled the request' });
      await pass();
      await settle(t);
      c = await get();
      expect(c).toMatchObject({ status: 'started', generation: start + 1, observedGeneration: start + 1 });
      expect(condition(c, 'Ready')).toMatchObject({ status: 'True' });
    } finally {
      driver.failWith = null;
    }
  });

  it('stop, start and delete go through the contract', async () => {
    expect((await t.as(f.users.member.token).patch(path()).send({ status: 'stopping' })).status).toBe(200);
    await settle(t);
    const stop = applies().at(-1)!;
    expect(stop).toMatchObject({ operation: { kind: 'stop' }, cluster: { desiredState: 'stopped' } });
    expect(await get()).toMatchObject({ status: 'stopped' });
    expect((await t.as(f.users.member.token).patch(path()).send({ status: 'starting' })).status).toBe(200);
    await settle(t);
    expect(applies().at(-1)).toMatchObject({ operation: { kind: 'start' }, cluster: { desiredState: 'running' } });
    const c = await get();
    expect(c).toMatchObject({ status: 'started' });
    expect(c.observedGeneration).toBe(c.generation);
    expect((await t.as(f.users.member.token).delete(path())).status).toBe(200);
    await settle(t);
    const del = driver.requestsOf(identity).at(-1)!;
    expect(del).toMatchObject({ idempotencyKey: `${identity}:${c.generation}:delete`, operation: { kind: 'delete' } });
    const [row] = await t.db.query(`SELECT status FROM clusters WHERE identity = $1`, [identity]);
    expect(row.status).toBe('deleted');
  });
});
