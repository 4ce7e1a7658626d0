import { TransactionHost } from '@nestjs-cls/transactional';
import { isUuid } from '../common/uuid';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Body, Controller, Get, NotFoundException, Param, Put, Query } from '@nestjs/common';
import { ApiOkResponse, ApiParam, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { OwnTransaction } from '../audit/audited-transaction';
import { IsBoolean, IsOptional, IsString, IsUUID, Length } from 'class-validator';
import { PlatformAdminOnly } from '../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ValidationFailedException } from '../common/errors';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { QueryBoolean } from '../clusters/dto/validators';
import { ClustersQueryService } from '../clusters/clusters-query.service';
import { ClusterDetailQuery, ClusterResponse } from '../clusters/dto/cluster.dto';
import { ClusterView } from '../clusters/cluster-view';
import { CLUSTER_SORTABLE } from '../clusters/clusters-query.service';
import { UpdateClusterCommand, UpdateClusterUseCase } from '../clusters/use-cases/update-cluster.use-case';
import { OrganisationEntity } from '../identity/organisation.entity';

export class AdminClusterListQuery extends PageQueryDto {
  @ApiPropertyOptional({ default: false, description: 'true adds actualState' })
  @IsOptional() @QueryBoolean() @IsBoolean({ message: 'includeDetails must be true or false' })
  includeDetails?: boolean;

  @ApiPropertyOptional({ name: 'show-compute', default: true, description: 'false leaves cpu and memory empty' })
  @IsOptional() @QueryBoolean() @IsBoolean({ message: 'show-compute must be true or false' })
  'show-compute'?: boolean;

  @ApiPropertyOptional({ default: true, description: 'false also lists deleted clusters (with deletedAt)' })
  @IsOptional() @QueryBoolean() @IsBoolean({ message: 'hideDeleted must be true or false' })
  hideDeleted?: boolean;
}

/** The original admin client's cluster update: a version change by identity. */
export class AdminUpdateClusterRequest {
  @ApiPropertyOptional({ format: 'uuid', description: 'When given, must be the identity in the path; left out, the path names the cluster' })
  @IsOptional() @IsUUID('all', { message: 'clusterIdentity must be a UUID' })
  clusterIdentity?: string;

  @ApiProperty({ example: '1.31.6', maxLength: 50, description: 'An available upgrade or downgrade target of the running version' })
  @IsString() @Length(1, 50)
  version: string;
}

/** Platform operators' view of every organisation's clusters (registered by AdminModule). */
@ApiTags('Platform administration')
@Controller('admin/v1/clusters')
@PlatformAdminOnly()
export class ClustersAdminController {
  constructor(
    private readonly queries: ClustersQueryService,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly updateCluster: UpdateClusterUseCase,
    private readonly view: ClusterView,
  ) {}

  @Get()
  @ApiDoc({
    summary: 'List all clusters of all organisations (platform administrators only; page form A)',
    description:
      'Every cluster of every organisation. `hideDeleted=false` also lists deleted clusters (with deletedAt); ' +
      '`includeDetails` adds actualState; `show-compute=false` leaves cpu and memory empty.',
  })
  @ApiPageResponse(ClusterResponse, { form: 'A', sortable: CLUSTER_SORTABLE })
  @ApiStandardErrors({ notFound: false })
  list(@Query() query: AdminClusterListQuery) {
    return this.queries.listAll(query);
  }

  @Get(':clusterIdentity')
  @ApiDoc({
    summary: 'One cluster of any organisation by identity (the original admin client; actualState included by default)',
    description:
      'One cluster of any organisation by its identity, as the original admin client reads it: actualState and cpu/memory are ' +
      'included unless `includeDetails=false` or `show-compute=false`.',
    errors: '404 when no cluster that is not deleted has this identity (also for a value that is not a UUID).',
  })
  @ApiParam({ name: 'clusterIdentity', format: 'uuid' })
  @ApiOkResponse({ type: ClusterResponse })
  @ApiStandardErrors()
  async get(@Param('clusterIdentity') identity: string, @Query() query: ClusterDetailQuery): Promise<ClusterResponse> {
    const { organisation, environmentSlug, clusterSlug } = await this.locate(identity);
    return this.queries.get(organisation, environmentSlug, clusterSlug, {
      includeDetails: query.includeDetails ?? true,
      showCompute: query['show-compute'] ?? true,
    });
  }

  @Put(':clusterIdentity')
  @OwnTransaction()
  @ApiDoc({
    summary: 'Change the version of any cluster (the original admin client); the same rules and audit as the cluster PATCH',
    description:
      'Changes the version of any cluster by identity. `version` must be an available upgrade or downgrade target of the ' +
      "running version, and the cluster must be started or stopped; the change is audited like the organisation's cluster " +
      'PATCH and the reconciler carries it out. A `clusterIdentity` in the body must equal the one in the path (400).',
    errors: '404 when the cluster does not exist; 409 while it is not started or stopped.',
  })
  @ApiParam({ name: 'clusterIdentity', format: 'uuid' })
  @ApiOkResponse({ type: ClusterResponse })
  @ApiStandardErrors({ conflict: 'Version change while the cluster is not started or stopped' })
  async update(@Param('clusterIdentity') identity: string, @Body() body: AdminUpdateClusterRequest): Promise<ClusterResponse> {
    if (body.clusterIdentity && body.clusterIdentity.toLowerCase() !== identity.toLowerCase()) {
      throw ValidationFailedException.forField('clusterIdentity', 'clusterIdentity must be the identity in the path');
    }
    const { organisation, environmentSlug, clusterSlug } = await this.locate(identity);
    const cluster = await this.updateCluster.execute(
      new UpdateClusterCommand(organisation, environmentSlug, clusterSlug, { version: body.version }),
    );
    return this.view.one(cluster, { extended: true, showCompute: true });
  }

  private async locate(identity: string): Promise<{ organisation: OrganisationEntity; environmentSlug: string; clusterSlug: string }> {
    const [row] = isUuid(identity)
      ? await this.txHost.tx.query(
          `SELECT c.slug, e.slug AS env_slug, c.organisation_id FROM clusters c JOIN environments e ON e.id = c.environment_id
            WHERE c.identity = $1 AND c.deleted_at IS NULL`,
          [identity],
        )
      : [];
    if (!row) throw new NotFoundException(`Cluster '${identity}' was not found.`);
    const organisation = await this.txHost.tx.getRepository(OrganisationEntity).findOneByOrFail({ id: row.organisation_id });
    return { organisation, environmentSlug: row.env_slug, clusterSlug: row.slug };
  }
}
