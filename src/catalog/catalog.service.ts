import { TransactionHost } from '@nestjs-cls/transactional';
import { isUuid } from '../common/uuid';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, NotFoundException } from '@nestjs/common';
import { Page, PageQueryDto } from '../common/paging';
import { AddonEntity } from './addon.entity';
import { pageInMemory } from './catalog-paging';
import { CloudProfileEntity } from './cloud-profile.entity';
import { CloudProviderAvailabilityZoneEntity } from './cloud-provider-availability-zone.entity';
import { CloudProviderNodeTypeEntity } from './cloud-provider-node-type.entity';
import { CloudProviderRegionEntity } from './cloud-provider-region.entity';
import { CLOUD_PROVIDER_TYPES, CloudProviderEntity } from './cloud-provider.entity';
import { ClusterVersionEntity } from './cluster-version.entity';
import {
  CloudProfileResponse,
  CloudProviderNodeTypeResponse,
  CloudProviderRegionAvailabilityZoneResponse,
  CloudProviderRegionResponse,
  CloudProviderResponse,
  PlatformKubernetesVersionResponse,
  UpdateChannelResponse,
} from './dto/catalog.dto';
import { downgradeTargets, sortBySemver, upgradeTargets } from './semver-targets';
import { UpdateChannelEntity } from './update-channel.entity';

/**
 * Whose view of the catalog a list is for. An organisation with `restrictedToAvailableCloudProviders`
 * does not see providers with available=false, nor regions that are restricted or unavailable.
 * Pass null (or an unrestricted organisation) for the full catalog.
 */
export interface CatalogViewer {
  restrictedToAvailableCloudProviders: boolean;
}


/** Position of a provider type in the interface's order (CLOUD_PROVIDER_TYPES). */
export function providerTypeRank(type: string): number {
  const i = (CLOUD_PROVIDER_TYPES as readonly string[]).indexOf(type);
  return i < 0 ? CLOUD_PROVIDER_TYPES.length : i;
}

export function providerVisibleTo(viewer: CatalogViewer | null | undefined, p: CloudProviderEntity): boolean {
  return !viewer?.restrictedToAvailableCloudProviders || p.available;
}

export function regionVisibleTo(viewer: CatalogViewer | null | undefined, r: CloudProviderRegionEntity): boolean {
  return !viewer?.restrictedToAvailableCloudProviders || (r.available && !r.restricted);
}

// ---- response mappers (exported for modules that embed catalog objects in their responses) ----

export function toCloudProviderResponse(p: CloudProviderEntity): CloudProviderResponse {
  return {
    available: p.available,
    byon: p.byon,
    createdAt: p.createdAt.toISOString(),
    modifiedAt: p.modifiedAt.toISOString(),
    id: p.id,
    logo: p.logo,
    metadata: p.metadata ?? {},
    name: p.name,
    privateClusterSetting: p.privateClusterSetting,
    slug: p.slug,
    type: p.type,
  };
}

export function toRegionResponse(r: CloudProviderRegionEntity, providerType: string): CloudProviderRegionResponse {
  return {
    available: r.available,
    createdAt: r.createdAt.toISOString(),
    modifiedAt: r.modifiedAt.toISOString(),
    id: r.id,
    name: r.name,
    provider: providerType,
    restricted: r.restricted,
    slug: r.slug,
  };
}

export function toZoneResponse(z: CloudProviderAvailabilityZoneEntity, providerType: string): CloudProviderRegionAvailabilityZoneResponse {
  return {
    cloudProviderValue: providerType,
    createdAt: z.createdAt.toISOString(),
    modifiedAt: z.modifiedAt.toISOString(),
    id: z.id,
    name: z.name,
    slug: z.slug,
  };
}

export function toNodeTypeResponse(n: CloudProviderNodeTypeEntity): CloudProviderNodeTypeResponse {
  return { cpu: n.cpu, memory: n.memory, type: n.type };
}

export function toVersionResponse(v: ClusterVersionEntity): PlatformKubernetesVersionResponse {
  return {
    version: v.version,
    kubernetesVersion: v.kubernetesVersion,
    available: v.available,
    note: v.note,
    createdAt: v.createdAt.toISOString(),
    modifiedAt: v.modifiedAt.toISOString(),
  };
}

