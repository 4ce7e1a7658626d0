import * as semver from 'semver';
/**
 * The read side of clusters, kept free of Nest and TypeORM so that the SQL of the hot queries stays in
 * one visible place and the benchmark's baseline server runs exactly the same statements and mapping.
 * `Sql` is any "run this statement" function: the request transaction in the service, a pg pool in the
 * baseline.
 */
import { POOL_COMPUTE_SQL } from '../common/compute.query';
import { slugObject } from '../common/slug';
import { normaliseExclusions } from '../maintenance/maintenance-exclusion';
import type { ClusterEntity } from './cluster.entity';
import { conditionsView } from './cluster-conditions';
import type {
  ClusterReferenceDto,
  ClusterResponse,
  CloudCredentialsReferenceDto,
  MaintenanceScheduleRefDto,
  ObservabilityTenantDto,
} from './dto/cluster.dto';

export type Sql = (text: string, params: unknown[]) => Promise<Record<string, any>[]>;
/** A cluster row with the entity's property names (as the list query selects it, or a loaded entity). */
export type ClusterRow = Omit<ClusterEntity, never>;

export interface ViewOptions {
  includeDetails?: boolean;
  showCompute?: boolean;
  /** The update operation's extras: clusterAutoscalerSettings, upstreamCluster, downstreamClusters. */
  extended?: boolean;
  /**
   * Only these response fields are needed (a cluster policy's projection): the referenced rows other fields
   * need are not read, and those fields are left at their empty values. Undefined: every field.
   */
  fields?: ReadonlySet<string>;
}

/** The response fields each kind of referenced row of clusterViews is read for. */
const RELATED_FIELDS = {
  orgs: ['customerIdentity', 'customerSlug', 'observabilityTenant'],
  envs: ['environmentIdentity', 'environmentSlug', 'observabilityTenant'],
  accounts: ['cloudAccount'],
  creds: ['cloudCredentials'],
  channels: ['updateChannel', 'upgradeAvailable'],
  schedules: ['maintenanceSchedule'],
  tenants: ['observabilityTenant'],
  pools: ['poolID', 'poolName'],
  compute: ['cpu', 'memory'],
  references: ['upstreamCluster', 'downstreamClusters'],
} as const;

const iso = (d: Date | null | undefined): string | null => (d ? new Date(d).toISOString() : null);

const ids = (xs: (number | null | undefined)[]) => [...new Set(xs.filter((x): x is number => x != null).map(Number))];

/** Every column of `clusters`, aliased to the entity's property names. */
export const CLUSTER_SELECT = `c.id, c.identity, c.organisation_id AS "organisationId", c.environment_id AS "environmentId",
  c.cloud_account_id AS "cloudAccountId", c.cloud_credentials_id AS "cloudCredentialsId", c.slug, c.name, c.description,
  c.region, c.cloud_provider AS "cloudProvider", c.version, c.update_channel AS "updateChannel", c.auto_upgrade AS "autoUpgrade", c.auto_upgrade_policy AS "autoUpgradePolicy",
  c.highly_available AS "highlyAvailable", c.enable_multi_availability_zones AS "enableMultiAvailabilityZones",
  c.enable_nat_gateway AS "enableNatGateway", c.enable_network_encryption AS "enableNetworkEncryption",
  c.pod_security_standards_profile AS "podSecurityStandardsProfile", c.delete_protection AS "deleteProtection", c.cni,
  c.cluster_pod_subnet AS "clusterPodSubnet", c.service_subnet AS "serviceSubnet", c.ip_whitelist AS "ipWhitelist", c.addons,
  c.cluster_autoscaler_settings AS "clusterAutoscalerSettings", c.maintenance_schedule_id AS "maintenanceScheduleId",
  c.maintenance_exclusions AS "maintenanceExclusions",
  c.upstream_cluster_id AS "upstreamClusterId", c.upgrade_soak_hours AS "upgradeSoakHours", c.version_since AS "versionSince", c.platform_oidc AS "platformOidc", c.environment_metrics_rules AS "environmentMetricsRules",
  c.status, c.desired_status AS "desiredStatus", c.provision_status AS "provisionStatus", c.status_before_fault AS "statusBeforeFault",
  c.step_started_at AS "stepStartedAt", c.next_attempt_at AS "nextAttemptAt", c.attempts, c.last_error AS "lastError",
  c.observed_at AS "observedAt", c.observed_status AS "observedStatus", c.observed_version AS "observedVersion",
  c.generation::float8 AS "generation", c.observed_generation::float8 AS "observedGeneration", c.conditions,
  c.created_at AS "createdAt", c.modified_at AS "modifiedAt", c.deleted_at AS "deletedAt", c.row_version AS "rowVersion"`;

