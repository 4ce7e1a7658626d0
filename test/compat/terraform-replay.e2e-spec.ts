import { settle } from '../clusters/cluster-fixtures';
import * as T from '../clients/original/client-types';
import { OriginalClient } from '../clients/original/original-client';
import { providerDefaultAddons } from '../clients/original/terraform-provider';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * The original Terraform provider (terraform-provider-acloud) against `/compat`, replayed as its requests in its
 * order (written from reading the provider, not copied): for each resource, `terraform apply` (create, then the
 * read that fills the state), `terraform plan` (the configuration with the provider's schema defaults, and for
 * clusters its default add-on map merged with the state, compared with the state), an update of one attribute
 * (the provider's update body, then the read), the plan again, and `terraform destroy` (in the provider's order:
 * node pool, cluster, then what the cluster referenced). The whole lifecycle runs twice in a row: a diff or an
 * error in either run fails the test.
 */

type Rec = Record<string, any>;
type AddonState = { name: string; enabled: boolean; custom_values?: Record<string, string> };

/** Go's zero values for what a JSON null or a missing field leaves in the client's structs. */
const s = (v: unknown) => (typeof v === 'string' ? v : '');
const b = (v: unknown) => v === true;
const n = (v: unknown) => (typeof v === 'number' ? v : 0);
const m = (v: unknown): Record<string, string> => (v && typeof v === 'object' ? (v as Record<string, string>) : {});

/** The provider's flattenClusterAddons: a set of {name, enabled, custom_values (only when not empty)}. */
function flattenAddons(addons: Record<string, { enabled?: boolean; customValues?: Record<string, string> }> | null | undefined): AddonState[] {
  return Object.entries(addons ?? {})
    .map(([name, a]) => ({ name, enabled: a.enabled === true, ...(a.customValues && Object.keys(a.customValues).length ? { custom_values: a.customValues } : {}) }))
    .sort((x, y) => x.name.localeCompare(y.name));
}

/** The provider's expandClusterAddons of a state or configuration set, merged over its default map (mergeClusterAddons). */
function mergedAddonMap(set: AddonState[] | undefined): Record<string, { enabled: boolean; customValues?: Record<string, string> }> {
  const merged: Record<string, { enabled: boolean; customValues?: Record<string, string> }> = {};
  // Go's encoding/json leaves out an empty customValues map (omitempty).
  for (const [name, a] of Object.entries(providerDefaultAddons())) merged[name] = Object.keys(a.customValues).length ? a : { enabled: a.enabled };
  for (const a of set ?? []) merged[a.name] = a.custom_values ? { enabled: a.enabled, customValues: a.custom_values } : { enabled: a.enabled };
  return merged;
}

/** The attributes whose planned value differs from the state. */
function diff(planned: Rec, state: Rec): string[] {
  const norm = (v: unknown) => JSON.stringify(v, (_k, x) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort()) : x));
  return Object.keys(planned).filter((k) => norm(planned[k]) !== norm(state[k]));
}

