import { Body, Controller, Delete, Headers, HttpCode, Ip, Param, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { rateLimitHeaders } from '../../auth/request-rate-limits';
import { ApiBearerAuth, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext } from '../../identity/organisation-context';
import { RequireOrgRole } from '../../common/route-access';
import { CurrentPrincipal, Principal } from '../../identity/principal';
import { Public } from '../../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../../common/api-docs';
import { JoinTokensRevokedResponse, NodePoolJoinConfigResponse, NodeRegistrationRequest, NodeRegistrationResponse } from '../dto/byon.dto';
import { NodeJoinService } from './node-join.service';

const POOL_PARAM = { name: 'nodePoolIdentity', schema: { type: 'string', maxLength: 36 }, description: "The node pool's identity (its numeric id is accepted too)" };

@ApiTags('Node pools')
@Controller('api/v1/orgs/:organisationSlug/clusters/:environmentSlug/:clusterSlug/pools/:nodePoolIdentity')
@ApiParam({ name: 'organisationSlug' })
@ApiParam({ name: 'environmentSlug' })
@ApiParam({ name: 'clusterSlug' })
@ApiParam(POOL_PARAM)
export class NodeJoinController {
  constructor(private readonly join: NodeJoinService) {}

  @Post('join-config')
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiDoc({
    summary: 'Create a join config for a bring-your-own-node pool (with a fresh bootstrap token)',
    description:
      'Answers the versions, install and upgrade scripts, kubelet config, cloud-init user data and the join command of the pool. ' +
      'The join command (and the cloud-init that runs it) carries a new bootstrap token for this pool only: shown once, stored as a ' +
      'SHA-256 hash, valid NODE_JOIN_TOKEN_TTL_MINUTES (default 60) for up to maxSize new nodes.',
    errors: '409 for a pool of a cloud cluster, before the control plane is provisioned, or while the cluster is being deleted.',
  })
  @ApiOkResponse({ type: NodePoolJoinConfigResponse })
  @ApiStandardErrors({ conflict: 'Not a bring-your-own-node cluster, control plane not provisioned yet, or the cluster is being deleted' })
  createJoinConfig(
    @OrgContext() ctx: OrganisationContext,
    @CurrentPrincipal() principal: Principal,
    @Param('environmentSlug') env: string,
    @Param('clusterSlug') cluster: string,
    @Param('nodePoolIdentity') nodePool: string,
  ): Promise<NodePoolJoinConfigResponse> {
    return this.join.createJoinConfig(ctx.organisation, principal, env, cluster, nodePool);
  }

  @Delete('join-tokens')
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiDoc({
    summary: 'Revoke every open join token of a bring-your-own-node pool',
    description: 'Registered nodes stay; the revoked tokens register no node any more (401). Answers how many unexpired tokens were revoked.',
  })
  @ApiOkResponse({ type: JoinTokensRevokedResponse })
  @ApiStandardErrors({ conflict: 'Not a bring-your-own-node cluster, or the cluster is being deleted' })
  revokeTokens(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') env: string,
    @Param('clusterSlug') cluster: string,
    @Param('nodePoolIdentity') nodePool: string,
  ): Promise<JoinTokensRevokedResponse> {
    return this.join.revokeTokens(ctx.organisation, env, cluster, nodePool);
  }
}

@ApiTags('Node pools')
@Controller('api/v1/node-registrations')
export class NodeRegistrationsController {
  constructor(private readonly join: NodeJoinService) {}

  @Post()
  @Public()
  @HttpCode(200)
  @ApiBearerAuth('nodeJoinToken')
  @ApiDoc({
    summary: 'Register a bring-your-own node (called by the join command)',
    description:
      'Authenticated by a node join token only (`Authorization: Bearer <token>`), not by a user credential. The token decides the ' +
      'node pool; `nodePoolIdentity`, when sent, must be that pool. Missing, unknown, revoked, expired or used-up token, or a token of ' +
      'another pool: 401 (counted against the address like failed logins). Registering a name already in the pool updates that node ' +
      'and spends none of the token budget. Rate limited per token (NODE_REGISTRATION_LIMIT_PER_MINUTE); an accepted token\'s ' +
      'answer carries RateLimit-Limit, -Remaining and -Reset of that budget.',
  })
  @ApiOkResponse({ type: NodeRegistrationResponse })
  @ApiStandardErrors({ notFound: false, conflict: 'The node pool is full (maxSize nodes) or the cluster is being deleted' })
  register(
    @Ip() ip: string,
    @Headers('authorization') authorization: string | undefined,
    @Body() body: NodeRegistrationRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<NodeRegistrationResponse> {
    // RateLimit-* of the join token's budget (set before the answer; kept on a later 409 too).
    return this.join.register(ip, authorization, body, (state) => reply.headers(rateLimitHeaders(state)));
  }
}