/** CLUSTER_SELECT's columns: [the name a ClusterRow carries it under, its select expression]. */
const CLUSTER_COLUMNS: [string, string][] = CLUSTER_SELECT.split(',').map((entry) => {
  const expr = entry.trim();
  const alias = / AS "(\w+)"$/.exec(expr)?.[1] ?? expr.replace(/^c\./, '');
  return [alias, expr];
});
const COLUMN_NAMES = new Set(CLUSTER_COLUMNS.map(([alias]) => alias));

/**
 * The ClusterRow columns a response field of clusterViews is computed from, where they are not just the column of
 * the field's own name. A field in neither needs every column.
 */
const FIELD_COLUMNS: Record<string, string[]> = {
  platformOIDC: ['platformOidc'],
  upgradeAvailable: ['updateChannel', 'version'],
  cloudAccount: ['cloudAccountId'],
  cloudCredentials: ['cloudCredentialsId'],
  enableNATGateway: ['enableNatGateway'],
  maintenanceSchedule: ['maintenanceScheduleId'],
  observabilityTenant: ['name', 'version', 'deletedAt'],
  conditions: ['conditions', 'generation', 'observedGeneration', 'modifiedAt'],
  upstreamCluster: ['upstreamClusterId'],
  // From other tables, by the cluster's id, organisation or environment (always read).
  cpu: [],
  memory: [],
  customerIdentity: [],
  customerSlug: [],
  environmentIdentity: [],
  environmentSlug: [],
  poolID: [],
  poolName: [],
  downstreamClusters: [],
  nodePools: [],
};
/** Read whatever the projection: a scan's answer names the cluster, and node pools depend on the provider. */
const ALWAYS_READ = ['id', 'identity', 'organisationId', 'environmentId', 'slug', 'cloudProvider'];

/**
 * CLUSTER_SELECT for a projection (a cluster policy's fields, see PolicyEvaluator.objectFields): the columns those
 * fields are computed from, NULL for the others, so that a scan does not parse columns (conditions, addons,
 * timestamps) no field it answers is made of. Null: every column. The rows it reads are only good for views of
 * these fields.
 */
export function clusterSelect(fields: ReadonlySet<string> | null): string {
  if (!fields) return CLUSTER_SELECT;
  const read = new Set(ALWAYS_READ);
  for (const field of fields) {
    const columns = FIELD_COLUMNS[field] ?? (COLUMN_NAMES.has(field) ? [field] : null);
    if (!columns) return CLUSTER_SELECT;
    for (const c of columns) read.add(c);
  }
  return CLUSTER_COLUMNS.map(([alias, expr]) => (read.has(alias) ? expr : `NULL AS "${alias}"`)).join(', ');
}

export interface ClusterScope {
  organisationId?: number;
  environmentId?: number;
  cloudAccountId?: number;
  maintenanceScheduleId?: number;
  /** Platform administrators may list deleted clusters too (`hideDeleted=false`). */
  includeDeleted?: boolean;
}

/**
 * One page of non-deleted clusters: a count and a keyed, ordered slice, in ONE statement: the total is an
 * uncorrelated scalar sub-select (an InitPlan, run once) on each row, so the rows keep their index-backed plan
 * (a window `count(*) OVER ()` would have to read every matching row before the first one is returned; see
 * docs/adr/0028-cluster-read-side-in-plain-sql.md). An empty page carries no total: at offset 0 it is 0, further on a second statement counts.
 * `orderBy` entries are SQL expressions of the whitelisted sort properties (never user text).
 */
