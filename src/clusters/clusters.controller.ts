import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext, RequireOrgRole } from '../auth/organisation-access';
import { ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { ClusterView } from './cluster-view';
import { ClustersQueryService } from './clusters-query.service';
import {
  ClusterDetailQuery,
  ClusterEnvListQuery,
  ClusterOrgListQuery,
  ClusterResponse,
  CreateClusterRequest,
  UpdateClusterRequest,
} from './dto/cluster.dto';
import { CreateClusterCommand, CreateClusterUseCase } from './use-cases/create-cluster.use-case';
import { UpdateClusterCommand, UpdateClusterUseCase } from './use-cases/update-cluster.use-case';


@ApiTags('Clusters')
@Controller('api/v1/orgs/:organisationSlug')
@ApiParam({ name: 'organisationSlug' })
export class ClustersController {
  constructor(
    private readonly queries: ClustersQueryService,
    private readonly createCluster: CreateClusterUseCase,
    private readonly updateCluster: UpdateClusterUseCase,
    private readonly view: ClusterView,
  ) {}

  @Get('clusters')
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: "List the organisation's clusters (optionally those using one maintenance schedule)" })
  @ApiPageResponse(ClusterResponse, 'B')
  @ApiStandardErrors({ notFound: false })
  listForOrganisation(@OrgContext() ctx: OrganisationContext, @Query() query: ClusterOrgListQuery) {
    return this.queries.listForOrganisation(ctx.organisation, query);
  }

  @Get('cloud-accounts/:cloudAccountIdentity/clusters')
  @RequireOrgRole('VIEWER')
  @ApiParam({ name: 'cloudAccountIdentity', format: 'uuid' })
  @ApiOperation({ summary: 'List the clusters using a cloud account' })
  @ApiPageResponse(ClusterResponse, 'B')
  @ApiStandardErrors()
  listForCloudAccount(
    @OrgContext() ctx: OrganisationContext,
    @Param('cloudAccountIdentity') cloudAccountIdentity: string,
    @Query() query: PageQueryDto,
  ) {
    return this.queries.listForCloudAccount(ctx.organisation, cloudAccountIdentity, query);
  }

  @Get('clusters/:environmentSlug')
  @RequireOrgRole('VIEWER')
  @ApiParam({ name: 'environmentSlug' })
  @ApiOperation({ summary: "List an environment's clusters (show-compute fills cpu and memory)" })
  @ApiPageResponse(ClusterResponse, 'B')
  @ApiStandardErrors()
  listForEnvironment(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') environmentSlug: string,
    @Query() query: ClusterEnvListQuery,
  ) {
    return this.queries.listForEnvironment(ctx.organisation, environmentSlug, query);
  }

  @Post('clusters/:environmentSlug')
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiParam({ name: 'environmentSlug' })
  @ApiOperation({
    summary: 'Create a cluster',
    description:
      'Answers the cluster in status `new` (provisionStatus `ACCEPTED`, desiredStatus `starting`); the reconciler provisions and starts it step by step.',
  })
  @ApiOkResponse({ type: ClusterResponse })
  @ApiStandardErrors({ conflict: 'Slug taken in the environment, or the clustersPerCustomer quota is reached' })
  async create(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') environmentSlug: string,
    @Body() body: CreateClusterRequest,
  ): Promise<ClusterResponse> {
    const cluster = await this.createCluster.execute(new CreateClusterCommand(ctx.organisation, environmentSlug, body));
    return this.view.one(cluster, { showCompute: true });
  }

  @Get('clusters/:environmentSlug/:clusterSlug')
  @RequireOrgRole('VIEWER')
  @ApiParam({ name: 'environmentSlug' })
  @ApiParam({ name: 'clusterSlug' })
  @ApiOperation({ summary: 'Get one cluster' })
  @ApiOkResponse({ type: ClusterResponse })
  @ApiStandardErrors()
  get(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') environmentSlug: string,
    @Param('clusterSlug') clusterSlug: string,
    @Query() query: ClusterDetailQuery,
  ): Promise<ClusterResponse> {
    return this.queries.get(ctx.organisation, environmentSlug, clusterSlug, {
      includeDetails: query.includeDetails,
      showCompute: query['show-compute'],
    });
  }

  @Patch('clusters/:environmentSlug/:clusterSlug')
  @RequireOrgRole('MEMBER')
  @ApiParam({ name: 'environmentSlug' })
  @ApiParam({ name: 'clusterSlug' })
  @ApiOperation({
    summary: 'Update a cluster',
    description:
      '`status` requests a transition (starting from stopped, stopping from started, deleting from provisioned, started, stopped or unknown); ' +
      'it sets desiredStatus and the reconciler carries it out. `version` accepts an available upgrade or downgrade target while started or stopped.',
  })
  @ApiOkResponse({ type: ClusterResponse })
  @ApiStandardErrors({ conflict: 'Transition not allowed from the current status, delete protection, or version change while not started/stopped' })
  async update(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') environmentSlug: string,
    @Param('clusterSlug') clusterSlug: string,
    @Body() body: UpdateClusterRequest,
  ): Promise<ClusterResponse> {
    const cluster = await this.updateCluster.execute(new UpdateClusterCommand(ctx.organisation, environmentSlug, clusterSlug, body));
    return this.view.one(cluster, { extended: true, showCompute: true });
  }

  @Delete('clusters/:environmentSlug/:clusterSlug')
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiParam({ name: 'environmentSlug' })
  @ApiParam({ name: 'clusterSlug' })
  @ApiOperation({
    summary: 'Delete a cluster (alias of PATCH {status: "deleting"})',
    description: 'Answers 200 with the cluster, desiredStatus `deleting`; the reconciler deletes it. 409 while deleteProtection is on or the status does not allow it.',
  })
  @ApiOkResponse({ type: ClusterResponse })
  @ApiStandardErrors({ conflict: 'Delete protection, or deleting is not allowed from the current status' })
  async remove(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') environmentSlug: string,
    @Param('clusterSlug') clusterSlug: string,
  ): Promise<ClusterResponse> {
    const request = Object.assign(new UpdateClusterRequest(), { status: 'deleting' });
    const cluster = await this.updateCluster.execute(new UpdateClusterCommand(ctx.organisation, environmentSlug, clusterSlug, request));
    return this.view.one(cluster, { extended: true, showCompute: true });
  }
}
