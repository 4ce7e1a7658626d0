/**
 * The 71 functions of the original Go client (54 of `Client`, 17 of `AdminClient`), each as the requests it sends
 * (method, path, query, body: written from reading the client, in the order its Terraform provider calls them) and
 * the struct its answer is decoded into (client-types.ts). A function also states what its caller needs from the
 * result, so "decodes, but empty" is not taken for "works".
 */
import * as T from './client-types';
import { ClientCallError, OriginalClient } from './original-client';
import { providerClusterCreate, providerDefaultAddons } from './terraform-provider';

/** What the sequence prepared through the service's own API, and what earlier calls produced. */
export interface ClientState {
  org: string;
  orgIdentity: string;
  env: string;
  clusterSlug: string;
  clusterIdentity: string;
  byonClusterSlug: string;
  byonPoolIdentity: string;
  tenant: string;
  accountIdentity: string;
  credentialIdentity: string;
  /** Resources prepared for the functions that change or delete one, so no function depends on another's result. */
  spare: {
    account: string;
    credential: string;
    env: string;
    schedule: string;
    /** Slug of a cluster for DeleteCluster. */
    cluster: string;
    /** Identity of the cluster of `upgrade`. */
    upgradeCluster: string;
    poolId: string;
    silence: string;
    upgrade: string;
    version: string;
  };
  /** A version number no other run uses (CreateClusterVersion). */
  newVersion: string;
  /** Filled by the functions as they run, for the caller's checks. */
  made: Record<string, string>;
}

export interface ClientFunction {
  name: string;
  client: 'Client' | 'AdminClient';
  /** The requests, as the table shows them. */
  requests: string;
  /** Set when the function cannot work without the original service's product names (why). */
  productName?: string;
  run(c: OriginalClient, admin: OriginalClient, s: ClientState): Promise<void>;
}

function expectThat(ok: boolean, message: string): void {
  if (!ok) throw new ClientCallError(`decoded, but ${message}`);
}

type Rec = Record<string, unknown>;
const withCompute = '?show-compute=true';
const iso = (msFromNow: number) => new Date(Date.now() + msFromNow).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Functions of the client built from other functions (GetClusters, GetNodePools...) repeat their requests. */
async function clustersByOrg(c: OriginalClient, org: string) {
  return (await c.paged<Rec>(`/api/v1/orgs/${org}/clusters?show-compute=true`, T.Cluster)).content;
}
async function poolsOf(c: OriginalClient, org: string, cluster: Rec) {
  return c.result<Rec[]>('GET', `/api/v1/orgs/${org}/clusters/${cluster.environmentSlug}/${cluster.slug}/pools`, { kind: 'slice', elem: T.NodePool });
}