export function toUpdateChannelResponse(c: UpdateChannelEntity): UpdateChannelResponse {
  return { available: c.available, kubernetesClusterVersion: c.kubernetesClusterVersion, name: c.name };
}

/**
 * Read side of the catalog. Other modules import CatalogModule and use the lookups at the top
 * (each answers null / false / [] rather than throwing, unless its comment says otherwise);
 * the list methods below them serve the catalog endpoints.
 */
@Injectable()
export class CatalogService {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  private get em() {
    return this.txHost.tx;
  }

  // ================================================================ lookups for other modules

  /** The provider with this type value (`platform_1`, `byon`, ...), or null. */
  findProviderByType(type: string): Promise<CloudProviderEntity | null> {
    return this.em.getRepository(CloudProviderEntity).findOne({ where: { type: type as CloudProviderEntity['type'] } });
  }

  /** The provider whose slug (or, failing that, type value) is `slugOrType`, or null. */
  async findProvider(slugOrType: string): Promise<CloudProviderEntity | null> {
    const repo = this.em.getRepository(CloudProviderEntity);
    return (await repo.findOne({ where: { slug: slugOrType } })) ?? (await this.findProviderByType(slugOrType));
  }

  /** The region `regionSlug` of the provider with type `providerType`, or null. */
  async findRegion(providerType: string, regionSlug: string): Promise<CloudProviderRegionEntity | null> {
    const provider = await this.findProviderByType(providerType);
    if (!provider) return null;
    return this.em.getRepository(CloudProviderRegionEntity).findOne({ where: { providerId: provider.id, slug: regionSlug } });
  }

  /**
   * Whether `org` may create a cluster (or profile use) in this region: the provider and region exist
   * and are available, and for an organisation restricted to available providers the region is not
   * restricted either.
   */
  async isRegionUsable(org: CatalogViewer, providerType: string, regionSlug: string): Promise<boolean> {
    const provider = await this.findProviderByType(providerType);
    if (!provider || !provider.available) return false;
    const region = await this.em.getRepository(CloudProviderRegionEntity).findOne({ where: { providerId: provider.id, slug: regionSlug } });
    if (!region || !region.available) return false;
    return regionVisibleTo(org, region);
  }

  /** The node type `type` (e.g. `m5.xlarge`) of the provider with type `providerType`, or null. cpu in cores, memory in MiB. */
  async findNodeType(providerType: string, type: string): Promise<CloudProviderNodeTypeEntity | null> {
    const provider = await this.findProviderByType(providerType);
    if (!provider) return null;
    return this.em.getRepository(CloudProviderNodeTypeEntity).findOne({ where: { providerId: provider.id, type } });
  }

  /** The availability zone `zoneSlug` of region `regionSlug` of provider `providerType`, or null. */
  async findAvailabilityZone(providerType: string, regionSlug: string, zoneSlug: string): Promise<CloudProviderAvailabilityZoneEntity | null> {
    const region = await this.findRegion(providerType, regionSlug);
    if (!region) return null;
    return this.em.getRepository(CloudProviderAvailabilityZoneEntity).findOne({ where: { regionId: region.id, slug: zoneSlug } });
  }

  /**
   * The catalog entry of a cluster version (`1.31.6`), available or not, or null.
   * `{ lockForShare: true }` (inside a transaction, e.g. a mutating request) holds the row until the
   * transaction ends, so a platform admin cannot delete or withdraw it while a cluster starts using it.
   */
  findVersion(version: string, opts: { lockForShare?: boolean } = {}): Promise<ClusterVersionEntity | null> {
    const qb = this.em.getRepository(ClusterVersionEntity).createQueryBuilder('v').where('v.version = :version', { version });
    if (opts.lockForShare) qb.setLock('pessimistic_read');
    return qb.getOne();
  }

  /** Every cluster version, available or not, in ascending semver order. */
  async listVersions(): Promise<ClusterVersionEntity[]> {
    return sortBySemver(await this.em.getRepository(ClusterVersionEntity).find());
  }

  /**
   * Versions a cluster running `version` may upgrade to (available newer patches of its minor and
   * available patches of the next minor), ascending. Throws NotFoundException for an unknown version.
   */
  async upgradeTargets(version: string): Promise<ClusterVersionEntity[]> {
    const all = await this.listVersions();
    if (!all.some((v) => v.version === version)) throw this.unknownVersion(version);
    return upgradeTargets(version, all);
  }