describe('the original Terraform provider under /compat: apply, plan, update, plan, destroy, twice, without a diff or an error', () => {
  let t: TestApp;
  let tf: OriginalClient;
  let org: string;
  let accountIdentity: string;
  const log: string[] = [];

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '10000' });
    org = 'terraform-org';
    const owner = await t.createUser('terraform-owner');
    await t.insertOrganisation(org, [{ user: owner, role: 'OWNER' }]);
    // The cloud account the clusters use exists outside the configuration (a data source), as the interface keeps an
    // account 24 hours after the last of its clusters is deleted.
    const account = await t.as(owner.token).post(`/api/v1/orgs/${org}/cloud-accounts`).send({ cloudProfile: 'platform-1-default', displayName: 'Main account' });
    expect(account.status).toBe(200);
    accountIdentity = account.body.identity;
    const cred = await t.as(owner.token).post(`/api/v1/orgs/${org}/cloud-accounts/${accountIdentity}/credentials/platform_1`).send({ displayName: 'key', credentials: { accessKeyId: 'A', accessKeySecret: 'S' } });
    expect(cred.status).toBe(200);
    tf = new OriginalClient(t, '/compat', owner.token);
  });
  afterAll(async () => t.close());

  /** `terraform apply` of one resource: its requests; throws the client's error on a non-2xx answer. */
  const step = async (what: string, run: () => Promise<void>) => {
    log.push(what);
    await run();
  };

  // ---- acloud_environment ----------------------------------------------------------------------------------
  async function environmentRead(slug: string): Promise<Rec> {
    const e = await tf.result<Rec>('GET', `/api/v1/orgs/${org}/environments/${slug}`, T.Environment);
    return { name: s(e.name), slug: s(e.slug), purpose: s(e.purpose), type: s(e.type), description: s(e.description) };
  }
  const environmentPlan = (config: Rec, state: Rec) => diff({ name: config.name, purpose: config.purpose ?? '', type: config.type, description: config.description ?? '' }, state);
  const environmentBody = (config: Rec) => ({ name: config.name, purpose: config.purpose ?? '', type: config.type, description: config.description ?? '' });

  // ---- acloud_maintenance_schedule --------------------------------------------------------------------------
  async function scheduleRead(identity: string): Promise<Rec> {
    const sch = await tf.result<Rec>('GET', `/api/v1/organisations/${org}/maintenance-schedule/${identity}`, T.MaintenanceSchedule);
    return { name: s(sch.name), windows: (sch.windows ?? []).map((w: Rec) => ({ day: s(w.day), start_time: s(w.startTime), duration: n(w.duration) })) };
  }
  const scheduleBody = (config: Rec) => ({
    name: config.name,
    windows: config.windows.map((w: Rec) => ({ day: w.day, startTime: w.start_time, duration: w.duration })),
  });

  // ---- acloud_cloud_account (read from the list, as the provider does) ---------------------------------------
  async function accountRead(identity: string): Promise<Rec> {
    const { content } = await tf.paged<Rec>(`/api/v1/orgs/${org}/cloud-accounts`, T.CloudAccount);
    const a = content.find((x) => x.identity === identity);
    if (!a) throw new Error(`cloud account ${identity} was not found in the list`);
    return { display_name: s(a.displayName), enabled: b(a.enabled), cloud_profile_identity: s(a.cloudProfile?.identity) };
  }
  const accountPlan = (config: Rec, state: Rec) => diff({ display_name: config.display_name, enabled: config.enabled ?? true, cloud_profile_identity: config.cloud_profile_identity }, state);

  // ---- acloud_cluster ---------------------------------------------------------------------------------------
  const clusterDefaults = {
    description: '',
    cni: '',
    update_channel: '',
    maintenance_schedule_id: '',
    pod_security_standards_profile: 'PRIVILEGED',
    enable_multi_availability_zones: true,
    enable_high_available_control_plane: false,
    enable_private_cluster: false,
    enable_network_encryption: true,
    enable_auto_upgrade: false,
  };
  async function clusterRead(env: string, slug: string): Promise<Rec> {
    const c = await tf.result<Rec>('GET', `/api/v1/orgs/${org}/clusters/${env}/${slug}?show-compute=true`, T.Cluster);
    return {
      identity: s(c.identity),
      name: s(c.name),
      description: s(c.description),
      slug: s(c.slug),
      cni: s(c.cni),
      region: s(c.region),
      version: s(c.version),
      update_channel: s(c.updateChannel?.name ?? c.updateChannel),
      pod_security_standards_profile: s(c.podSecurityStandardsProfile),
      enable_multi_availability_zones: b(c.enableMultiAvailabilityZones),
      enable_high_available_control_plane: b(c.highlyAvailable),
      enable_private_cluster: b(c.enableNATGateway),
      enable_network_encryption: b(c.enableNetworkEncryption),
      enable_auto_upgrade: b(c.autoUpgrade),
      status: s(c.status),
      maintenance_schedule_id: c.maintenanceSchedule ? s(c.maintenanceSchedule.identity) : '',
      addons: flattenAddons(c.addons),
    };
  }
  /** The plan: the configuration over the schema defaults; `addons` through customizeClusterAddonsDiff. */
  function clusterPlanned(config: Rec, state: Rec): Rec {
    const planned: Rec = { ...clusterDefaults, ...config };
    delete planned.environment;
    delete planned.cloud_account_identity;
    // Optional and computed: left out of the configuration, the state's value is merged over the default map.
    planned.addons = flattenAddons(mergedAddonMap(config.addons ?? state.addons));
    return planned;
  }
  /** The provider waits until the cluster has the status it wants ("running"), reading it with GetCluster. */
  async function waitForStatus(env: string, slug: string, wanted: string): Promise<void> {
    for (let i = 0; i < 20; i++) {
      const c = await tf.result<Rec>('GET', `/api/v1/orgs/${org}/clusters/${env}/${slug}?show-compute=true`, T.Cluster);
      if (c.status === wanted) return;
      await settle(t);
    }
    throw new Error(`cluster ${slug} did not reach status ${wanted}`);
  }

  // ---- acloud_nodepool --------------------------------------------------------------------------------------
  async function poolRead(env: string, cluster: string, id: number): Promise<Rec> {
    await tf.result<Rec>('GET', `/api/v1/orgs/${org}/clusters/${env}/${cluster}?show-compute=true`, T.Cluster);
    const pools = await tf.result<Rec[]>('GET', `/api/v1/orgs/${org}/clusters/${env}/${cluster}/pools`, { kind: 'slice', elem: T.NodePool });
    const p = pools.find((x) => x.id === id);
    if (!p) throw new Error(`node pool ${id} was not found`);
    return {
      name: s(p.name),
      node_size: s(p.nodeSize),
      auto_scaling: b(p.autoScaling),
      availability_zone: s(p.availabilityZone),
      node_auto_replacement: b(p.enableNodeAutoReplacement),
      min_size: n(p.minSize),
      max_size: n(p.maxSize),
      annotations: m(p.annotations),
      labels: m(p.labels),
      taints: (p.taints ?? []).map((x: Rec) => ({ key: s(x.key), value: s(x.value), effect: s(x.effect) })),
    };
  }
  function poolPlanned(config: Rec): Rec {
    const count = config.node_count ?? 1;
    const auto = config.auto_scaling ?? false;
    return {
      name: config.name,
      node_size: config.node_size,
      auto_scaling: auto,
      availability_zone: config.availability_zone ?? '',
      node_auto_replacement: config.node_auto_replacement ?? true,
      min_size: auto ? (config.min_size ?? 1) : count,
      max_size: auto ? (config.max_size ?? 1) : count,
      annotations: config.annotations ?? {},
      labels: config.labels ?? {},
      taints: config.taints ?? [],
    };
  }

  async function lifecycle(run: number): Promise<void> {
    const plans: Record<string, string[]> = {};
    // Configuration (HCL), with the provider's schema defaults applied by the plan functions above.
    const envConfig: Rec = { name: `tf-env-${run}`, type: 'production', description: 'made by terraform' };
    const scheduleConfig: Rec = { name: `tf-window-${run}`, windows: [{ day: 'MONDAY', start_time: '03:00', duration: 120 }] };
    // The cloud profile's identity, from the provider's acloud_cloud_profile data source (GetCloudProfiles).
    const { content: profiles } = await tf.paged<Rec>(`/api/v1/orgs/${org}/cloud-profiles`, T.CloudProfile);
    const profile = profiles.find((p) => p.name === 'platform-1-default' || p.displayName === 'platform-1-default' || p.slug === 'platform-1-default') ?? profiles[0];
    const accountConfig: Rec = { display_name: `tf-account-${run}`, cloud_profile_identity: s(profile.identity) };

    // apply: environment, maintenance schedule and cloud account (no dependencies), then the cluster, then the pool.
    let envSlug = '';
    let envState: Rec = {};
    await step('environment create', async () => {
      const e = await tf.result<Rec>('POST', `/api/v1/orgs/${org}/environments`, T.Environment, environmentBody(envConfig));
      envSlug = s(e.slug);
      envState = await environmentRead(envSlug);
    });
    let scheduleId = '';
    let scheduleState: Rec = {};
    await step('maintenance schedule create', async () => {
      const sch = await tf.result<Rec>('POST', `/api/v1/organisations/${org}/maintenance-schedule`, T.MaintenanceSchedule, scheduleBody(scheduleConfig));
      scheduleId = s(sch.identity);
      scheduleState = await scheduleRead(scheduleId);
    });
    let accountId = '';
    let accountState: Rec = {};
    await step('cloud account create', async () => {
      const a = await tf.result<Rec>('POST', `/api/v1/orgs/${org}/cloud-accounts`, T.CloudAccount, {
        displayName: accountConfig.display_name,
        cloudProfile: accountConfig.cloud_profile_identity,
        metadata: {},
      });
      accountId = s(a.identity);
      accountState = await accountRead(accountId);
    });

    const clusterConfig: Rec = {
      name: `tf-cluster-${run}`,
      environment: envSlug,
      region: 'eu-central-1',
      version: '1.31.5',
      cloud_account_identity: accountIdentity,
      maintenance_schedule_id: scheduleId,
      description: 'made by terraform',
    };
    let clusterSlug = '';
    let clusterState: Rec = {};
    await step('cluster create', async () => {
      const body: Rec = {
        name: clusterConfig.name,
        description: clusterConfig.description,
        version: clusterConfig.version,
        region: clusterConfig.region,
        cni: '',
        podSecurityStandardsProfile: 'PRIVILEGED',
        enableMultiAvailabilityZones: true,
        enableHighAvailability: false,
        enableNATGateway: false,
        enableNetworkEncryption: true,
        enableAutoUpgrade: false,
        cloudAccountIdentity: clusterConfig.cloud_account_identity,
        nodePools: [],
        maintenanceScheduleIdentity: clusterConfig.maintenance_schedule_id,
        updateChannel: '',
        environmentId: '',
        enablePodSecurityStandards: false,
        addons: mergedAddonMap(undefined),
      };
      // Go's omitempty leaves out description, cni, updateChannel, podSecurityStandardsProfile and
      // maintenanceScheduleIdentity when they are empty.
      for (const k of ['description', 'cni', 'updateChannel', 'podSecurityStandardsProfile', 'maintenanceScheduleIdentity']) if (body[k] === '') delete body[k];
      const c = await tf.result<Rec>('POST', `/api/v1/orgs/${org}/clusters/${envSlug}`, T.Cluster, body);
      clusterSlug = s(c.slug);
      await waitForStatus(envSlug, clusterSlug, 'running');
      clusterState = await clusterRead(envSlug, clusterSlug);
    });

    const poolConfig: Rec = { name: 'workers', node_size: 'm5.large', node_count: 2, labels: { team: 'platform' } };
    let poolId = 0;
    let poolState: Rec = {};
    await step('node pool create', async () => {
      await tf.result<Rec>('GET', `/api/v1/orgs/${org}/clusters/${envSlug}/${clusterSlug}?show-compute=true`, T.Cluster);
      const planned = poolPlanned(poolConfig);
      const p = await tf.result<Rec>('POST', `/api/v1/orgs/${org}/clusters/${envSlug}/${clusterSlug}/pools`, T.NodePool, {
        name: planned.name,
        nodeSize: planned.node_size,
        minSize: planned.min_size,
        maxSize: planned.max_size,
        autoScaling: planned.auto_scaling,
        enableNodeAutoReplacement: planned.node_auto_replacement,
        enableNodeReboots: false,
        annotations: planned.annotations,
        labels: planned.labels,
        taints: planned.taints,
      });
      poolId = n(p.id);
      poolState = await poolRead(envSlug, clusterSlug, poolId);
    });

    // plan (a second `terraform apply` of the unchanged configuration): refresh, then compare.
    const plan = async (label: string) => {
      envState = await environmentRead(envSlug);
      scheduleState = await scheduleRead(scheduleId);
      accountState = await accountRead(accountId);
      clusterState = await clusterRead(envSlug, clusterSlug);
      poolState = await poolRead(envSlug, clusterSlug, poolId);
      plans[`${label}: acloud_environment`] = environmentPlan(envConfig, envState);
      plans[`${label}: acloud_maintenance_schedule`] = diff({ name: scheduleConfig.name, windows: scheduleConfig.windows }, scheduleState);
      plans[`${label}: acloud_cloud_account`] = accountPlan(accountConfig, accountState);
      plans[`${label}: acloud_cluster`] = diff(clusterPlanned(clusterConfig, clusterState), clusterState);
      plans[`${label}: acloud_nodepool`] = diff(poolPlanned(poolConfig), poolState);
      const diffs = Object.entries(plans).filter(([, d]) => d.length);
      if (diffs.length) throw new Error(`terraform plan shows a diff: ${diffs.map(([k, d]) => `${k} (${d.join(', ')})`).join('; ')}; state ${JSON.stringify({ envState, scheduleState, accountState, clusterState, poolState })}`);
    };
    await plan('after create');

    // update: one attribute of each resource changes in the configuration; the provider's update requests.
    envConfig.description = 'changed by terraform';
    await step('environment update', async () => {
      await tf.result<Rec>('PATCH', `/api/v1/orgs/${org}/environments/${envSlug}`, T.Environment, environmentBody(envConfig));
      envState = await environmentRead(envSlug);
    });
    scheduleConfig.windows = [{ day: 'TUESDAY', start_time: '04:30', duration: 60 }];
    await step('maintenance schedule update', async () => {
      await tf.result<Rec>('PATCH', `/api/v1/organisations/${org}/maintenance-schedule/${scheduleId}`, T.MaintenanceSchedule, scheduleBody(scheduleConfig));
      scheduleState = await scheduleRead(scheduleId);
    });
    accountConfig.display_name = `tf-account-${run}-renamed`;
    await step('cloud account update', async () => {
      await tf.result<Rec>('PATCH', `/api/v1/orgs/${org}/cloud-accounts/${accountId}`, T.CloudAccount, {
        displayName: accountConfig.display_name,
        enabled: accountConfig.enabled ?? true,
        primaryCloudCredentials: '',
      });
      accountState = await accountRead(accountId);
    });
    // The cluster: an add-on enabled in the configuration (merged over the default map) and delete protection off.
    clusterConfig.addons = [{ name: 'certManager', enabled: true }];
    await step('cluster update', async () => {
      const before = await clusterRead(envSlug, clusterSlug);
      const planned = clusterPlanned(clusterConfig, before);
      const body: Rec = {
        updateChannel: planned.update_channel,
        version: planned.version,
        podSecurityStandardsProfile: planned.pod_security_standards_profile,
        enableNetworkEncryption: planned.enable_network_encryption,
        enableHighAvailability: planned.enable_high_available_control_plane,
        enableAutoUpgrade: planned.enable_auto_upgrade,
        maintenanceScheduleIdentity: planned.maintenance_schedule_id,
      };
      if (diff({ addons: planned.addons }, before).length) body.addons = mergedAddonMap(planned.addons);
      if (before.status !== 'running') body.status = 'starting';
      // Go's omitempty leaves out the empty strings.
      for (const k of Object.keys(body)) if (body[k] === '') delete body[k];
      await tf.result<Rec>('PATCH', `/api/v1/orgs/${org}/clusters/${envSlug}/${clusterSlug}`, T.Cluster, body);
      await waitForStatus(envSlug, clusterSlug, 'running');
      clusterState = await clusterRead(envSlug, clusterSlug);
    });
    poolConfig.node_count = 3;
    await step('node pool update', async () => {
      const planned = poolPlanned(poolConfig);
      await tf.result<Rec>('GET', `/api/v1/orgs/${org}/clusters/${envSlug}/${clusterSlug}?show-compute=true`, T.Cluster);
      await tf.result<Rec>('PUT', `/api/v1/orgs/${org}/clusters/${envSlug}/${clusterSlug}/pools/${poolId}`, T.NodePool, {
        name: '',
        nodeSize: planned.node_size,
        minSize: planned.min_size,
        maxSize: planned.max_size,
        autoScaling: false,
        enableNodeAutoReplacement: false,
        enableNodeReboots: false,
        annotations: planned.annotations,
        labels: planned.labels,
        taints: planned.taints,
      });
      poolState = await poolRead(envSlug, clusterSlug, poolId);
    });
    await plan('after update');

    // destroy: the pool, the cluster (a PATCH to status deleting, not waited for), then what it referenced.
    await step('node pool destroy', async () => {
      await tf.result<Rec>('GET', `/api/v1/orgs/${org}/clusters/${envSlug}/${clusterSlug}?show-compute=true`, T.Cluster);
      await tf.noResult('DELETE', `/api/v1/orgs/${org}/clusters/${envSlug}/${clusterSlug}/pools/${poolId}`);
    });
    await step('cluster destroy', () => tf.noResult('PATCH', `/api/v1/orgs/${org}/clusters/${envSlug}/${clusterSlug}`, { status: 'deleting' }));
    await step('maintenance schedule destroy', () => tf.noResult('DELETE', `/api/v1/organisations/${org}/maintenance-schedule/${scheduleId}`));
    await step('environment destroy', () => tf.noResult('DELETE', `/api/v1/orgs/${org}/environments/${envSlug}`));
    await step('cloud account destroy', () => tf.noResult('DELETE', `/api/v1/orgs/${org}/cloud-accounts/${accountId}`));

    expect(plans).toEqual(Object.fromEntries(Object.keys(plans).map((k) => [k, []])));
    // What was written reads back: the add-on set is the provider's twelve names, certManager enabled.
    expect(clusterState.addons.map((a: AddonState) => a.name).sort()).toEqual(Object.keys(providerDefaultAddons()).sort());
    expect(clusterState.addons.find((a: AddonState) => a.name === 'certManager')).toEqual({ name: 'certManager', enabled: true });
    expect(clusterState.pod_security_standards_profile).toBe('PRIVILEGED');
  }

  it('runs the lifecycle twice in a row', async () => {
    for (const run of [1, 2]) {
      try {
        await lifecycle(run);
      } catch (e) {
        throw new Error(`run ${run}, step "${log[log.length - 1]}": ${(e as Error).message}`);
      }
    }
    await settle(t);
    const [{ n: left }] = await t.db.query(`SELECT count(*)::int AS n FROM clusters c JOIN organisations o ON o.id = c.organisation_id WHERE o.slug = $1 AND c.deleted_at IS NULL`, [org]);
    expect(left).toBe(0);
  });
});
