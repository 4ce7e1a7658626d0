import { TransactionHost } from '@nestjs-cls/transactional';
import { isUuid } from '../common/uuid';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, NotFoundException } from '@nestjs/common';
import { orderByEntries, Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { ClusterLookup } from './cluster-lookup';
import { clusterPage, ClusterScope } from './cluster-read';
import { ClusterView, ViewOptions } from './cluster-view';
import type { ClusterResponse } from './dto/cluster.dto';

/** The properties cluster lists sort by: this service's allow-list, in its order. */
export const CLUSTER_SORTABLE = ['id', 'name', 'slug', 'status', 'region', 'version', 'cloudProvider', 'createdAt', 'modifiedAt'] as const;

/** API sort property -> SQL expression (alias c). */
const SORTABLE: Record<string, string> = {
  id: 'c.id',
  name: 'c.name',
  slug: 'c.slug',
  status: 'c.status',
  region: 'c.region',
  version: 'c.version',
  cloudProvider: 'c.cloud_provider',
  createdAt: 'c.created_at',
  modifiedAt: 'c.modified_at',
};


/** Reads of clusters: lists (form B pages) and one cluster. Deleted clusters never appear. */
@Injectable()
export class ClustersQueryService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly lookup: ClusterLookup,
    private readonly view: ClusterView,
  ) {}

  async listForOrganisation(
    org: OrganisationEntity,
    query: PageQueryDto & { maintenanceSchedule?: string; includeDetails?: boolean; 'show-compute'?: boolean },
  ): Promise<Page<ClusterResponse>> {
    const scope: ClusterScope = { organisationId: org.id };
    if (query.maintenanceSchedule) {
      const [row] = await this.txHost.tx.query(`SELECT id FROM maintenance_schedules WHERE identity = $1 AND organisation_id = $2`, [
        query.maintenanceSchedule,
        org.id,
      ]);
      scope.maintenanceScheduleId = row ? Number(row.id) : -1; // unknown schedule: nothing uses it
    }
    return this.page(scope, query, { includeDetails: query.includeDetails, showCompute: query['show-compute'] ?? true });
  }

  async listForEnvironment(
    org: OrganisationEntity,
    envSlug: string,
    query: PageQueryDto & { includeDetails?: boolean; 'show-compute'?: boolean },
  ): Promise<Page<ClusterResponse>> {
    const env = await this.lookup.environment(org, envSlug);
    return this.page({ organisationId: org.id, environmentId: env.id }, query, {
      includeDetails: query.includeDetails,
      showCompute: query['show-compute'],
    });
  }

  async listForCloudAccount(org: OrganisationEntity, cloudAccountIdentity: string, query: PageQueryDto): Promise<Page<ClusterResponse>> {
    const [acc] = isUuid(cloudAccountIdentity)
      ? await this.txHost.tx.query(`SELECT id FROM cloud_accounts WHERE identity = $1 AND organisation_id = $2`, [cloudAccountIdentity, org.id])
      : [];
    if (!acc) throw new NotFoundException(`Cloud account '${cloudAccountIdentity}' was not found in organisation '${org.slug}'.`);
    return this.page({ organisationId: org.id, cloudAccountId: Number(acc.id) }, query, { showCompute: true });
  }

  async listAll(
    query: PageQueryDto & { includeDetails?: boolean; 'show-compute'?: boolean; hideDeleted?: boolean },
  ): Promise<Page<ClusterResponse>> {
    // Admin lists are not defined by the interface: page form A, which the original admin client decodes.
    return this.page(
      { includeDeleted: query.hideDeleted === false },
      query,
      { includeDetails: query.includeDetails, showCompute: query['show-compute'] ?? true },
      'A',
    );
  }

  async get(org: OrganisationEntity, envSlug: string, clusterSlug: string, opts: ViewOptions): Promise<ClusterResponse> {
    const { cluster } = await this.lookup.cluster(org, envSlug, clusterSlug);
    return this.view.one(cluster, opts);
  }

  private async page(scope: ClusterScope, query: PageQueryDto, opts: ViewOptions, form: 'A' | 'B' = 'B'): Promise<Page<ClusterResponse>> {
    const req = toPageRequest(query, SORTABLE);
    const { rows, total } = await clusterPage(
      (text, params) => this.txHost.tx.query(text, params),
      scope,
      orderByEntries(req, SORTABLE, 'c.id'),
      req.size,
      req.offset,
    );
    return toPage(await this.view.many(rows, opts), total, req, form);
  }
}
