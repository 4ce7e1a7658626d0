import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { DesiredAddon, DesiredClusterSpec, DesiredNodePool, DriverCloudAccount } from '../cluster-drivers/driver-contract';
import type { DriverTarget } from '../cluster-drivers/cluster-driver-resolver';
import { isByon } from '../clusters/byon/byon-rules';
import { DEFAULT_CLUSTER_OIDC_ISSUER } from '../clusters/cluster-access.service';
import type { ClusterEntity } from '../clusters/cluster.entity';
import { SecretBox } from '../common/secret-box';
import { AppConfig } from '../config/app-config';
import { InjectBackgroundDataSource } from '../database/background-pool';
import { clusterOidcClientId } from './cluster-step-effects';

/** What a driver call about one cluster carries: the desired spec, the cloud account with its credentials, the driver's target. */
export interface DriverSubject {
  cluster: ClusterEntity;
  spec: DesiredClusterSpec;
  cloudAccount: DriverCloudAccount | null;
  target: DriverTarget;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));
const stringMap = (o: unknown): Record<string, string> =>
  Object.fromEntries(Object.entries((o ?? {}) as Record<string, unknown>).filter(([, v]) => v !== null && v !== undefined).map(([k, v]) => [k, str(v)]));

/**
 * The full desired spec of clusters as the driver contract (src/cluster-drivers/driver-contract.ts) describes it, read
 * from the database for a driver call: the cluster row as claimed, its node pools with their node types from the
 * catalog, its region's zones, add-ons, network, OIDC, and the cloud account with its primary credentials decrypted.
 * One statement and one per pools for any number of clusters (a batch observation reads 500 at once). Nothing is
 * cached: the credentials live in the answer, which the caller hands to the driver and drops.
 */
@Injectable()
export class DesiredSpecs {
  private readonly logger = new Logger('Reconciler');

  constructor(
    @InjectBackgroundDataSource() private readonly dataSource: DataSource,
    private readonly secrets: SecretBox,
    private readonly config: AppConfig,
  ) {}

  /** The subjects of `clusters`, by cluster id; a cluster whose account row is gone is missing. */
  async load(clusters: ClusterEntity[], opts: { warnUnreadable?: boolean } = {}): Promise<Map<number, DriverSubject>> {
    const out = new Map<number, DriverSubject>();
    if (!clusters.length) return out;
    const ids = clusters.map((c) => Number(c.id));
    const [rows, pools] = await Promise.all([
      this.dataSource.query(
        `SELECT c.id, o.identity AS org_identity, o.slug AS org_slug, e.identity AS env_identity, e.slug AS env_slug, e.type AS env_type,
                a.identity AS account_identity, a.display_name AS account_name, a.cloud_provider_type AS account_provider, a.metadata AS account_metadata,
                p.slug AS profile_slug, cr.identity AS cred_identity, cr.display_name AS cred_name, cr.secret_ciphertext,
                (SELECT COALESCE(array_agg(z.slug ORDER BY z.slug), '{}') FROM cloud_providers cp
                   JOIN cloud_provider_regions r ON r.provider_id = cp.id AND r.slug = c.region
                   JOIN cloud_provider_availability_zones z ON z.region_id = r.id
                  WHERE cp.type = c.cloud_provider) AS zones
           FROM clusters c
           JOIN organisations o ON o.id = c.organisation_id
           JOIN environments e ON e.id = c.environment_id
           LEFT JOIN cloud_accounts a ON a.id = c.cloud_account_id
           LEFT JOIN cloud_profiles p ON p.id = a.cloud_profile_id
           LEFT JOIN cloud_credentials cr ON cr.id = COALESCE(a.primary_credentials_id, c.cloud_credentials_id)
          WHERE c.id = ANY($1::bigint[])`,
        [ids],
      ) as Promise<Record<string, any>[]>,
      this.dataSource.query(
        `SELECT p.*, nt.cpu AS nt_cpu, nt.memory AS nt_memory
           FROM cluster_node_pools p
           JOIN clusters c ON c.id = p.cluster_id
           LEFT JOIN cloud_providers cp ON cp.type = c.cloud_provider
           LEFT JOIN cloud_provider_node_types nt ON nt.provider_id = cp.id AND nt.type = p.node_size
          WHERE p.cluster_id = ANY($1::bigint[])
          ORDER BY p.cluster_id, p.id`,
        [ids],
      ) as Promise<Record<string, any>[]>,
    ]);
    const byId = new Map(rows.map((r) => [Number(r.id), r]));
    const poolsOf = new Map<number, Record<string, any>[]>();
    for (const p of pools) {
      const list = poolsOf.get(Number(p.cluster_id)) ?? [];
      list.push(p);
      poolsOf.set(Number(p.cluster_id), list);
    }
    for (const c of clusters) {
      const r = byId.get(Number(c.id));
      if (!r) continue;
      const profile = (r.profile_slug as string | null) ?? null;
      const spec = this.spec(c, r, poolsOf.get(Number(c.id)) ?? [], profile);
      out.set(Number(c.id), { cluster: c, spec, cloudAccount: this.account(c, r, profile, opts.warnUnreadable ?? true), target: { cloudProvider: c.cloudProvider, cloudProfile: profile } });
    }
    return out;
  }

