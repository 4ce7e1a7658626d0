import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
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
  @ApiDoc({
    summary: "List a cluster's node pools",
    description: 'Every node pool of the cluster with its node type, size bounds and autoscaling settings, as a plain array.',
    errors: '404 when the environment or the cluster does not exist.',
  })
  @ApiOkResponse({ type: [NodePoolResponse] })
  @ApiStandardErrors()
  list(@OrgContext() ctx: OrganisationContext, @Param('environmentSlug') env: string, @Param('clusterSlug') cluster: string) {
    return this.pools.list(ctx.organisation, env, cluster);
  }

  @Post()
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiDoc({
    summary: 'Add a node pool',
    description: "nodeSize must be a node type of the cluster's provider; minSize <= maxSize; names unique per cluster.",
  })
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
  @ApiDoc({
    summary: 'Replace a node pool (the whole definition)',
    description:
      "Replaces the node pool's whole definition: fields left out take their defaults rather than keeping their old values " +
      "(only the name stays when left out). nodeSize must be a node type of the cluster's provider, minSize may not exceed " +
      "maxSize and the name stays unique in the cluster. The path accepts the pool's identity (uuid) or its numeric id.",
    errors: '404 when the pool is not in the cluster; 409 when the new name is taken or the cluster is being deleted.',
  })
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
  @ApiDoc({
    summary: 'Remove a node pool',
    description:
      'Removes the node pool (audited NODE_POOL_DELETED). The last pool may be removed too: a cluster may run without node ' +
      "pools, which are often managed as separate resources. The path accepts the pool's identity (uuid) or its numeric id.",
    errors: '404 when the pool is not in the cluster; 409 while the cluster is being deleted.',
  })
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
