import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext, RequireOrgRole } from '../auth/organisation-access';
import { ApiStandardErrors } from '../common/api-docs';
import { CreateClusterNodePoolDto, NodePoolResponse, UpdateNodePoolDto } from './dto/node-pool.dto';
import { NodePoolsService } from './node-pools.service';


@ApiTags('Node pools')
@Controller('api/v1/orgs/:organisationSlug/clusters/:environmentSlug/:clusterSlug/pools')
@ApiParam({ name: 'organisationSlug' })
@ApiParam({ name: 'environmentSlug' })
@ApiParam({ name: 'clusterSlug' })
export class NodePoolsController {
  constructor(private readonly pools: NodePoolsService) {}

  @Get()
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: "List a cluster's node pools" })
  @ApiOkResponse({ type: [NodePoolResponse] })
  @ApiStandardErrors()
  list(@OrgContext() ctx: OrganisationContext, @Param('environmentSlug') env: string, @Param('clusterSlug') cluster: string) {
    return this.pools.list(ctx.organisation, env, cluster);
  }

  @Post()
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiOperation({ summary: 'Add a node pool', description: "nodeSize must be a node type of the cluster's provider; minSize <= maxSize; names unique per cluster" })
  @ApiOkResponse({ type: NodePoolResponse })
  @ApiStandardErrors({ conflict: 'Name taken in the cluster, or the cluster is being deleted' })
  create(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') env: string,
    @Param('clusterSlug') cluster: string,
    @Body() body: CreateClusterNodePoolDto,
  ): Promise<NodePoolResponse> {
    return this.pools.create(ctx.organisation, env, cluster, body);
  }

  @Put(':nodePoolId')
  @RequireOrgRole('MEMBER')
  @ApiParam({ name: 'nodePoolId', schema: { type: 'string', maxLength: 36 }, description: "The node pool's identity (uuid) or its numeric id" })
  @ApiOperation({ summary: 'Replace a node pool (the whole definition)' })
  @ApiOkResponse({ type: NodePoolResponse })
  @ApiStandardErrors({ conflict: 'Name taken in the cluster, or the cluster is being deleted' })
  update(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') env: string,
    @Param('clusterSlug') cluster: string,
    @Param('nodePoolId') nodePoolId: string,
    @Body() body: UpdateNodePoolDto,
  ): Promise<NodePoolResponse> {
    return this.pools.update(ctx.organisation, env, cluster, nodePoolId, body);
  }

  @Delete(':nodePoolId')
  @HttpCode(204)
  @RequireOrgRole('MEMBER')
  @ApiParam({ name: 'nodePoolId', schema: { type: 'string', maxLength: 36 }, description: "The node pool's identity (uuid) or its numeric id" })
  @ApiOperation({ summary: 'Remove a node pool' })
  @ApiNoContentResponse({ description: 'Removed' })
  @ApiStandardErrors({ conflict: 'The cluster is being deleted' })
  async remove(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') env: string,
    @Param('clusterSlug') cluster: string,
    @Param('nodePoolId') nodePoolId: string,
  ): Promise<void> {
    await this.pools.remove(ctx.organisation, env, cluster, nodePoolId);
  }
}