  private spec(c: ClusterEntity, r: Record<string, any>, pools: Record<string, any>[], profile: string | null): DesiredClusterSpec {
    const byon = isByon(c.cloudProvider);
    const zones = (r.zones as string[]) ?? [];
    const nodePools: DesiredNodePool[] = pools.map((p) => ({
      identity: p.identity,
      name: p.name,
      generation: Number(p.generation),
      nodeType: { name: p.node_size, cpu: p.nt_cpu == null ? null : Number(p.nt_cpu), memoryMb: p.nt_memory == null ? null : Number(p.nt_memory) },
      availabilityZone: p.availability_zone ?? null,
      autoScaling: !!p.auto_scaling,
      minSize: Number(p.min_size),
      maxSize: Number(p.max_size),
      labels: p.labels ?? {},
      annotations: p.annotations ?? {},
      taints: p.taints ?? [],
      upgradeStrategy: p.upgrade_strategy,
      enableNodeAutoReplacement: !!p.enable_node_auto_replacement,
      enableNodeReboots: !!p.enable_node_reboots,
      selfManaged: byon,
    }));
    const addons: DesiredAddon[] = Object.entries(c.addons ?? {})
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, v]) => ({ name, enabled: !!v.enabled, settings: stringMap(v.customValues) }));
    return {
      identity: c.identity,
      generation: Number(c.generation),
      slug: c.slug,
      name: c.name,
      organisation: { identity: r.org_identity, slug: r.org_slug },
      environment: { identity: r.env_identity, slug: r.env_slug, type: r.env_type },
      cloudProvider: c.cloudProvider,
      cloudProfile: profile,
      region: c.region,
      zones: c.enableMultiAvailabilityZones ? zones : zones.slice(0, 1),
      version: c.version,
      desiredState: desiredState(c),
      highAvailability: c.highlyAvailable,
      multiAvailabilityZones: c.enableMultiAvailabilityZones,
      natGateway: c.enableNatGateway,
      networkEncryption: c.enableNetworkEncryption,
      cni: c.cni,
      podSubnet: c.clusterPodSubnet,
      serviceSubnet: c.serviceSubnet,
      ipAllowList: (c.ipWhitelist ?? []).map((w) => ({ cidr: w.cidr, description: w.description })),
      podSecurityStandardsProfile: c.podSecurityStandardsProfile,
      clusterAutoscaler: Object.fromEntries(Object.entries(c.clusterAutoscalerSettings ?? {}).filter(([, v]) => v !== null && v !== undefined)) as Record<string, string | number>,
      oidc: c.platformOidc
        ? {
            issuerUrl: (this.config.OIDC_ISSUER_URL ?? DEFAULT_CLUSTER_OIDC_ISSUER).replace(/\/$/, ''),
            clientId: clusterOidcClientId(c.identity),
            usernameClaim: 'email',
            groupsClaim: 'groups',
          }
        : null,
      addons,
      nodePools,
    };
  }

  /** The cloud account with its primary credentials opened: for this call only. */
  private account(c: ClusterEntity, r: Record<string, any>, profile: string | null, warn: boolean): DriverCloudAccount | null {
    if (!r.account_identity) return null;
    let credentials: DriverCloudAccount['credentials'] = null;
    if (r.cred_identity) {
      try {
        credentials = { identity: r.cred_identity, name: r.cred_name, values: stringMap(JSON.parse(this.secrets.open(r.secret_ciphertext, r.cred_identity))) };
      } catch {
        // Never the ciphertext or the error's text: the credential is named by identity only.
        if (warn) this.logger.warn({ cluster: c.identity, credential: r.cred_identity }, 'The primary credentials of the cluster\'s cloud account cannot be opened; the driver gets none');
      }
    }
    return {
      identity: r.account_identity,
      name: r.account_name,
      cloudProvider: r.account_provider,
      cloudProfile: profile,
      metadata: stringMap(r.account_metadata),
      credentials,
    };
  }
}

/** Whether the cluster's machines should run: stopped while a stop is asked for or done, until a start is asked for. */
export function desiredState(c: Pick<ClusterEntity, 'status' | 'desiredStatus' | 'statusBeforeFault'>): 'running' | 'stopped' {
  if (c.desiredStatus === 'starting') return 'running';
  if (c.desiredStatus === 'stopping') return 'stopped';
  const status = c.status === 'unknown' ? c.statusBeforeFault : c.status;
  return status === 'stopping' || status === 'stopped' ? 'stopped' : 'running';
}
