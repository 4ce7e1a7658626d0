import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { ComputeQuery } from '../common/compute.query';
import { slugObject } from '../common/slug';
import type { ClusterEntity } from './cluster.entity';
import type { ClusterNodePoolEntity } from './cluster-node-pool.entity';
import type {
  ClusterReferenceDto,
  ClusterResponse,
  CloudCredentialsReferenceDto,
  MaintenanceScheduleRefDto,
  ObservabilityTenantDto,
} from './dto/cluster.dto';
import type { NodePoolResponse } from './dto/node-pool.dto';

export interface ViewOptions {
  includeDetails?: boolean;
  showCompute?: boolean;
  /** The update operation's extras: clusterAutoscalerSettings, upstreamCluster, downstreamClusters. */
  extended?: boolean;
}

const iso = (d: Date | null | undefined): string | null => (d ? new Date(d).toISOString() : null);
/** Runs queries one after another (a transaction's connection takes one query at a time). */
async function sequential<T>(thunks: (() => Promise<T>)[]): Promise<T[]> {
  const out: T[] = [];
  for (const th of thunks) out.push(await th());
  return out;
}

const ids = (xs: (number | null | undefined)[]) => [...new Set(xs.filter((x): x is number => x != null).map(Number))];

/** Maps cluster rows to ClusterResponse, loading every referenced row in one query per kind. */
@Injectable()
export class ClusterView {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly compute: ComputeQuery,
  ) {}

  async one(c: ClusterEntity, opts: ViewOptions = {}): Promise<ClusterResponse> {
    return (await this.many([c], opts))[0];
  }

  async many(clusters: ClusterEntity[], opts: ViewOptions = {}): Promise<ClusterResponse[]> {
    if (!clusters.length) return [];
    const q = (sql: string, params: unknown[]) => this.txHost.tx.query(sql, params) as Promise<Record<string, any>[]>;
    const clusterIds = clusters.map((c) => Number(c.id));

    const [orgs, envs, accounts, creds, channels, schedules, tenants, pools] = await sequential([
      () => q(`SELECT id, identity, slug FROM organisations WHERE id = ANY($1::bigint[])`, [ids(clusters.map((c) => c.organisationId))]),
      () => q(`SELECT id, identity, slug, name FROM environments WHERE id = ANY($1::bigint[])`, [ids(clusters.map((c) => c.environmentId))]),
      () => q(
        `SELECT a.id, a.identity, a.display_name, pc.identity AS p_identity, pc.display_name AS p_display_name
           FROM cloud_accounts a LEFT JOIN cloud_credentials pc ON pc.id = a.primary_credentials_id
          WHERE a.id = ANY($1::bigint[])`,
        [ids(clusters.map((c) => c.cloudAccountId))],
      ),
      () => q(
        `SELECT cc.id, cc.identity, cc.display_name, (a.primary_credentials_id = cc.id) AS is_primary
           FROM cloud_credentials cc JOIN cloud_accounts a ON a.id = cc.cloud_account_id WHERE cc.id = ANY($1::bigint[])`,
        [ids(clusters.map((c) => c.cloudCredentialsId))],
      ),
      () => q(`SELECT name, available, kubernetes_cluster_version FROM update_channels WHERE name = ANY($1::text[])`, [
        [...new Set(clusters.map((c) => c.updateChannel).filter(Boolean))],
      ]),
      () => q(
        `SELECT s.id, s.identity, s.name, s.windows,
                (SELECT count(*) FROM clusters x WHERE x.maintenance_schedule_id = s.id AND x.deleted_at IS NULL)::bigint AS cluster_count
           FROM maintenance_schedules s WHERE s.id = ANY($1::bigint[])`,
        [ids(clusters.map((c) => c.maintenanceScheduleId))],
      ),
      () => q(
        `SELECT DISTINCT ON (t.cluster_id) t.*, e.name AS env_name, e.slug AS env_slug, o.slug AS org_slug
           FROM observability_tenants t
           JOIN organisations o ON o.id = t.organisation_id
           LEFT JOIN environments e ON e.id = t.environment_id
          WHERE t.cluster_id = ANY($1::bigint[])
          ORDER BY t.cluster_id, (t.deleted_at IS NULL) DESC, t.id DESC`,
        [clusterIds],
      ),
      () => q(`SELECT DISTINCT ON (cluster_id) cluster_id, id, name FROM cluster_node_pools WHERE cluster_id = ANY($1::bigint[]) ORDER BY cluster_id, id`, [
        clusterIds,
      ]),
    ]);
    const byId = <T extends Record<string, any>>(rows: T[], key = 'id') => new Map(rows.map((r) => [String(r[key]), r]));
    const orgMap = byId(orgs);
    const envMap = byId(envs);
    const accMap = byId(accounts);
    const credMap = byId(creds);
    const chanMap = byId(channels, 'name');
    const schedMap = byId(schedules);
    const tenantMap = byId(tenants, 'cluster_id');
    const poolMap = byId(pools, 'cluster_id');
    const compute = opts.showCompute ? await this.compute.byCluster(clusterIds) : null;
    const refs = opts.extended ? await this.references(clusters) : null;

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
        maintenanceSchedule: sched ? this.schedule(sched) : null,
        name: c.name,
        observabilityTenant: tenant ? this.tenant(tenant, c, env?.slug ?? '') : null,
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

  private schedule(s: Record<string, any>): MaintenanceScheduleRefDto {
    return {
      clusterCount: Number(s.cluster_count),
      identity: s.identity,
      name: s.name,
      windows: (s.windows ?? []).map((w: { day: string; duration: number; startTime: string }) => ({
        day: w.day,
        duration: w.duration,
        startTime: w.startTime,
      })),
    };
  }

  private tenant(t: Record<string, any>, c: ClusterEntity, envSlug: string): ObservabilityTenantDto {
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

  /** Upstream and downstream cluster references of the given clusters (non-deleted only). */
  private async references(clusters: ClusterEntity[]) {
    const rows: Record<string, any>[] = await this.txHost.tx.query(
      `SELECT c.id, c.identity, c.slug, c.version, c.upstream_cluster_id, e.slug AS env_slug
         FROM clusters c JOIN environments e ON e.id = c.environment_id
        WHERE c.deleted_at IS NULL AND (c.id = ANY($1::bigint[]) OR c.upstream_cluster_id = ANY($2::bigint[]))`,
      [ids(clusters.map((c) => c.upstreamClusterId)), clusters.map((c) => Number(c.id))],
    );
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

  nodePool(p: ClusterNodePoolEntity): NodePoolResponse {
    return {
      id: Number(p.id),
      identity: p.identity,
      name: p.name,
      availabilityZone: p.availabilityZone,
      nodeSize: p.nodeSize,
      autoScaling: p.autoScaling,
      minSize: Number(p.minSize),
      maxSize: Number(p.maxSize),
      enableNodeAutoReplacement: p.enableNodeAutoReplacement,
      enableNodeReboots: p.enableNodeReboots,
      upgradeStrategy: p.upgradeStrategy,
      annotations: p.annotations ?? {},
      labels: p.labels ?? {},
      taints: p.taints ?? [],
      provisionStatus: p.provisionStatus,
      createdAt: iso(p.createdAt)!,
      modifiedAt: iso(p.modifiedAt)!,
    };
  }
}