export const CLIENT_FUNCTIONS: ClientFunction[] = [
  // ---- organisation, catalog (data sources) -----------------------------------------------------------------
  {
    name: 'GetMemberships',
    client: 'Client',
    requests: 'GET /api/v1/memberships?page=N',
    async run(c, _a, s) {
      const { content } = await c.paged<Rec>('/api/v1/memberships', T.Membership);
      expectThat(content.length > 0, 'no memberships');
      // The provider's acloud_organisation data source keeps `id`, `name`, `slug` and `email`.
      const mine = content.find((m) => m.slug === s.org);
      expectThat(mine !== undefined && mine.id === s.orgIdentity, `id is ${String(mine?.id)}, not the organisation's identity`);
    },
  },
  {
    name: 'GetOrganisation',
    client: 'Client',
    requests: 'GET /api/v1/organisations/{org}',
    async run(c, _a, s) {
      const o = await c.result<Rec>('GET', `/api/v1/organisations/${s.org}`, T.Organisation);
      expectThat(o.slug === s.org, 'slug is not the organisation slug');
    },
  },
  {
    name: 'GetCloudProviders',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/cloud-providers?page=N',
    async run(c, _a, s) {
      const { content } = await c.paged<Rec>(`/api/v1/orgs/${s.org}/cloud-providers`, T.CloudProvider);
      expectThat(content.some((p) => p.slug === 'platform_1' || p.type === 'platform_1'), 'platform_1 is not listed');
    },
  },
  {
    name: 'GetRegions',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/cloud-providers/{provider}/regions?page=N',
    async run(c, _a, s) {
      const { content } = await c.paged<Rec>(`/api/v1/orgs/${s.org}/cloud-providers/platform_1/regions`, T.Region);
      expectThat(content.some((r) => r.slug === 'eu-central-1'), 'eu-central-1 is not listed');
    },
  },
  {
    name: 'GetAvailabilityZones',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/cloud-providers/{provider}/regions/{region}/availability-zones?page=N',
    async run(c, _a, s) {
      const { content } = await c.paged<Rec>(`/api/v1/orgs/${s.org}/cloud-providers/platform_1/regions/eu-central-1/availability-zones`, T.AvailabilityZone);
      expectThat(content.length > 0, 'no zones');
    },
  },
  {
    name: 'GetNodeTypes',
    client: 'Client',
    requests: 'GET /api/v1/cloud-providers/{provider}/nodetypes?page=N',
    async run(c) {
      const { content } = await c.paged<Rec>('/api/v1/cloud-providers/platform_1/nodetypes', T.NodeType);
      expectThat(content.some((n) => n.type === 'm5.large'), 'm5.large is not listed');
    },
  },
  {
    name: 'GetCloudProfiles',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/cloud-profiles?page=N',
    async run(c, _a, s) {
      const { content } = await c.paged<Rec>(`/api/v1/orgs/${s.org}/cloud-profiles`, T.CloudProfile);
      const p1 = content.find((p) => p.type === 'platform_1');
      expectThat(!!p1, 'no platform_1 profile');
    },
  },
  // ---- acloud_cloud_account ---------------------------------------------------------------------------------
  {
    name: 'CreateCloudAccount',
    client: 'Client',
    requests: 'POST /api/v1/orgs/{org}/cloud-accounts {displayName, cloudProfile, metadata: {}}',
    async run(c, _a, s) {
      const a = await c.result<Rec>('POST', `/api/v1/orgs/${s.org}/cloud-accounts`, T.CloudAccount, {
        displayName: 'Terraform account',
        cloudProfile: '2b7e1f0a-5c3d-4e8f-a1b2-6d9c4e7f8a10', // the identity the provider's data source read
        metadata: {},
      });
      expectThat(a.displayName === 'Terraform account', 'the display name is not the one sent');
    },
  },
  {
    name: 'GetCloudAccounts',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/cloud-accounts?page=N',
    async run(c, _a, s) {
      const { content } = await c.paged<Rec>(`/api/v1/orgs/${s.org}/cloud-accounts`, T.CloudAccount);
      expectThat(content.some((a) => a.identity === s.accountIdentity), 'the account is not listed');
    },
  },
  {
    name: 'FindCloudAccountByName',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/cloud-accounts?display-name={name}&cloud-provider-slug={provider}&page=N',
    async run(c, _a, s) {
      const { content, totalElements } = await c.paged<Rec>(
        `/api/v1/orgs/${s.org}/cloud-accounts?display-name=${encodeURIComponent('Main account')}&cloud-provider-slug=platform_1`,
        T.CloudAccount,
      );
      if (totalElements > 1) throw new ClientCallError(`ambiguous results, expected 1 cloudaccount, got ${totalElements}`);
      expectThat(content[0]?.identity === s.accountIdentity, 'the account was not found');
    },
  },
  {
    name: 'UpdateCloudAccount',
    client: 'Client',
    requests: 'PATCH /api/v1/orgs/{org}/cloud-accounts/{identity} {displayName, enabled, primaryCloudCredentials: ""}',
    async run(c, _a, s) {
      const a = await c.result<Rec>('PATCH', `/api/v1/orgs/${s.org}/cloud-accounts/${s.spare.account}`, T.CloudAccount, {
        displayName: 'Terraform account (renamed)',
        enabled: true,
        primaryCloudCredentials: '',
      });
      expectThat(a.displayName === 'Terraform account (renamed)', 'the new display name did not take effect');
    },
  },
  {
    name: 'CreateCloudCredential',
    client: 'Client',
    requests: 'POST /api/v1/orgs/{org}/cloud-accounts/{identity}/credentials/{cloudType} {displayName, credentials}',
    productName:
      'its credential types are the original platforms (`aws`, `azure`, ...); it refuses a `platform_N` account before sending',
    async run(c, _a, s) {
      // The client's own check: the credential type (CloudCredentialAWS -> "aws") must equal the account's profile type.
      const account = await c.result<Rec>('GET', `/api/v1/orgs/${s.org}/cloud-accounts/${s.accountIdentity}`, T.CloudAccount);
      const cloudType = String((account.cloudProfile as Rec).type);
      const credentialTypes = ['aws', 'azure', 'digitalocean', 'hetzner', 'openstack', 'vsphere'];
      if (!credentialTypes.includes(cloudType)) {
        throw new ClientCallError(`cloud provider type "aws" does not match cloud account type "${cloudType}" (refused by the client before sending)`);
      }
    },
  },
  {
    name: 'GetCloudCredentials',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/cloud-accounts/{identity}/credentials?page=N',
    async run(c, _a, s) {
      const { content } = await c.paged<Rec>(`/api/v1/orgs/${s.org}/cloud-accounts/${s.accountIdentity}/credentials`, T.CloudCredential);
      expectThat(content.some((x) => x.identity === s.credentialIdentity), 'the credential is not listed');
    },
  },
  // ---- acloud_environment -----------------------------------------------------------------------------------
  {
    name: 'CreateEnvironment',
    client: 'Client',
    requests: 'POST /api/v1/orgs/{org}/environments {name, purpose, type, description}',
    async run(c, _a, s) {
      const e = await c.result<Rec>('POST', `/api/v1/orgs/${s.org}/environments`, T.Environment, {
        name: 'terraform-env',
        purpose: '',
        type: 'staging',
        description: '',
      });
      expectThat(e.slug === 'terraform-env', 'slug is not the one of the name');
    },
  },
  {
    name: 'GetEnvironment',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/environments/{env}?show-compute=true',
    async run(c, _a, s) {
      const e = await c.result<Rec>('GET', `/api/v1/orgs/${s.org}/environments/${s.env}${withCompute}`, T.Environment);
      expectThat(e.slug === s.env, 'slug is not the environment slug');
    },
  },
  {
    name: 'UpdateEnvironment',
    client: 'Client',
    requests: 'PATCH /api/v1/orgs/{org}/environments/{env} {name, purpose, type, description}',
    async run(c, _a, s) {
      const e = await c.result<Rec>('PATCH', `/api/v1/orgs/${s.org}/environments/${s.spare.env}`, T.Environment, {
        name: s.spare.env,
        purpose: 'pre-production',
        type: 'staging',
        description: 'managed by Terraform',
      });
      expectThat(e.description === 'managed by Terraform', 'the description did not take effect');
    },
  },
  {
    name: 'GetEnvironments',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/environments?show-compute=true&page=N',
    async run(c, _a, s) {
      const { content } = await c.paged<Rec>(`/api/v1/orgs/${s.org}/environments${withCompute}`, T.Environment);
      expectThat(content.some((e) => e.slug === s.env), 'the environment is not listed');
    },
  },
  {
    name: 'GetUpdateChannels',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/update-channels?page=N',
    async run(c, _a, s) {
      const { content } = await c.paged<Rec>(`/api/v1/orgs/${s.org}/update-channels`, T.UpdateChannelResponse);
      expectThat(content.length > 0, 'no channels');
    },
  },
  {
    name: 'GetClusterVersions',
    client: 'Client',
    requests: 'GET /api/v1/cluster-versions',
    async run(c) {
      const versions = await c.result<Rec[]>('GET', '/api/v1/cluster-versions', { kind: 'slice', elem: T.ClusterVersion });
      expectThat(versions.some((v) => v.version === '1.31.5'), '1.31.5 is not listed');
    },
  },
  // ---- acloud_maintenance_schedule --------------------------------------------------------------------------
  {
    name: 'CreateMaintenanceSchedule',
    client: 'Client',
    requests: 'POST /api/v1/organisations/{org}/maintenance-schedule {name, windows: [{day, startTime, duration}]}',
    async run(c, _a, s) {
      const m = await c.result<Rec>('POST', `/api/v1/organisations/${s.org}/maintenance-schedule`, T.MaintenanceSchedule, {
        name: 'weekend',
        windows: [{ day: 'SATURDAY', startTime: '02:00', duration: 240 }],
      });
      expectThat((m.windows as Rec[]).length === 1, 'the window is missing');
    },
  },
  {
    name: 'GetMaintenanceSchedules',
    client: 'Client',
    requests: 'GET /api/v1/organisations/{org}/maintenance-schedule',
    async run(c, _a, s) {
      const list = await c.result<Rec[]>('GET', `/api/v1/organisations/${s.org}/maintenance-schedule`, { kind: 'slice', elem: T.MaintenanceSchedule });
      expectThat(list.length > 0, 'no schedules');
    },
  },
  {
    name: 'GetMaintenanceSchedule',
    client: 'Client',
    requests: 'GET /api/v1/organisations/{org}/maintenance-schedule/{identity}',
    async run(c, _a, s) {
      const m = await c.result<Rec>('GET', `/api/v1/organisations/${s.org}/maintenance-schedule/${s.spare.schedule}`, T.MaintenanceSchedule);
      expectThat((m.windows as Rec[]).length === 1, 'the window is missing');
    },
  },
  {
    name: 'UpdateMaintenanceSchedule',
    client: 'Client',
    requests: 'PATCH /api/v1/organisations/{org}/maintenance-schedule/{identity} {name, windows}',
    async run(c, _a, s) {
      const m = await c.result<Rec>('PATCH', `/api/v1/organisations/${s.org}/maintenance-schedule/${s.spare.schedule}`, T.MaintenanceSchedule, {
        name: 'weekend nights',
        windows: [{ day: 'SUNDAY', startTime: '01:00', duration: 180 }],
      });
      expectThat(m.name === 'weekend nights', 'the name did not take effect');
    },
  },
  // ---- acloud_cluster ---------------------------------------------------------------------------------------
  {
    name: 'CreateCluster',
    client: 'Client',
    requests: "POST /api/v1/orgs/{org}/clusters/{env} (the provider's body: every flag, nodePools: [], its default add-on map)",
    async run(c, _a, s) {
      const cl = await c.result<Rec>(
        'POST',
        `/api/v1/orgs/${s.org}/clusters/${s.env}`,
        T.Cluster,
        providerClusterCreate({ name: 'terraform', cloudAccountIdentity: s.accountIdentity, region: 'eu-central-1', version: '1.31.5' }),
      );
      expectThat(cl.slug === 'terraform', 'slug is not the cluster slug');
    },
  },
  {
    name: 'GetCluster',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/clusters/{env}/{cluster}?show-compute=true',
    async run(c, _a, s) {
      const cl = await c.result<Rec>('GET', `/api/v1/orgs/${s.org}/clusters/${s.env}/${s.clusterSlug}${withCompute}`, T.Cluster);
      // Under /compat a started cluster is `running`, the status the provider waits for.
      const started = c.apiUrl === '/compat' ? 'running' : 'started';
      expectThat(cl.status === started, `status is ${cl.status}, not ${started}`);
    },
  },
  {
    name: 'GetClustersByOrg',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/clusters?show-compute=true&page=N',
    async run(c, _a, s) {
      expectThat((await clustersByOrg(c, s.org)).some((x) => x.slug === s.clusterSlug), 'the cluster is not listed');
    },
  },
  {
    name: 'GetClustersByOrgAndEnv',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/clusters/{env}?show-compute=true&page=N',
    async run(c, _a, s) {
      const { content } = await c.paged<Rec>(`/api/v1/orgs/${s.org}/clusters/${s.env}${withCompute}`, T.Cluster);
      expectThat(content.some((x) => x.slug === s.clusterSlug), 'the cluster is not listed');
    },
  },
  {
    name: 'GetClusters',
    client: 'Client',
    requests: 'GetMemberships, then GetClustersByOrg for each organisation',
    async run(c) {
      const { content } = await c.paged<Rec>('/api/v1/memberships', T.Membership);
      for (const m of content) await clustersByOrg(c, String(m.slug));
    },
  },
  {
    name: 'UpdateCluster',
    client: 'Client',
    requests:
      'PATCH /api/v1/orgs/{org}/clusters/{env}/{cluster} (the provider\'s body: updateChannel, version, podSecurityStandardsProfile, flags, maintenanceScheduleIdentity, addons)',
    async run(c, _a, s) {
      const cl = await c.result<Rec>('PATCH', `/api/v1/orgs/${s.org}/clusters/${s.env}/${s.clusterSlug}`, T.Cluster, {
        updateChannel: '',
        version: '1.31.5',
        podSecurityStandardsProfile: 'PRIVILEGED',
        enableNetworkEncryption: true,
        enableHighAvailability: false,
        enableAutoUpgrade: false,
        maintenanceScheduleIdentity: '',
        addons: providerDefaultAddons(),
      });
      expectThat(cl.enableNetworkEncryption === true, 'enableNetworkEncryption did not take effect');
    },
  },
  // ---- acloud_nodepool --------------------------------------------------------------------------------------
  {
    name: 'GetNodePoolsByCluster',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/clusters/{env}/{cluster}/pools',
    async run(c, _a, s) {
      const pools = await poolsOf(c, s.org, { environmentSlug: s.env, slug: s.clusterSlug });
      expectThat(pools.length > 0, 'no pools');
    },
  },
  {
    name: 'CreateNodePool',
    client: 'Client',
    requests: 'POST /api/v1/orgs/{org}/clusters/{env}/{cluster}/pools {name, nodeSize, minSize, maxSize, autoScaling, flags, upgradeStrategy, annotations, labels, taints}',
    async run(c, _a, s) {
      const p = await c.result<Rec>('POST', `/api/v1/orgs/${s.org}/clusters/${s.env}/${s.clusterSlug}/pools`, T.NodePool, {
        name: 'terraform-pool',
        nodeSize: 'm5.large',
        minSize: 2,
        maxSize: 2,
        autoScaling: false,
        enableNodeAutoReplacement: true,
        enableNodeReboots: false,
        upgradeStrategy: 'REPLACE',
        annotations: {},
        labels: { team: 'platform' },
        taints: [],
      });
      expectThat(typeof p.id === 'number', 'no numeric id (the provider keeps it as the resource id)');
    },
  },
  {
    name: 'UpdateNodePool',
    client: 'Client',
    requests: 'PUT /api/v1/orgs/{org}/clusters/{env}/{cluster}/pools/{numeric id} (name "", nodeSize, sizes, maps, taints)',
    async run(c, _a, s) {
      const p = await c.result<Rec>('PUT', `/api/v1/orgs/${s.org}/clusters/${s.env}/${s.clusterSlug}/pools/${s.spare.poolId}`, T.NodePool, {
        name: '',
        nodeSize: 'm5.large',
        minSize: 3,
        maxSize: 3,
        autoScaling: false,
        enableNodeAutoReplacement: false,
        enableNodeReboots: false,
        annotations: {},
        labels: {},
        taints: [],
      });
      expectThat(p.minSize === 3 && p.name === 'spare-pool', 'the update did not take effect as sent');
    },
  },
  {
    name: 'DeleteNodePool',
    client: 'Client',
    requests: 'DELETE /api/v1/orgs/{org}/clusters/{env}/{cluster}/pools/{numeric id}',
    async run(c, _a, s) {
      await c.noResult('DELETE', `/api/v1/orgs/${s.org}/clusters/${s.env}/${s.clusterSlug}/pools/${s.spare.poolId}`);
    },
  },
  {
    name: 'GetNodePoolsByClusters',
    client: 'Client',
    requests: 'GET .../clusters/{env}/{cluster}/pools for each given cluster',
    async run(c, _a, s) {
      for (const cl of [{ environmentSlug: s.env, slug: s.clusterSlug }, { environmentSlug: s.env, slug: s.byonClusterSlug }]) await poolsOf(c, s.org, cl);
    },
  },
  {
    name: 'GetNodePoolsByOrg',
    client: 'Client',
    requests: 'GetClustersByOrg, then the pools of each cluster',
    async run(c, _a, s) {
      for (const cl of await clustersByOrg(c, s.org)) await poolsOf(c, s.org, cl);
    },
  },
  {
    name: 'GetNodePools',
    client: 'Client',
    requests: 'GetClusters, then the pools of each cluster',
    async run(c) {
      const { content } = await c.paged<Rec>('/api/v1/memberships', T.Membership);
      for (const m of content) for (const cl of await clustersByOrg(c, String(m.slug))) await poolsOf(c, String(m.slug), cl);
    },
  },
  {
    name: 'GetNodePoolJoinConfig',
    client: 'Client',
    requests: 'POST /api/v1/orgs/{org}/clusters/{env}/{cluster}/pools/{pool identity}/join-config (no body)',
    async run(c, _a, s) {
      const j = await c.result<Rec>('POST', `/api/v1/orgs/${s.org}/clusters/${s.env}/${s.byonClusterSlug}/pools/${s.byonPoolIdentity}/join-config`, T.NodePoolJoinConfig);
      expectThat(String(j.joinCommand).includes('--token'), 'no join command');
    },
  },
  {
    name: 'GetClusterOIDCConfig',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/clusters/{env}/{cluster}/oidc-config',
    async run(c, _a, s) {
      const o = await c.result<Rec>('GET', `/api/v1/orgs/${s.org}/clusters/${s.env}/${s.clusterSlug}/oidc-config`, T.ClusterMetadataResponse);
      expectThat(String(o.caCertificate).includes('BEGIN CERTIFICATE'), 'no CA certificate');
    },
  },
  // ---- observability ----------------------------------------------------------------------------------------
  {
    name: 'GetObservabilityTenants',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/monitoring?page=N',
    async run(c, _a, s) {
      const { content } = await c.paged<Rec>(`/api/v1/orgs/${s.org}/monitoring`, T.ObservabilityTenant);
      expectThat(content.some((x) => x.slug === s.tenant), 'the tenant is not listed');
    },
  },
  {
    name: 'GetObservabilityTenantBySlug',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/monitoring/{tenant}',
    async run(c, _a, s) {
      const x = await c.result<Rec>('GET', `/api/v1/orgs/${s.org}/monitoring/${s.tenant}`, T.ObservabilityTenant);
      expectThat(x.slug === s.tenant, 'slug is not the tenant slug');
    },
  },
  {
    name: 'GetObservabilityOrganisationAlerts',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/alerts (404 read as no alerts)',
    async run(c, _a, s) {
      const list = await c.result<Rec[]>('GET', `/api/v1/orgs/${s.org}/alerts`, { kind: 'slice', elem: T.ObservabilityAlert });
      expectThat(list.some((a) => (a.labels as Rec)?.alertname === 'NodeDown' && a.state === 'firing'), 'the firing alert is not in the list');
    },
  },
  {
    name: 'GetObservabilityTenantAlerts',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/alerts/{tenant} (404 read as no alerts)',
    async run(c, _a, s) {
      const list = await c.result<Rec[]>('GET', `/api/v1/orgs/${s.org}/alerts/${s.tenant}`, { kind: 'slice', elem: T.ObservabilityAlert });
      expectThat(list.some((a) => (a.labels as Rec)?.alertname === 'NodeDown'), 'the alert is not in the list');
    },
  },
  {
    name: 'GetObservabilityTenantAlertmanagerConfiguration',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/monitoring/{tenant}/alertmanager (404 read as an empty configuration)',
    productName: 'the path `.../alertmanager` and field `alertManagerConfig` (here `.../alerting`, `alertingConfig`); on 404 it answers an empty configuration',
    async run(c, _a, s) {
      const res = await c.raw('GET', `/api/v1/orgs/${s.org}/monitoring/${s.tenant}/alertmanager`);
      // The client answers an empty configuration without an error on 404.
      if (res.status === 404) throw new ClientCallError('404 read as an empty configuration: the stored configuration is not returned');
      if (res.status >= 300) throw new ClientCallError(`${res.status}`);
      expectThat(!!(res.body as Rec).alertManagerConfig, 'alertManagerConfig is empty');
    },
  },
  ...(['AddObservabilityTenantPrometheusRules', 'OverwriteObservabilityTenantPrometheusRules', 'DeleteObservabilityTenantPrometheusRules'] as const).map(
    (name): ClientFunction => ({
      name,
      client: 'Client',
      requests: 'GET, then POST /api/v1/orgs/{org}/monitoring/{tenant}/alertmanager {ruleFiles, templateFiles, alertManagerConfig}',
      productName: 'the path `.../alertmanager` and field `alertManagerConfig` (here `.../alerting`, `alertingConfig`)',
      async run(c, _a, s) {
        const current = await c.result<Rec>('GET', `/api/v1/orgs/${s.org}/monitoring/${s.tenant}/alertmanager`, T.AlertmanagerAndRules);
        await c.noResult('POST', `/api/v1/orgs/${s.org}/monitoring/${s.tenant}/alertmanager`, current);
      },
    }),
  ),
  {
    name: 'GetSilences',
    client: 'Client',
    requests: 'GET /api/v1/orgs/{org}/observability/{tenant}/silences (404 read as no silences)',
    async run(c, _a, s) {
      const path = `/api/v1/orgs/${s.org}/observability/${s.tenant}/silences`;
      if ((await c.raw('GET', path)).status === 404) throw new ClientCallError('decoded, but 404 read as no silences');
      const list = await c.result<Rec[]>('GET', path, { kind: 'slice', elem: T.Silence });
      expectThat(list.some((x) => x.id === s.spare.silence), 'the silence is not listed');
    },
  },
  {
    name: 'CreateSilence',
    client: 'Client',
    requests: 'POST /api/v1/orgs/{org}/observability/{tenant}/silences {matchers, startsAt, endsAt, comment}',
    async run(c, _a, s) {
      const x = await c.result<Rec>('POST', `/api/v1/orgs/${s.org}/observability/${s.tenant}/silences`, T.Silence, {
        matchers: [{ name: 'alertname', value: 'NodeDown', isRegex: false, isEqual: true }],
        startsAt: iso(-60_000),
        endsAt: iso(3_600_000),
        comment: 'maintenance',
      });
      expectThat(x.comment === 'maintenance', 'not the silence sent');
    },
  },
  {
    name: 'ExpireSilence',
    client: 'Client',
    requests: 'DELETE /api/v1/orgs/{org}/observability/{tenant}/silences/{id}',
    async run(c, _a, s) {
      await c.noResult('DELETE', `/api/v1/orgs/${s.org}/observability/${s.tenant}/silences/${s.spare.silence}`);
    },
  },
  // ---- deletions (terraform destroy) ------------------------------------------------------------------------
  {
    name: 'DeleteCluster',
    client: 'Client',
    requests: 'PATCH /api/v1/orgs/{org}/clusters/{env}/{cluster} {status: "deleting"}',
    async run(c, _a, s) {
      await c.noResult('PATCH', `/api/v1/orgs/${s.org}/clusters/${s.env}/${s.spare.cluster}`, { status: 'deleting' });
    },
  },
  {
    name: 'DeleteMaintenanceSchedule',
    client: 'Client',
    requests: 'DELETE /api/v1/organisations/{org}/maintenance-schedule/{identity}',
    async run(c, _a, s) {
      await c.noResult('DELETE', `/api/v1/organisations/${s.org}/maintenance-schedule/${s.spare.schedule}`);
    },
  },
  {
    name: 'DeleteCloudCredential',
    client: 'Client',
    requests: 'DELETE /api/v1/orgs/{org}/cloud-accounts/{identity}/credentials/{credential identity}',
    async run(c, _a, s) {
      await c.noResult('DELETE', `/api/v1/orgs/${s.org}/cloud-accounts/${s.accountIdentity}/credentials/${s.spare.credential}`);
    },
  },
  {
    name: 'DeleteCloudAccount',
    client: 'Client',
    requests: 'DELETE /api/v1/orgs/{org}/cloud-accounts/{identity}',
    async run(c, _a, s) {
      await c.noResult('DELETE', `/api/v1/orgs/${s.org}/cloud-accounts/${s.spare.account}`);
    },
  },
  {
    name: 'DeleteEnvironment',
    client: 'Client',
    requests: 'DELETE /api/v1/orgs/{org}/environments/{env}',
    async run(c, _a, s) {
      await c.noResult('DELETE', `/api/v1/orgs/${s.org}/environments/${s.spare.env}`);
    },
  },
  // ---- AdminClient ------------------------------------------------------------------------------------------
  {
    name: 'ListClusterVersions',
    client: 'AdminClient',
    requests: 'GET /admin/v1/cluster-versions?page=N',
    async run(_c, a) {
      expectThat((await a.paged('/admin/v1/cluster-versions', T.AdminClusterVersion)).content.length > 0, 'no versions');
    },
  },
  {
    name: 'ListAvailableClusterVersions',
    client: 'AdminClient',
    requests: 'GET /admin/v1/cluster-versions/available?page=N',
    async run(_c, a) {
      await a.paged('/admin/v1/cluster-versions/available', T.AdminClusterVersion);
    },
  },
  {
    name: 'ListHistoryClusterVersions',
    client: 'AdminClient',
    requests: 'GET /admin/v1/cluster-versions/history?page=N',
    async run(_c, a) {
      await a.paged('/admin/v1/cluster-versions/history', T.AdminClusterVersion);
    },
  },
  {
    name: 'CreateClusterVersion',
    client: 'AdminClient',
    requests: 'POST /admin/v1/cluster-versions {version, kubernetesVersion, clusterControllerVersion, available}',
    async run(_c, a, s) {
      const v = s.newVersion;
      await a.result('POST', '/admin/v1/cluster-versions', T.AdminClusterVersion, {
        version: v,
        kubernetesVersion: `v${v}`,
        clusterControllerVersion: '',
        available: false,
      });
    },
  },
  {
    name: 'GetClusterVersion',
    client: 'AdminClient',
    requests: 'GET /admin/v1/cluster-versions/{version}',
    async run(_c, a, s) {
      await a.result('GET', `/admin/v1/cluster-versions/${s.spare.version}`, T.AdminClusterVersion);
    },
  },
  {
    name: 'UpdateClusterVersion',
    client: 'AdminClient',
    requests: 'PUT /admin/v1/cluster-versions/{version} {available}',
    async run(_c, a, s) {
      const v = await a.result<Rec>('PUT', `/admin/v1/cluster-versions/${s.spare.version}`, T.AdminClusterVersion, { available: true });
      expectThat(v.available === true, 'available did not take effect');
    },
  },
  {
    name: 'DeleteClusterVersion',
    client: 'AdminClient',
    requests: 'DELETE /admin/v1/cluster-versions/{version}',
    async run(_c, a, s) {
      await a.noResult('DELETE', `/admin/v1/cluster-versions/${s.spare.version}`);
    },
  },
  {
    name: 'ListUpdateChannels',
    client: 'AdminClient',
    requests: 'GET /admin/v1/update-channels?page=N',
    async run(_c, a) {
      await a.paged('/admin/v1/update-channels', T.UpdateChannelResponse);
    },
  },
  {
    name: 'GetOrganisation (admin)',
    client: 'AdminClient',
    requests: 'GET /admin/v1/orgs/{organisation identity}',
    async run(_c, a, s) {
      const o = await a.result<Rec>('GET', `/admin/v1/orgs/${s.orgIdentity}`, T.AdminOrganisation);
      expectThat(o.slug === s.org, 'slug is not the organisation slug');
    },
  },
  {
    name: 'GetCluster (admin)',
    client: 'AdminClient',
    requests: 'GET /admin/v1/clusters/{cluster identity}?includeDetails=true',
    async run(_c, a, s) {
      const cl = await a.result<Rec>('GET', `/admin/v1/clusters/${s.clusterIdentity}?includeDetails=true`, T.Cluster);
      expectThat(cl.customerSlug === s.org, 'customerSlug is not the organisation slug');
    },
  },
  {
    name: 'ListClusters',
    client: 'AdminClient',
    requests: 'GET /admin/v1/clusters?includeDetails=true&show-compute=true&hideDeleted=true&page=N',
    async run(_c, a, s) {
      const { content } = await a.paged<Rec>('/admin/v1/clusters?includeDetails=true&show-compute=true&hideDeleted=true', T.Cluster);
      expectThat(content.some((x) => x.identity === s.clusterIdentity), 'the cluster is not listed');
    },
  },
  {
    name: 'UpdateCluster (admin)',
    client: 'AdminClient',
    requests: 'PUT /admin/v1/clusters/{cluster identity} {clusterIdentity, version}',
    async run(_c, a, s) {
      const cl = await a.result<Rec>('PUT', `/admin/v1/clusters/${s.clusterIdentity}`, T.Cluster, { clusterIdentity: s.clusterIdentity, version: '1.31.6' });
      expectThat(cl.version === '1.31.6', 'the version did not take effect');
    },
  },
  {
    name: 'CreateScheduledClusterUpgrade',
    client: 'AdminClient',
    requests: 'POST /admin/v1/scheduled-cluster-upgrades {clusterIdentity, windowStart, windowEnd, fromClusterVersion, toClusterVersion}',
    async run(_c, a, s) {
      // After UpdateCluster (admin) the cluster runs 1.31.6.
      const u = await a.result<Rec>('POST', '/admin/v1/scheduled-cluster-upgrades', T.ScheduledClusterUpgrade, {
        clusterIdentity: s.clusterIdentity,
        windowStart: iso(48 * 3_600_000),
        windowEnd: iso(50 * 3_600_000),
        fromClusterVersion: '1.31.6',
        toClusterVersion: '1.32.0',
      });
      expectThat(u.toClusterVersion === '1.32.0', 'not the upgrade requested');
    },
  },
  {
    name: 'ListScheduledClusterUpgrades',
    client: 'AdminClient',
    requests: 'GET /admin/v1/scheduled-cluster-upgrades?clusterIdentities={a,b}&statuses={S1,S2}&page=N (the client\'s constants, e.g. REQUESTED, IN_PROGRESS)',
    async run(_c, a, s) {
      const { content } = await a.paged<Rec>(
        `/admin/v1/scheduled-cluster-upgrades?clusterIdentities=${s.clusterIdentity},${s.spare.upgradeCluster}&statuses=REQUESTED,SCHEDULED,IN_PROGRESS`,
        T.ScheduledClusterUpgrade,
      );
      expectThat(content.some((u) => u.clusterIdentity === s.clusterIdentity), 'the upgrade is not listed');
    },
  },
  {
    name: 'GetScheduledClusterUpgrade',
    client: 'AdminClient',
    requests: 'GET /admin/v1/scheduled-cluster-upgrades/{identity}',
    async run(_c, a, s) {
      await a.result('GET', `/admin/v1/scheduled-cluster-upgrades/${s.spare.upgrade}`, T.ScheduledClusterUpgrade);
    },
  },
  {
    name: 'UpdateScheduledClusterUpgrade',
    client: 'AdminClient',
    requests: 'PATCH /admin/v1/scheduled-cluster-upgrades/{identity} {identity, status?, reason?, windowStart?, windowEnd?, version?}',
    async run(_c, a, s) {
      const u = await a.result<Rec>('PATCH', `/admin/v1/scheduled-cluster-upgrades/${s.spare.upgrade}`, T.ScheduledClusterUpgrade, {
        identity: s.spare.upgrade,
        reason: 'moved by the platform team',
        windowStart: iso(72 * 3_600_000),
        windowEnd: iso(74 * 3_600_000),
      });
      expectThat(u.reason === 'moved by the platform team', 'the reason did not take effect');
    },
  },
  {
    name: 'CancelScheduledClusterUpgrade',
    client: 'AdminClient',
    requests: 'DELETE /admin/v1/scheduled-cluster-upgrades/{identity}',
    async run(_c, a, s) {
      const u = await a.result<Rec>('DELETE', `/admin/v1/scheduled-cluster-upgrades/${s.spare.upgrade}`, T.ScheduledClusterUpgrade);
      expectThat(u.status === 'CANCELLED', `status is ${u.status}`);
    },
  },
];