export async function clusterPage(
  sql: Sql,
  scope: ClusterScope,
  orderBy: [string, 'ASC' | 'DESC'][],
  limit: number,
  offset: number,
): Promise<{ rows: ClusterRow[]; total: number }> {
  const where = scope.includeDeleted ? ['true'] : ['c.deleted_at IS NULL'];
  const params: unknown[] = [];
  const add = (column: string, value: number | undefined) => {
    if (value === undefined) return;
    params.push(value);
    where.push(`c.${column} = $${params.length}`);
  };
  add('organisation_id', scope.organisationId);
  add('environment_id', scope.environmentId);
  add('cloud_account_id', scope.cloudAccountId);
  add('maintenance_schedule_id', scope.maintenanceScheduleId);
  const whereSql = where.join(' AND ');
  // Organisation- or environment-wide pages read the trigger-kept count (cluster_counts) instead of counting.
  const kept =
    !scope.includeDeleted && scope.cloudAccountId === undefined && scope.maintenanceScheduleId === undefined && (scope.organisationId !== undefined || scope.environmentId !== undefined);
  const countParams: unknown[] = kept ? [scope.environmentId !== undefined ? 'environment' : 'organisation', scope.environmentId ?? scope.organisationId] : [];
  const countSql = (first: number) =>
    kept
      ? `SELECT live FROM cluster_counts WHERE scope = $${first} AND scope_id = $${first + 1}`
      : `SELECT count(*) FROM clusters c WHERE ${whereSql}`;
  const order = orderBy.map(([expr, dir]) => `${expr} ${dir}`).join(', ');
  const n = params.length;
  const rows = await sql(
    `SELECT (${countSql(n + 3)})::bigint AS "pageTotal", ${CLUSTER_SELECT} FROM clusters c WHERE ${whereSql} ORDER BY ${order} LIMIT $${n + 1} OFFSET $${n + 2}`,
    [...params, limit, offset, ...countParams],
  );
  if (!rows.length) {
    if (offset === 0) return { rows: [], total: 0 };
    const [counted] = await sql(`SELECT (${countSql(1)})::bigint AS total`, kept ? countParams : params);
    return { rows: [], total: Number(counted?.total ?? 0) };
  }
  const total = Number(rows[0].pageTotal ?? 0);
  return { rows: rows.map(({ pageTotal: _total, ...row }) => row as ClusterRow), total };
}

export interface EnvironmentRef {
  id: number;
  identity: string;
  slug: string;
  name: string;
}

/**
 * The non-deleted cluster named by environment and cluster slug inside an organisation, with its
 * environment, in one statement (`lock` takes the cluster's row lock). When nothing matches, a second
 * statement tells a missing environment from a missing cluster.
 */
export async function clusterInEnvironment(
  sql: Sql,
  organisationId: number,
  environmentSlug: string,
  clusterSlug: string,
  lock = false,
): Promise<{ environment: EnvironmentRef | null; cluster: ClusterRow | null }> {
  const rows = await sql(
    `SELECT e.id AS "envId", e.identity AS "envIdentity", e.slug AS "envSlug", e.name AS "envName", ${CLUSTER_SELECT}
       FROM environments e JOIN clusters c ON c.environment_id = e.id AND c.slug = $3 AND c.deleted_at IS NULL
      WHERE e.organisation_id = $1 AND e.slug = $2 AND e.deleted_at IS NULL${lock ? ' FOR UPDATE OF c' : ''}`,
    [organisationId, environmentSlug, clusterSlug],
  );
  if (rows.length) {
    const { envId, envIdentity, envSlug, envName, ...cluster } = rows[0];
    return { environment: { id: Number(envId), identity: envIdentity, slug: envSlug, name: envName }, cluster: cluster as ClusterRow };
  }
  const [env] = await sql(
    `SELECT id, identity, slug, name FROM environments WHERE organisation_id = $1 AND slug = $2 AND deleted_at IS NULL`,
    [organisationId, environmentSlug],
  );
  return { environment: env ? ({ ...env, id: Number(env.id) } as EnvironmentRef) : null, cluster: null };
}

