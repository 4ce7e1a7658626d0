import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { OwnTransaction } from '../audit/audited-transaction';
import { OrgContext, OrganisationContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { registeredIdentity } from '../common/openapi-polish';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { ClusterView } from './cluster-view';
import { CLUSTER_SORTABLE, ClustersQueryService } from './clusters-query.service';
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

/**
 * A complete create request, where a newcomer most needs one. It works as it stands once `cloudAccountIdentity` is
 * one of the caller's accounts (GET .../cloud-accounts); test/common/try-it-out.e2e-spec.ts posts it.
 */
const CREATE_CLUSTER_EXAMPLE = {
  summary: 'A cluster with two node pools',
  description:
    'cloudAccountIdentity is the demo organisation\'s cloud account (a fresh install has it, with a cluster named web; ' +
    'this one is named api); elsewhere use one of your cloud accounts on platform_1 ' +
    '(GET /api/v1/orgs/{organisationSlug}/cloud-accounts). Regions, node types and versions come from the catalog ' +
    '(GET .../cloud-providers/platform_1/regions, /api/v1/cloud-providers/platform_1/nodetypes, /api/v1/cluster-versions).',
  value: {
    name: 'api',
    cloudAccountIdentity: registeredIdentity('cloudAccountIdentity'),
    region: 'eu-central-1',
    version: '1.31.6',
    description: 'Public API of the web shop',
    clusterPodSubnet: { ipRange: '10.244.0.0/16' },
    serviceSubnet: { ipRange: '10.96.0.0/12' },
    enableAutoUpgrade: true,
    updateChannel: 'stable',
    nodePools: [
      { name: 'system', nodeSize: 'm5.large', minSize: 2, maxSize: 3 },
      { name: 'workers', nodeSize: 'm5.xlarge', minSize: 2, maxSize: 6, autoScaling: true, labels: { tier: 'web' } },
    ],
  },
};

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
  @ApiDoc({
    summary: "List the organisation's clusters (optionally those using one maintenance schedule)",
    description:
      'Every cluster of the organisation that is not deleted, across its environments. `maintenanceSchedule` (a schedule ' +
      'identity) keeps the clusters that use that schedule; `includeDetails` adds actualState and `show-compute` fills cpu ' +
      'and memory.',
  })
  @ApiPageResponse(ClusterResponse, { form: 'B', sortable: CLUSTER_SORTABLE })
  @ApiStandardErrors({ notFound: false })
  listForOrganisation(@OrgContext() ctx: OrganisationContext, @Query() query: ClusterOrgListQuery) {
    return this.queries.listForOrganisation(ctx.organisation, query);
  }

  @Get('cloud-accounts/:cloudAccountIdentity/clusters')
  @RequireOrgRole('VIEWER')
  @ApiParam({ name: 'cloudAccountIdentity', format: 'uuid' })
  @ApiDoc({
    summary: 'List the clusters using a cloud account',
    description: 'The clusters (not deleted) that run on the given cloud account of the organisation, e.g. to see what blocks deleting the account.',
    errors: '404 when the cloud account is not in the organisation.',
  })
  @ApiPageResponse(ClusterResponse, { form: 'B', sortable: CLUSTER_SORTABLE })
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
  @ApiDoc({
    summary: "List an environment's clusters (show-compute fills cpu and memory)",
    description:
      'The clusters (not deleted) of one environment. `show-compute` fills cpu and memory from the node pools; ' +
      '`includeDetails` adds actualState.',
    errors: '404 when the environment does not exist in the organisation.',
  })
  @ApiPageResponse(ClusterResponse, { form: 'B', sortable: CLUSTER_SORTABLE })
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
  @ApiDoc({
    summary: 'Create a cluster',
    description:
      'Answers the cluster in status `new` (provisionStatus `ACCEPTED`, desiredStatus `starting`); the reconciler provisions and starts it step by step.',
  })
  @ApiBody({ type: CreateClusterRequest, examples: { complete: CREATE_CLUSTER_EXAMPLE } })
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
  @ApiDoc({
    summary: 'Get one cluster',
    description:
      'One cluster by environment and cluster slug, with its node pools, addons, network settings and status. ' +
      '`includeDetails` adds actualState (what the provider reports); `show-compute` fills cpu and memory.',
    errors: '404 when the environment or the cluster does not exist (a deleted cluster is not found).',
  })
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
  @OwnTransaction()
  @RequireOrgRole('MEMBER')
  @ApiParam({ name: 'environmentSlug' })
  @ApiParam({ name: 'clusterSlug' })
  @ApiDoc({
    summary: 'Update a cluster',
    description:
      '`status` requests a transition (starting from stopped, stopping from started, deleting from provisioned, started, stopped or unknown); ' +
      'it sets desiredStatus and the reconciler carries it out. `version` accepts an available upgrade or downgrade target while started or stopped.',
  })
  // Only what a person changes first: every field in the example would also request a status transition and an upstream.
  @ApiBody({
    type: UpdateClusterRequest,
    examples: {
      settings: {
        summary: 'Describe the cluster and pin its maintenance schedule',
        value: { description: 'Customer-facing web shop, behind the CDN', deleteProtection: false, maintenanceScheduleIdentity: registeredIdentity('maintenanceScheduleIdentity') },
      },
    },
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
  @OwnTransaction()
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiParam({ name: 'environmentSlug' })
  @ApiParam({ name: 'clusterSlug' })
  @ApiDoc({
    summary: 'Delete a cluster (alias of PATCH {status: "deleting"})',
    description: 'Answers 200 with the cluster, desiredStatus `deleting`; the reconciler deletes it.',
    errors: '409 while deleteProtection is on or the status does not allow it.',
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
