import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable } from '@nestjs/common';
import { auditDiff } from '../../audit/audit-diff';
import { AuditRecorder } from '../../audit/audit-recorder';
import { Clock } from '../../common/clock';
import { ValidationFailedException } from '../../common/errors';
import { slugify } from '../../common/slug';
import { CloudAccountEntity } from '../../cloud-accounts/cloud-account.entity';
import type { OrganisationEntity } from '../../identity/organisation.entity';
import { checkByonRegion, isByon } from '../byon/byon-rules';
import { ClusterCatalog } from '../cluster-catalog';
import { ClusterLookup } from '../cluster-lookup';
import { ClusterNodePoolEntity, NodePoolUpgradeStrategy } from '../cluster-node-pool.entity';
import { cidrsOverlap, ClusterRules } from '../cluster-rules';
import { ClusterAddons, ClusterEntity, CniType, PodSecurityStandardsProfile } from '../cluster.entity';
import type { CreateClusterRequest } from '../dto/cluster.dto';
import { applyPoolDefaults } from '../dto/node-pool.dto';
import { ClusterChangeGate } from '../cluster-change-gate';

export class CreateClusterCommand {
  constructor(
    readonly organisation: OrganisationEntity,
    readonly environmentSlug: string,
    readonly request: CreateClusterRequest,
  ) {}
}

const fail = (field: string, message: string) => ValidationFailedException.forField(field, message);

/**
 * Creates a cluster in `new` (provisionStatus ACCEPTED) with `desiredStatus` starting, its node pools
 * and its observability tenant, after every rule of docs/conventions.md ("Clusters and node pools"); the reconciler takes it from there.
 */