/** Maps cluster rows to ClusterResponse, loading every referenced row in one query per kind. */
export async function clusterViews(sql: Sql, clusters: ClusterRow[], opts: ViewOptions = {}): Promise<ClusterResponse[]> {
  if (!clusters.length) return [];
  const q = sql;
  const clusterIds = clusters.map((c) => Number(c.id));
  const needs = (kind: keyof typeof RELATED_FIELDS) => !opts.fields || RELATED_FIELDS[kind].some((f) => opts.fields!.has(f));
  const when = <T>(kind: keyof typeof RELATED_FIELDS, xs: T[]): T[] => (needs(kind) ? xs : []);
  const showCompute = !!opts.showCompute && needs('compute');

  // Every referenced row in ONE statement: each kind is a json_agg sub-select (one round trip instead of nine).
  // A kind no needed field reads gets no ids (its sub-select reads nothing); none needed: no statement.
  // The update's answer (extended) reads the upstream and downstream references in the same statement.
  const withRefs = !!opts.extended && needs('references');
  const anyRelated = withRefs || (Object.keys(RELATED_FIELDS) as (keyof typeof RELATED_FIELDS)[]).some((k) => k !== 'references' && needs(k));
  const [related] = !anyRelated
    ? [{ orgs: [], envs: [], accounts: [], creds: [], channels: [], schedules: [], tenants: [], pools: [], compute: [] }]
    : await q(
    `SELECT
       (SELECT COALESCE(json_agg(x), '[]') FROM (SELECT id, identity, slug FROM organisations WHERE id = ANY($1::bigint[])) x) AS orgs,
       (SELECT COALESCE(json_agg(x), '[]') FROM (SELECT id, identity, slug, name FROM environments WHERE id = ANY($2::bigint[])) x) AS envs,
       (SELECT COALESCE(json_agg(x), '[]') FROM (
          SELECT a.id, a.identity, a.display_name, pc.identity AS p_identity, pc.display_name AS p_display_name
            FROM cloud_accounts a LEFT JOIN cloud_credentials pc ON pc.id = a.primary_credentials_id
           WHERE a.id = ANY($3::bigint[])) x) AS accounts,
       (SELECT COALESCE(json_agg(x), '[]') FROM (
          SELECT cc.id, cc.identity, cc.display_name, (a.primary_credentials_id = cc.id) AS is_primary
            FROM cloud_credentials cc JOIN cloud_accounts a ON a.id = cc.cloud_account_id WHERE cc.id = ANY($4::bigint[])) x) AS creds,
       (SELECT COALESCE(json_agg(x), '[]') FROM (
          SELECT name, available, kubernetes_cluster_version FROM update_channels WHERE name = ANY($5::text[])) x) AS channels,
       (SELECT COALESCE(json_agg(x), '[]') FROM (
          SELECT s.id, s.identity, s.name, s.windows, s.time_zone,
                 (SELECT count(*) FROM clusters x WHERE x.maintenance_schedule_id = s.id AND x.deleted_at IS NULL)::bigint AS cluster_count
            FROM maintenance_schedules s WHERE s.id = ANY($6::bigint[])) x) AS schedules,
       (SELECT COALESCE(json_agg(x), '[]') FROM (
          SELECT DISTINCT ON (t.cluster_id) t.id, t.identity, t.cluster_id, t.environment_id, t.slug, t.name, t.available,
                 t.ip_white_list, t.created_at, t.modified_at, t.deleted_at, e.name AS env_name, e.slug AS env_slug, o.slug AS org_slug
            FROM observability_tenants t
            JOIN organisations o ON o.id = t.organisation_id
            LEFT JOIN environments e ON e.id = t.environment_id
           WHERE t.cluster_id = ANY($7::bigint[])
           ORDER BY t.cluster_id, (t.deleted_at IS NULL) DESC, t.id DESC) x) AS tenants,
       (SELECT COALESCE(json_agg(x), '[]') FROM (
          SELECT DISTINCT ON (cluster_id) cluster_id, id, name FROM cluster_node_pools
           WHERE cluster_id = ANY($7::bigint[]) ORDER BY cluster_id, id) x) AS pools,
       (SELECT COALESCE(json_agg(x), '[]') FROM (${POOL_COMPUTE_SQL} WHERE $8::boolean AND p.cluster_id = ANY($7::bigint[]) AND c.id = ANY($7::bigint[]) GROUP BY p.cluster_id) x) AS compute${
         withRefs
           ? `,
       (SELECT COALESCE(json_agg(x), '[]') FROM (${REFERENCES_SQL}) x) AS refs`
           : ''
       }`,
    [
      when('orgs', ids(clusters.map((c) => c.organisationId))),
      when('envs', ids(clusters.map((c) => c.environmentId))),
      when('accounts', ids(clusters.map((c) => c.cloudAccountId))),
      when('creds', ids(clusters.map((c) => c.cloudCredentialsId))),
      when('channels', [...new Set(clusters.map((c) => c.updateChannel).filter(Boolean))]),
      when('schedules', ids(clusters.map((c) => c.maintenanceScheduleId))),
      needs('tenants') || needs('pools') || showCompute ? clusterIds : [],
      showCompute,
      ...(withRefs ? [ids(clusters.map((c) => c.upstreamClusterId)), clusterIds] : []),
    ],
  );
  const { orgs, envs, accounts, creds, channels, schedules, tenants, pools } = related as Record<string, Record<string, any>[]>;
  const byId = <T extends Record<string, any>>(rows: T[], key = 'id') => new Map(rows.map((r) => [String(r[key]), r]));
  const orgMap = byId(orgs);
  const envMap = byId(envs);
  const accMap = byId(accounts);
  const credMap = byId(creds);
  const chanMap = byId(channels, 'name');
  const schedMap = byId(schedules);
  const tenantMap = byId(tenants, 'cluster_id');
  const poolMap = byId(pools, 'cluster_id');
  let compute: Map<number, { cpu: number; memory: number }> | null = null;
  if (showCompute) {
    compute = new Map(clusterIds.map((id) => [id, { cpu: 0, memory: 0 }]));
    for (const r of related.compute as Record<string, any>[]) compute.set(Number(r.cluster_id), { cpu: Number(r.cpu), memory: Number(r.memory) });
  }
  const refs = opts.extended ? references(withRefs ? (related.refs as Record<string, any>[]) : []) : null;

  return clusters.map((c) => {
    const org = orgMap.get(String(c.organisationId));
    const env = envMap.get(String(c.environmentId));
    const acc = accMap.get(String(c.cloudAccountId));
    const cred = c.cloudCredentialsId != null ? credMap.get(String(c.cloudCredentialsId)) : undefined;
    const chan = c.updateChannel ? chanMap.get(c.updateChannel) : undefined;
    const sched = c.maintenanceScheduleId != null ? schedMap.get(String(c.maintenanceScheduleId)) : undefined;
    const tenant = tenantMap.get(String(c.id));
    const pool = poolMap.get(String(c.id));
    const cc = compute?.get(Number(c.id));
    const credRef: CloudCredentialsReferenceDto | null = cred
      ? { displayName: cred.display_name, identity: cred.identity, isPrimary: !!cred.is_primary }
      : null;
    const out: ClusterResponse = {
      addons: Object.fromEntries(
        Object.entries(c.addons ?? {}).map(([k, v]) => [k, { enabled: !!v.enabled, customValues: v.customValues ?? {} }]),
      ),
      platformOIDC: c.platformOidc,
      autoUpgrade: c.autoUpgrade,
      autoUpgradePolicy: c.autoUpgradePolicy ?? 'PATCH_AND_MINOR',
      // The channel's version when it is newer than what the cluster runs (whether or not it will be planned).
      upgradeAvailable:
        chan && semver.valid(chan.kubernetes_cluster_version) && semver.valid(c.version) && semver.gt(chan.kubernetes_cluster_version, c.version)
          ? chan.kubernetes_cluster_version
          : null,
      cloudAccount: {
        displayName: acc?.display_name ?? '',
        identity: acc?.identity ?? '',
        primaryCloudCredentials: acc?.p_identity ? { displayName: acc.p_display_name, identity: acc.p_identity, isPrimary: true } : null,
      },
      cloudCredentials: credRef,
      cloudProvider: c.cloudProvider,
      clusterPodSubnet: c.clusterPodSubnet,
      serviceSubnet: c.serviceSubnet,
      cni: c.cni,
      cpu: cc ? cc.cpu : null,
      memory: cc ? cc.memory : null,
      createdAt: iso(c.createdAt)!,
      modifiedAt: iso(c.modifiedAt)!,
      deletedAt: iso(c.deletedAt),
      customerIdentity: org?.identity ?? '',
      customerSlug: slugObject(org?.slug ?? ''),
      deleteProtection: c.deleteProtection,
      description: c.description,
      desiredStatus: c.desiredStatus,
      enableMultiAvailabilityZones: c.enableMultiAvailabilityZones,
      enableNATGateway: c.enableNatGateway,
      enableNetworkEncryption: c.enableNetworkEncryption,
      environmentIdentity: env?.identity ?? '',
      environmentMetricsRules: c.environmentMetricsRules,
      environmentSlug: slugObject(env?.slug ?? ''),
      highlyAvailable: c.highlyAvailable,
      identity: c.identity,
      ipWhitelist: (c.ipWhitelist ?? []).map((w) => ({ cidr: w.cidr, description: w.description })),
      maintenanceSchedule: sched ? scheduleRef(sched) : null,
      maintenanceExclusions: normaliseExclusions(c.maintenanceExclusions),
      name: c.name,
      observabilityTenant: tenant ? tenantRef(tenant, c, env?.slug ?? '') : null,
      podSecurityStandardsProfile: c.podSecurityStandardsProfile,
      poolID: pool ? Number(pool.id) : null,
      poolName: pool ? pool.name : null,
      provisionStatus: c.provisionStatus,
      region: c.region,
      slug: slugObject(c.slug),
      status: c.status,
      updateChannel: chan
        ? { available: chan.available, kubernetesClusterVersion: chan.kubernetes_cluster_version, name: chan.name }
        : null,
      version: c.version,
      upgradeSoakHours: c.upgradeSoakHours ?? null,
      generation: Number(c.generation ?? 1),
      observedGeneration: c.observedGeneration == null ? null : Number(c.observedGeneration),
      conditions: conditionsView(c.conditions, Number(c.generation ?? 1), c.observedGeneration == null ? null : Number(c.observedGeneration), c.modifiedAt),
    };
    if (opts.includeDetails) {
      out.actualState = { collectedAt: iso(c.observedAt), status: c.observedStatus, version: c.observedVersion };
    }
    if (refs) {
      out.clusterAutoscalerSettings = c.clusterAutoscalerSettings ?? {};
      out.upstreamCluster = c.upstreamClusterId != null ? (refs.byId.get(Number(c.upstreamClusterId)) ?? null) : null;
      out.downstreamClusters = refs.downstream.get(Number(c.id)) ?? [];
    }
    return out;
  });
}

