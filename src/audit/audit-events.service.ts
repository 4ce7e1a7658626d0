import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, NotFoundException } from '@nestjs/common';
import { applyOrder, orderByEntries, Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import { AuditEventEntity } from './audit-event.entity';
import { AuditEventResponse, ClusterAuditEventResponse } from './dto/audit-event.dto';

const SORTABLE: Record<string, string> = { createdAt: 'e.createdAt', type: 'e.type' };

/** Reads audit events of an organisation, or of one cluster of it (by environment and cluster slug). */
@Injectable()
export class AuditEventsService {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  private toClusterResponse(e: AuditEventEntity): ClusterAuditEventResponse {
    return {
      actorId: e.actorId,
      actorUsername: e.actorUsername,
      cloudAccountName: e.cloudAccountName,
      clusterId: e.clusterId,
      clusterNodePoolId: e.clusterNodePoolId,
      clusterNodePoolName: e.clusterNodePoolName,
      clusterSlug: e.clusterSlug,
      createdAt: e.createdAt.toISOString(),
      customerId: e.organisationId,
      customerSlug: e.organisationSlug,
      details: e.details,
      environmentId: e.environmentId,
      environmentSlug: e.environmentSlug,
      type: e.type,
    };
  }

  private async page(
    organisationId: number,
    query: PageQueryDto,
    cluster?: { environmentSlug: string; clusterSlug: string },
  ): Promise<{ rows: AuditEventEntity[]; total: number; req: ReturnType<typeof toPageRequest> }> {
    // The interface's default order: ascending (oldest first), like every list but the activity feed.
    const req = toPageRequest(query, SORTABLE, [{ property: 'createdAt', direction: 'ASC' }]);
    const qb = this.txHost.tx
      .getRepository(AuditEventEntity)
      .createQueryBuilder('e')
      .where('e.organisationId = :org', { org: organisationId });
    if (cluster) {
      qb.andWhere('e.environmentSlug = :env AND e.clusterSlug = :cluster', {
        env: cluster.environmentSlug,
        cluster: cluster.clusterSlug,
      });
    }
    // Equal keys keep the order of the first sort key.
    applyOrder(qb, orderByEntries(req, SORTABLE, 'e.id', req.sort[0]?.direction ?? 'ASC'));
    const [rows, total] = await qb.offset(req.offset).limit(req.size).getManyAndCount();
    return { rows, total, req };
  }

  async forOrganisation(organisationId: number, query: PageQueryDto): Promise<Page<AuditEventResponse>> {
    const { rows, total, req } = await this.page(organisationId, query);
    return toPage(
      rows.map((e) => ({ ...this.toClusterResponse(e), referencedEntityIdentity: e.referencedEntityIdentity })),
      total,
      req,
      'B',
    );
  }

  async forCluster(
    organisationId: number,
    environmentSlug: string,
    clusterSlug: string,
    query: PageQueryDto,
  ): Promise<Page<ClusterAuditEventResponse>> {
    // The cluster (live or deleted) must have existed under that slug; otherwise the path names nothing.
    const known = await this.txHost.tx.query(
      `SELECT 1 FROM clusters c JOIN environments e ON e.id = c.environment_id
        WHERE c.organisation_id = $1 AND e.slug = $2 AND c.slug = $3 LIMIT 1`,
      [organisationId, environmentSlug, clusterSlug],
    );
    if (!known.length) {
      throw new NotFoundException(`Cluster '${environmentSlug}/${clusterSlug}' was not found in this organisation.`);
    }
    const { rows, total, req } = await this.page(organisationId, query, { environmentSlug, clusterSlug });
    return toPage(rows.map((e) => this.toClusterResponse(e)), total, req, 'B');
  }
}
