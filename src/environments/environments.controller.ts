import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Patch, Post, Query } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext, RequireOrgRole } from '../auth/organisation-access';
import { ApiStandardErrors } from '../common/api-docs';
import { ValidationFailedException } from '../common/errors';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import {
  CountResponse,
  CreateEnvironmentRequest,
  EnvironmentListQuery,
  EnvironmentMemberResponse,
  EnvironmentResponse,
  SetEnvironmentMemberRequest,
  ShowComputeQuery,
  UpdateEnvironmentRequest,
} from './dto/environment.dto';
import { EnvironmentsService } from './environments.service';

const uuid = () =>
  new ParseUUIDPipe({ exceptionFactory: () => ValidationFailedException.forField('memberIdentity', 'memberIdentity must be a UUID') });

@ApiTags('Environments')
@ApiParam({ name: 'organisationSlug', example: 'acme' })
@Controller('api/v1/orgs/:organisationSlug/environments')
export class EnvironmentsController {
  constructor(private readonly environments: EnvironmentsService) {}

  @Get()
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: 'List the environments of the organisation (page form A)' })
  @ApiPageResponse(EnvironmentResponse, 'A')
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext, @Query() query: EnvironmentListQuery) {
    return this.environments.list(ctx.organisation, query, query['show-compute'] === true);
  }

  @Post()
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiOperation({ summary: 'Create an environment; its slug is derived from the name and unique in the organisation' })
  @ApiOkResponse({ type: EnvironmentResponse })
  @ApiStandardErrors({ notFound: false, conflict: 'An environment with the same slug exists' })
  create(@OrgContext() ctx: OrganisationContext, @Body() body: CreateEnvironmentRequest) {
    return this.environments.create(ctx.organisation, body);
  }

  @Get('count')
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: 'Count the environments of the organisation' })
  @ApiOkResponse({ type: CountResponse })
  @ApiStandardErrors({ notFound: false, badRequest: false })
  count(@OrgContext() ctx: OrganisationContext) {
    return this.environments.count(ctx.organisation);
  }

  @Get(':environmentSlug')
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: 'Get one environment' })
  @ApiOkResponse({ type: EnvironmentResponse })
  @ApiStandardErrors()
  get(@OrgContext() ctx: OrganisationContext, @Param('environmentSlug') slug: string, @Query() query: ShowComputeQuery) {
    return this.environments.get(ctx.organisation, slug, query['show-compute'] === true);
  }

  @Patch(':environmentSlug')
  @RequireOrgRole('MEMBER')
  @ApiOperation({ summary: 'Change name, description, purpose or type; the slug stays' })
  @ApiOkResponse({ type: EnvironmentResponse })
  @ApiStandardErrors()
  update(@OrgContext() ctx: OrganisationContext, @Param('environmentSlug') slug: string, @Body() body: UpdateEnvironmentRequest) {
    return this.environments.update(ctx.organisation, slug, body);
  }

  @Delete(':environmentSlug')
  @HttpCode(204)
  @RequireOrgRole('MEMBER')
  @ApiOperation({ summary: 'Delete an environment (refused while it holds clusters that are not deleted)' })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiStandardErrors({ conflict: 'The environment still holds clusters' })
  async delete(@OrgContext() ctx: OrganisationContext, @Param('environmentSlug') slug: string): Promise<void> {
    await this.environments.delete(ctx.organisation, slug);
  }

  @Get(':environmentSlug/members')
  @RequireOrgRole('VIEWER')
  @ApiOperation({
    summary: "Every organisation member with the kubernetesRole that applies in this environment (the override, else the organisation member's)",
  })
  @ApiPageResponse(EnvironmentMemberResponse, 'A')
  @ApiStandardErrors()
  members(@OrgContext() ctx: OrganisationContext, @Param('environmentSlug') slug: string, @Query() query: PageQueryDto) {
    return this.environments.members(ctx.organisation, slug, query);
  }

  @Post(':environmentSlug/members/:memberIdentity')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiOperation({
    summary: "Add or change a member's kubernetesRole in this environment (ADMIN: it grants cluster access); answers the environment's member list",
  })
  @ApiParam({ name: 'memberIdentity', format: 'uuid', description: 'Identity of the organisation membership' })
  @ApiOkResponse({ type: [EnvironmentMemberResponse] })
  @ApiStandardErrors()
  setMember(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') slug: string,
    @Param('memberIdentity', uuid()) memberIdentity: string,
    @Body() body: SetEnvironmentMemberRequest,
  ) {
    return this.environments.setMember(ctx, slug, memberIdentity, body.kubernetesRole);
  }

  @Delete(':environmentSlug/members/:memberIdentity')
  @HttpCode(204)
  @RequireOrgRole('ADMIN')
  @ApiOperation({ summary: "Remove a member's environment role; the organisation member's kubernetesRole applies again" })
  @ApiParam({ name: 'memberIdentity', format: 'uuid' })
  @ApiNoContentResponse({ description: 'Removed' })
  @ApiStandardErrors()
  async removeMember(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') slug: string,
    @Param('memberIdentity', uuid()) memberIdentity: string,
  ): Promise<void> {
    await this.environments.removeMember(ctx, slug, memberIdentity);
  }
}