function scheduleRef(s: Record<string, any>): MaintenanceScheduleRefDto {
  return {
    clusterCount: Number(s.cluster_count),
    identity: s.identity,
    name: s.name,
    windows: (s.windows ?? []).map((w: { day: string; duration: number; startTime: string }) => ({
      day: w.day,
      duration: w.duration,
      startTime: w.startTime,
    })),
    timeZone: s.time_zone ?? 'UTC',
  };
}

function tenantRef(t: Record<string, any>, c: ClusterRow, envSlug: string): ObservabilityTenantDto {
  return {
    available: t.available,
    cluster: {
      environmentSlug: envSlug,
      id: Number(c.id),
      identity: c.identity,
      name: c.name,
      slug: c.slug,
      version: c.version,
      deletedAt: iso(c.deletedAt),
    },
    createdAt: iso(t.created_at)!,
    modifiedAt: iso(t.modified_at)!,
    deletedAt: iso(t.deleted_at),
    customer: t.org_slug,
    environment: t.environment_id != null ? { id: Number(t.environment_id), name: t.env_name, slug: t.env_slug } : null,
    id: Number(t.id),
    identity: t.identity,
    ipWhiteList: t.ip_white_list ?? null,
    name: t.name,
    slug: t.slug,
  };
}

/**
 * The upstream clusters ($9) and the downstream clusters of the given clusters ($10), non-deleted only: a sub-select of
 * clusterViews' statement.
 */