@Injectable()
export class CreateClusterUseCase {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly lookup: ClusterLookup,
    private readonly catalog: ClusterCatalog,
    private readonly rules: ClusterRules,
    private readonly auditRecorder: AuditRecorder,
    private readonly policies: ClusterChangeGate,
  ) {}

  async execute(cmd: CreateClusterCommand): Promise<ClusterEntity> {
    const { organisation: org, request: req } = cmd;
    // Node pools left without a name or sizes get their defaults (pool-1, pool-2, ... not given to another pool).
    const givenNames = new Set(req.nodePools.map((p) => p.name).filter((n): n is string => typeof n === 'string'));
    for (const pool of req.nodePools) {
      applyPoolDefaults(pool, givenNames);
      givenNames.add(pool.name);
    }
    const tx = this.txHost.tx;
    const env = await this.lookup.environment(org, cmd.environmentSlug);

    // Cloud account: of this organisation, enabled, with a primary credential to provision with.
    const account = await tx.getRepository(CloudAccountEntity).findOne({ where: { identity: req.cloudAccountIdentity, organisationId: org.id } });
    if (!account) throw fail('cloudAccountIdentity', `cloudAccountIdentity: no cloud account ${req.cloudAccountIdentity} in organisation '${org.slug}'`);
    if (!account.enabled) throw fail('cloudAccountIdentity', `cloudAccountIdentity: cloud account '${account.displayName}' is disabled`);
    const provider = account.cloudProviderType;
    // Bring-your-own-node accounts need no credentials and have no catalog regions (byon/byon-rules.ts).
    const byon = isByon(provider);
    if (!account.primaryCredentialsId && !byon) {
      throw fail('cloudAccountIdentity', `cloudAccountIdentity: cloud account '${account.displayName}' has no credentials; add credentials first`);
    }

    // Region of the provider, available, and not restricted for restricted organisations.
    let region: { id: number | null; slug: string };
    if (byon) {
      checkByonRegion(req.region);
      region = { id: null, slug: req.region };
    } else {
      const row = await this.catalog.region(provider, req.region);
      if (!row || !row.available || !row.providerAvailable) {
        throw fail('region', `region '${req.region}' is not an available region of provider ${provider}`);
      }
      if (row.restricted && org.restrictedToAvailableCloudProviders) {
        throw fail('region', `region '${req.region}' is restricted and not available to organisation '${org.slug}'`);
      }
      region = row;
    }

    const version = await this.catalog.version(req.version);
    if (!version) throw fail('version', `version '${req.version}' is not a known cluster version`);
    if (!version.available) throw fail('version', `version '${req.version}' is not available`);

    // Node pools: unique names, node sizes of the provider, zones of the region, minSize <= maxSize.
    const nodeTypes = await this.catalog.nodeTypes(provider);
    const zones = region.id !== null ? await this.catalog.zones(region.id) : new Set<string>();
    const names = new Set<string>();
    for (const [i, pool] of req.nodePools.entries()) {
      if (names.has(pool.name)) throw fail(`nodePools.${i}.name`, `nodePools.${i}.name '${pool.name}' is used by another node pool of the cluster`);
      names.add(pool.name);
      await this.rules.checkPool(pool, provider, region.slug, `nodePools.${i}.`, { nodeTypes, zones });
    }

    if (req.clusterPodSubnet && req.serviceSubnet && cidrsOverlap(req.clusterPodSubnet.ipRange, req.serviceSubnet.ipRange)) {
      throw fail('serviceSubnet', `serviceSubnet ${req.serviceSubnet.ipRange} overlaps clusterPodSubnet ${req.clusterPodSubnet.ipRange}`);
    }
    const maintenanceScheduleId = req.maintenanceScheduleIdentity ? await this.rules.maintenanceScheduleId(org, req.maintenanceScheduleIdentity) : null;
    if (req.updateChannel !== undefined) await this.rules.updateChannel(req.updateChannel);
    await this.rules.checkAddons(req.addons);

    const slug = slugify(req.name);
    if (!slug) throw fail('name', 'name must contain at least one letter or digit');

    // Quota, serialised per organisation by locking its row.
    const [quota] = await tx.query(`SELECT clusters_per_customer FROM organisations WHERE id = $1 FOR UPDATE`, [org.id]);
    const [{ n }] = await tx.query(`SELECT count(*)::int AS n FROM clusters WHERE organisation_id = $1 AND deleted_at IS NULL`, [org.id]);
    if (n >= Number(quota.clusters_per_customer)) {
      throw new ConflictException(
        `Organisation '${org.slug}' already has ${n} clusters, its quota clustersPerCustomer is ${quota.clusters_per_customer}; delete a cluster or ask for a higher quota.`,
      );
    }
    const [taken] = await tx.query(`SELECT 1 FROM clusters WHERE environment_id = $1 AND slug = $2 AND deleted_at IS NULL`, [env.id, slug]);
    if (taken) throw new ConflictException(`A cluster with slug '${slug}' already exists in environment '${env.slug}'; choose another name.`);
    const tenantSlug = `${env.slug}-${slug}`;
    const [tenantTaken] = await tx.query(`SELECT 1 FROM observability_tenants WHERE organisation_id = $1 AND slug = $2 AND deleted_at IS NULL`, [
      org.id,
      tenantSlug,
    ]);
    if (tenantTaken) {
      throw new ConflictException(`The observability tenant slug '${tenantSlug}' of this cluster is already used in organisation '${org.slug}'; choose another name.`);
    }

    const now = this.clock.now();
    const addons: ClusterAddons = { ...(await this.catalog.defaultAddons()) };
    for (const [k, v] of Object.entries(req.addons ?? {})) addons[k] = { enabled: v.enabled, customValues: v.customValues ?? {} };
    const profile = (req.podSecurityStandardsProfile ?? (req.enablePodSecurityStandards ? 'baseline' : null)) as PodSecurityStandardsProfile | null;

    const repo = tx.getRepository(ClusterEntity);
    const inserted = await repo.insert({
      organisationId: org.id,
      environmentId: env.id,
      cloudAccountId: account.id,
      cloudCredentialsId: account.primaryCredentialsId,
      slug,
      name: req.name,
      description: req.description ?? null,
      region: region.slug,
      cloudProvider: provider,
      version: version.version,
      updateChannel: req.updateChannel ?? null,
      autoUpgrade: req.enableAutoUpgrade ?? false,
      autoUpgradePolicy: req.autoUpgradePolicy ?? 'PATCH_AND_MINOR',
      highlyAvailable: !!(req.enableHA || req.enableHighAvailability),
      enableMultiAvailabilityZones: req.enableMultiAvailabilityZones ?? false,
      enableNatGateway: req.enableNATGateway ?? false,
      enableNetworkEncryption: req.enableNetworkEncryption ?? false,
      podSecurityStandardsProfile: profile,
      deleteProtection: false,
      cni: (req.cni ?? 'cilium') as CniType,
      clusterPodSubnet: req.clusterPodSubnet?.ipRange ?? null,
      serviceSubnet: req.serviceSubnet?.ipRange ?? null,
      ipWhitelist: (req.ipWhitelist ?? []).map((w) => ({ cidr: w.cidr.ipRange, description: w.description })),
      addons,
      clusterAutoscalerSettings: {},
      maintenanceScheduleId,
      status: 'new',
      desiredStatus: 'starting',
      provisionStatus: 'ACCEPTED',
      stepStartedAt: now,
      createdAt: now,
      modifiedAt: now,
    });
    const id = Number(inserted.identifiers[0].id);
    const cluster = await repo.findOneByOrFail({ id });

    await tx.getRepository(ClusterNodePoolEntity).insert(
      req.nodePools.map((p) => ({
        clusterId: id,
        name: p.name,
        availabilityZone: p.availabilityZone ?? null,
        nodeSize: p.nodeSize,
        autoScaling: p.autoScaling ?? false,
        minSize: p.minSize,
        maxSize: p.maxSize,
        enableNodeAutoReplacement: p.enableNodeAutoReplacement ?? true,
        enableNodeReboots: p.enableNodeReboots ?? false,
        upgradeStrategy: (p.upgradeStrategy ?? 'REPLACE') as NodePoolUpgradeStrategy,
        annotations: p.annotations ?? {},
        labels: p.labels ?? {},
        taints: (p.taints ?? []).map((t) => ({ key: t.key, value: t.value, effect: t.effect as never })),
        provisionStatus: 'ACCEPTED' as const,
        createdAt: now,
        modifiedAt: now,
      })),
    );
    // Each pool's insert bumped the generation (trigger cms_node_pool_generation): a new cluster, pools and all, is generation 1.
    await tx.query(`UPDATE clusters SET generation = 1, conditions = cms_spec_changed_conditions('[]', $2, 1) WHERE id = $1`, [id, now]);
    await tx.query(`UPDATE cluster_node_pools SET generation = 1, conditions = cms_spec_changed_conditions('[]', $2, 1) WHERE cluster_id = $1`, [id, now]);

    await tx.query(
      `INSERT INTO observability_tenants (organisation_id, cluster_id, environment_id, slug, name, available, created_at, modified_at)
       VALUES ($1, $2, $3, $4, $5, true, $6, $6)`,
      [org.id, id, env.id, tenantSlug, `${env.name}/${req.name}`, now],
    );

    // Cluster policies see the cluster as written; a Deny rolls the request's transaction back.
    await this.policies.enforce({ clusterId: id, operation: 'CREATE', resource: 'clusters', before: null });

    this.auditRecorder.record({
      type: 'CLUSTER_CREATED',
      organisation: { id: org.id, slug: org.slug },
      environment: { id: env.id, slug: env.slug },
      cluster: { id, slug },
      cloudAccountName: account.displayName,
      referencedEntityIdentity: cluster.identity,
      subject: `${env.slug}/${slug}`,
      details: auditDiff(null, {
        name: cluster.name,
        slug,
        region: cluster.region,
        cloudProvider: provider,
        version: cluster.version,
        highlyAvailable: cluster.highlyAvailable,
        podSecurityStandardsProfile: profile,
        nodePools: req.nodePools.map((p) => `${p.name}:${p.nodeSize}x${p.minSize}-${p.maxSize}`),
        status: 'new',
        provisionStatus: 'ACCEPTED',
      }),
    });
    return cluster;
  }
}