  /** Available older patches of the same minor, ascending. Throws NotFoundException for an unknown version. */
  async downgradeTargets(version: string): Promise<ClusterVersionEntity[]> {
    const all = await this.listVersions();
    if (!all.some((v) => v.version === version)) throw this.unknownVersion(version);
    return downgradeTargets(version, all);
  }

  /** The update channel `name` (`rapid`, `stable`, ...), available or not, or null. */
  findUpdateChannel(name: string): Promise<UpdateChannelEntity | null> {
    return this.em.getRepository(UpdateChannelEntity).findOne({ where: { name } });
  }

  /** The cloud profile whose identity (uuid) or slug is `identityOrSlug`, enabled or not, or null. */
  findCloudProfile(identityOrSlug: string): Promise<CloudProfileEntity | null> {
    const repo = this.em.getRepository(CloudProfileEntity);
    return isUuid(identityOrSlug)
      ? repo.findOne({ where: { identity: identityOrSlug.toLowerCase() } })
      : repo.findOne({ where: { slug: identityOrSlug } });
  }

  /** The add-ons a cluster can enable (the keys allowed in a cluster's `addons` map), by name. */
  listAddons(): Promise<AddonEntity[]> {
    return this.em.getRepository(AddonEntity).find({ order: { name: 'ASC' } });
  }

  /**
   * The spec's CloudProfile object for `profile`, as `viewer` sees it (regions hidden from a
   * restricted organisation are left out). Used by the cloud profiles list and by cloud accounts.
   */
  async cloudProfileResponse(profile: CloudProfileEntity, viewer?: CatalogViewer | null): Promise<CloudProfileResponse> {
    const provider = await this.findProviderByType(profile.type);
    if (!provider) throw new Error(`Cloud profile ${profile.slug} names an unknown provider ${profile.type}`);
    const regions = await this.em.getRepository(CloudProviderRegionEntity).find({ where: { providerId: provider.id } });
    return this.profileResponse(profile, provider, regions, viewer);
  }

  // ================================================================ endpoint queries

  async getProviderResponse(slug: string): Promise<CloudProviderResponse> {
    return toCloudProviderResponse(await this.requireProvider(slug));
  }

  async nodeTypesPage(slug: string, query: PageQueryDto): Promise<Page<CloudProviderNodeTypeResponse>> {
    const provider = await this.requireProvider(slug);
    const rows = await this.em.getRepository(CloudProviderNodeTypeEntity).find({ where: { providerId: provider.id }, order: { id: 'ASC' } });
    return pageInMemory(
      rows,
      query,
      { type: (n) => n.type, cpu: (n) => n.cpu, memory: (n) => n.memory },
      [],
      'A',
      toNodeTypeResponse,
    );
  }

  /** Providers in the interface's type order (CLOUD_PROVIDER_TYPES) unless `sort` says otherwise. */
  async providersPage(viewer: CatalogViewer, query: PageQueryDto): Promise<Page<CloudProviderResponse>> {
    const rows = (await this.em.getRepository(CloudProviderEntity).find()).filter((p) => providerVisibleTo(viewer, p));
    return pageInMemory(
      rows,
      query,
      { type: (p) => providerTypeRank(p.type), name: (p) => p.name, slug: (p) => p.slug, available: (p) => p.available },
      [{ property: 'type', direction: 'ASC' }],
      'A',
      toCloudProviderResponse,
    );
  }

  async regionsPage(viewer: CatalogViewer, providerSlug: string, query: PageQueryDto): Promise<Page<CloudProviderRegionResponse>> {
    const provider = await this.requireVisibleProvider(viewer, providerSlug);
    const rows = (await this.em.getRepository(CloudProviderRegionEntity).find({ where: { providerId: provider.id }, order: { id: 'ASC' } })).filter(
      (r) => regionVisibleTo(viewer, r),
    );
    return pageInMemory(
      rows,
      query,
      { slug: (r) => r.slug, name: (r) => r.name, available: (r) => r.available, restricted: (r) => r.restricted },
      [],
      'A',
      (r) => toRegionResponse(r, provider.type),
    );
  }