const REFERENCES_SQL = `SELECT c.id, c.identity, c.slug, c.version, c.upstream_cluster_id, e.slug AS env_slug
    FROM clusters c JOIN environments e ON e.id = c.environment_id
   WHERE c.deleted_at IS NULL AND (c.id = ANY($9::bigint[]) OR c.upstream_cluster_id = ANY($10::bigint[]))`;

/** Upstream and downstream cluster references, by id and by upstream id, from REFERENCES_SQL's rows. */
function references(rows: Record<string, any>[]) {
  const ref = (r: Record<string, any>): ClusterReferenceDto => ({
    identity: r.identity,
    slug: slugObject(r.slug),
    environmentSlug: slugObject(r.env_slug),
    version: r.version,
  });
  const byId = new Map<number, ClusterReferenceDto>();
  const downstream = new Map<number, ClusterReferenceDto[]>();
  for (const r of rows) {
    byId.set(Number(r.id), ref(r));
    if (r.upstream_cluster_id != null) {
      const list = downstream.get(Number(r.upstream_cluster_id)) ?? [];
      list.push(ref(r));
      downstream.set(Number(r.upstream_cluster_id), list);
    }
  }
  for (const list of downstream.values()) list.sort((a, b) => a.slug.slugValue.localeCompare(b.slug.slugValue));
  return { byId, downstream };
}

