import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, reconciler, settle } from './cluster-fixtures';

describe('cluster lifecycle through the API and the reconciler', () => {
  let t: TestApp;
  let f: OrgFixture;

  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
  });
  afterAll(() => t.close());

  const get = (slug: string, q = '') => t.as(f.users.viewer.token).get(`${clustersPath(f)}/${slug}${q}`);
  const patch = (slug: string, body: object) => t.as(f.users.member.token).patch(`${clustersPath(f)}/${slug}`).send(body);

  it('creates a cluster answering the ClusterResponse, with node pools, tenant and audit', async () => {
    const res = await t
      .as(f.users.member.token)
      .post(clustersPath(f))
      .send(clusterBody(f, { name: 'Web App', enableHA: true, enablePodSecurityStandards: true, updateChannel: 'stable' }));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: 'Web App',
      slug: { slugValue: 'web-app' },
      customerSlug: { slugValue: f.orgSlug },
      environmentSlug: { slugValue: 'production' },
      status: 'new',
      provisionStatus: 'ACCEPTED',
      desiredStatus: 'starting',
      cloudProvider: 'platform_1',
      region: 'eu-central-1',
      version: '1.31.5',
      highlyAvailable: true,
      podSecurityStandardsProfile: 'baseline',
      cni: 'cilium',
      platformOIDC: true,
      deleteProtection: false,
      cloudAccount: {
        displayName: 'Main account',
        identity: f.accountIdentity,
        primaryCloudCredentials: { displayName: 'deploy key', identity: f.credentialIdentity, isPrimary: true },
      },
      cloudCredentials: { displayName: 'deploy key', identity: f.credentialIdentity, isPrimary: true },
      updateChannel: { name: 'stable', available: true, kubernetesClusterVersion: '1.31.6' },
      observabilityTenant: { slug: 'production-web-app', available: true, customer: f.orgSlug, cluster: { slug: 'web-app' } },
      poolName: 'workers',
      cpu: 4,
      memory: 16384,
      maintenanceSchedule: null,
      ipWhitelist: [],
    });
    expect(Object.keys(res.body).sort()).toEqual(
      [
        'addons', 'platformOIDC', 'autoUpgrade', 'autoUpgradePolicy', 'upgradeAvailable', 'cloudAccount', 'cloudCredentials', 'cloudProvider', 'clusterPodSubnet', 'serviceSubnet',
        'cni', 'cpu', 'memory', 'createdAt', 'modifiedAt', 'deletedAt', 'customerIdentity', 'customerSlug', 'deleteProtection',
        'description', 'desiredStatus', 'enableMultiAvailabilityZones', 'enableNATGateway', 'enableNetworkEncryption',
        'environmentIdentity', 'environmentMetricsRules', 'environmentSlug', 'highlyAvailable', 'identity', 'ipWhitelist',
        'maintenanceSchedule', 'maintenanceExclusions', 'name', 'observabilityTenant', 'podSecurityStandardsProfile', 'poolID', 'poolName', 'provisionStatus',
        'region', 'slug', 'status', 'updateChannel', 'upgradeSoakHours', 'version', 'generation', 'observedGeneration', 'conditions',
      ].sort(),
    );
    expect(Object.keys(res.body.observabilityTenant).sort()).toEqual(
      ['available', 'cluster', 'createdAt', 'modifiedAt', 'deletedAt', 'customer', 'environment', 'id', 'identity', 'ipWhiteList', 'name', 'slug'].sort(),
    );
    expect(res.body.addons['metrics-server']).toEqual({ enabled: true, customValues: {} });
    expect(res.body).not.toHaveProperty('actualState');
    const audit = await t.db.query(`SELECT type, actor_username, cluster_slug, environment_slug FROM audit_events WHERE type = 'CLUSTER_CREATED'`);
    expect(audit).toEqual([{ type: 'CLUSTER_CREATED', actor_username: f.users.member.username, cluster_slug: 'web-app', environment_slug: 'production' }]);
    const activity = await t.db.query(`SELECT message FROM activity_events WHERE type = 'CLUSTER_CREATED'`);
    expect(activity[0].message).toBe(`${f.users.member.username} created cluster production/web-app`);
    const tenants = await t.db.query(`SELECT slug, deleted_at FROM observability_tenants WHERE organisation_id = $1`, [f.orgId]);
    expect(tenants).toEqual([{ slug: 'production-web-app', deleted_at: null }]);
  });

  it('walks every status step by step, observed by GET after each reconcile pass', async () => {
    const seen: [string, string, string | null][] = [];
    const observe = async () => {
      const r = await get('web-app', '?includeDetails=true');
      expect(r.status).toBe(200);
      seen.push([r.body.status, r.body.provisionStatus, r.body.desiredStatus]);
      return r.body;
    };
    await observe();
    for (let i = 0; i < 9; i++) {
      expect(await reconciler(t).runOnce()).toBe(1);
      await observe();
    }
    expect(seen).toEqual([
      ['new', 'ACCEPTED', 'starting'],
      ['provisioning', 'ACCEPTED', 'starting'],
      ['provisioning', 'OIDC_PROVISIONED', 'starting'],
      ['provisioning', 'CLUSTER_PROVISIONED', 'starting'],
      ['provisioning', 'INITIAL_NODE_POOLS_PROVISIONED', 'starting'],
      ['provisioning', 'INITIAL_ADDONS_PROVISIONED', 'starting'],
      ['provisioning', 'DONE', 'starting'],
      ['provisioned', 'DONE', 'starting'],
      ['starting', 'DONE', 'starting'],
      ['started', 'DONE', null],
    ]);
    expect(await reconciler(t).runOnce()).toBe(0);
    const started = await get('web-app', '?includeDetails=true');
    expect(started.body.actualState).toEqual({ collectedAt: expect.any(String), status: 'started', version: '1.31.5' });

    // stop
    const stop = await patch('web-app', { status: 'stopping' });
    expect(stop.status).toBe(200);
    expect(stop.body).toMatchObject({ status: 'started', desiredStatus: 'stopping', clusterAutoscalerSettings: {}, upstreamCluster: null, downstreamClusters: [] });
    await reconciler(t).runOnce();
    expect((await get('web-app')).body.status).toBe('stopping');
    await reconciler(t).runOnce();
    expect((await get('web-app')).body).toMatchObject({ status: 'stopped', desiredStatus: null });

    // start again
    expect((await patch('web-app', { status: 'starting' })).status).toBe(200);
    await reconciler(t).runOnce();
    expect((await get('web-app')).body.status).toBe('starting');
    await reconciler(t).runOnce();
    expect((await get('web-app')).body).toMatchObject({ status: 'started', desiredStatus: null });

    // delete (the DELETE alias)
    const del = await t.as(f.users.member.token).delete(`${clustersPath(f)}/web-app`);
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ status: 'started', desiredStatus: 'deleting' });
    await reconciler(t).runOnce();
    expect((await get('web-app')).body.status).toBe('deleting');
    await reconciler(t).runOnce();
    const gone = await get('web-app');
    expect(gone.status).toBe(404);
    expectErrorBody(gone.body, 404);

    const [row] = await t.db.query(`SELECT status, deleted_at, desired_status FROM clusters WHERE slug = 'web-app'`);
    expect(row.status).toBe('deleted');
    expect(row.deleted_at).not.toBeNull();
    const [tenant] = await t.db.query(`SELECT deleted_at, available FROM observability_tenants WHERE slug = 'production-web-app'`);
    expect(tenant.deleted_at).not.toBeNull();
    const list = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/clusters`);
    expect(list.body.totalElements).toBe(0);

    const steps = await t.db.query(
      `SELECT type, actor_username, details->'step'->>'new' AS step FROM audit_events WHERE cluster_slug = 'web-app' AND actor_username = 'system' ORDER BY id`,
    );
    expect(steps.map((s: { type: string; step: string }) => `${s.type}:${s.step}`)).toEqual([
      'CLUSTER_PROVISIONING_STEP_COMPLETED:provisioning',
      'CLUSTER_PROVISIONING_STEP_COMPLETED:OIDC_PROVISIONED',
      'CLUSTER_PROVISIONING_STEP_COMPLETED:CLUSTER_PROVISIONED',
      'CLUSTER_PROVISIONING_STEP_COMPLETED:INITIAL_NODE_POOLS_PROVISIONED',
      'CLUSTER_PROVISIONING_STEP_COMPLETED:INITIAL_ADDONS_PROVISIONED',
      'CLUSTER_PROVISIONING_STEP_COMPLETED:DONE',
      'CLUSTER_PROVISIONED:provisioned',
      'CLUSTER_STARTING:starting',
      'CLUSTER_STARTED:started',
      'CLUSTER_STOPPING:stopping',
      'CLUSTER_STOPPED:stopped',
      'CLUSTER_STARTING:starting',
      'CLUSTER_STARTED:started',
      'CLUSTER_DELETING:deleting',
      'CLUSTER_DELETED:deleted',
    ]);
    const activity = await t.db.query(`SELECT count(*)::int AS n FROM activity_events WHERE actor_username = 'system' AND organisation_id = $1`, [f.orgId]);
    expect(activity[0].n).toBe(15);
    const requests = await t.db.query(`SELECT type FROM audit_events WHERE cluster_slug = 'web-app' AND actor_username <> 'system' ORDER BY id`);
    expect(requests.map((r: { type: string }) => r.type)).toEqual([
      'CLUSTER_CREATED',
      'CLUSTER_STOP_REQUESTED',
      'CLUSTER_START_REQUESTED',
      'CLUSTER_DELETE_REQUESTED',
    ]);
  });

  it('a slug is free again once its cluster is deleted', async () => {
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'Web App' }));
    expect(res.status).toBe(200);
    await settle(t);
    expect((await get('web-app')).body.status).toBe('started');
  });

  it('resumes a cluster mid-provisioning after a restart (state lives in the row)', async () => {
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'resumable' }));
    expect(res.status).toBe(200);
    await reconciler(t).runOnce();
    await reconciler(t).runOnce();
    await reconciler(t).runOnce();
    expect((await get('resumable')).body.provisionStatus).toBe('CLUSTER_PROVISIONED');
    const url = t.databaseUrl;
    await t.close();
    t = await startTestApp({}, url);
    await settle(t);
    const after = await get('resumable');
    expect(after.body).toMatchObject({ status: 'started', provisionStatus: 'DONE' });
    const steps = await t.db.query(
      `SELECT details->'step'->>'new' AS step, count(*)::int AS n FROM audit_events a JOIN clusters c ON c.id = a.cluster_id
        WHERE c.slug = 'resumable' AND a.actor_username = 'system' GROUP BY 1`,
    );
    expect(steps).toHaveLength(9);
    for (const s of steps) expect(s.n).toBe(1);
  });
});