  async zonesPage(
    viewer: CatalogViewer,
    providerSlug: string,
    regionSlug: string,
    query: PageQueryDto,
  ): Promise<Page<CloudProviderRegionAvailabilityZoneResponse>> {
    const provider = await this.requireVisibleProvider(viewer, providerSlug);
    const region = await this.em.getRepository(CloudProviderRegionEntity).findOne({ where: { providerId: provider.id, slug: regionSlug } });
    if (!region || !regionVisibleTo(viewer, region)) {
      throw new NotFoundException(`Cloud provider '${provider.slug}' has no region '${regionSlug}'.`);
    }
    const rows = await this.em.getRepository(CloudProviderAvailabilityZoneEntity).find({ where: { regionId: region.id }, order: { id: 'ASC' } });
    return pageInMemory(rows, query, { slug: (z) => z.slug, name: (z) => z.name }, [], 'A', (z) => toZoneResponse(z, provider.type));
  }

  /**
   * Public profiles, hiding those of providers the viewer may not see. Default order: provider type, then slug.
   * Page form A: the interface does not list this path, and form A is what the original client decodes.
   */
  async cloudProfilesPage(viewer: CatalogViewer, query: PageQueryDto): Promise<Page<CloudProfileResponse>> {
    const providers = await this.em.getRepository(CloudProviderEntity).find();
    const regions = await this.em.getRepository(CloudProviderRegionEntity).find({ order: { id: 'ASC' } });
    const byType = new Map(providers.map((p) => [p.type as string, p]));
    const profiles = (await this.em.getRepository(CloudProfileEntity).find({ where: { public: true } })).filter((pr) => {
      const p = byType.get(pr.type);
      return !!p && providerVisibleTo(viewer, p);
    });
    return pageInMemory(
      profiles,
      query,
      {
        type: (pr) => providerTypeRank(pr.type),
        slug: (pr) => pr.slug,
        displayName: (pr) => pr.displayName,
        enabled: (pr) => pr.enabled,
      },
      [
        { property: 'type', direction: 'ASC' },
        { property: 'slug', direction: 'ASC' },
      ],
      'A',
      (pr) => {
        const p = byType.get(pr.type)!;
        return this.profileResponse(pr, p, regions.filter((r) => r.providerId === p.id), viewer);
      },
    );
  }

  async updateChannelsPage(query: PageQueryDto): Promise<Page<UpdateChannelResponse>> {
    const rows = await this.em.getRepository(UpdateChannelEntity).find();
    return pageInMemory(
      rows,
      query,
      { name: (c) => c.name, available: (c) => c.available },
      [{ property: 'name', direction: 'ASC' }],
      'B',
      toUpdateChannelResponse,
    );
  }

  // ================================================================ helpers

  private profileResponse(
    profile: CloudProfileEntity,
    provider: CloudProviderEntity,
    providerRegions: CloudProviderRegionEntity[],
    viewer?: CatalogViewer | null,
  ): CloudProfileResponse {
    const bySlug = new Map(providerRegions.map((r) => [r.slug, r]));
    const shown = (profile.regions ?? [])
      .map((slug) => bySlug.get(slug))
      .filter((r): r is CloudProviderRegionEntity => !!r && regionVisibleTo(viewer, r));
    return {
      cloudProvider: provider.type,
      cloudProviderRegionResponses: shown.map((r) => toRegionResponse(r, provider.type)),
      cloudProviderResponse: toCloudProviderResponse(provider),
      displayName: profile.displayName,
      enabled: profile.enabled,
      identity: profile.identity,
      metadata: profile.metadata ?? {},
      public: profile.public,
      regions: shown.map((r) => r.slug),
      type: profile.type,
    };
  }

  private async requireProvider(slug: string): Promise<CloudProviderEntity> {
    const provider = await this.findProvider(slug);
    if (!provider) throw new NotFoundException(`There is no cloud provider '${slug}'.`);
    return provider;
  }

  private async requireVisibleProvider(viewer: CatalogViewer, slug: string): Promise<CloudProviderEntity> {
    const provider = await this.findProvider(slug);
    if (!provider || !providerVisibleTo(viewer, provider)) throw new NotFoundException(`There is no cloud provider '${slug}'.`);
    return provider;
  }

  unknownVersion(version: string): NotFoundException {
    return new NotFoundException(`There is no cluster version '${version}'; GET /api/v1/cluster-versions lists them.`);
  }
}
