import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Patch, Post, Query } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
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
  @ApiDoc({
    summary: 'List the environments of the organisation (page form A)',
    description: 'The environments of the organisation that are not deleted; `show-compute` adds the cpu and memory of their clusters.',
  })
  @ApiPageResponse(EnvironmentResponse, { form: 'A', sortable: ['id', 'name', 'slug', 'type', 'createdAt', 'modifiedAt'] })
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext, @Query() query: EnvironmentListQuery) {
    return this.environments.list(ctx.organisation, query, query['show-compute'] === true);
  }

  @Post()
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiDoc({
    summary: 'Create an environment; its slug is derived from the name and unique in the organisation',
    description:
      'Creates an environment. Its slug is derived from the name (lower case letters, digits and dashes, at most 63 ' +
      "characters) and must be unique among the organisation's environments; a name without letters or digits, or one whose " +
      'slug is a word reserved in environment paths (such as `count`, `types`), is 400.',
    errors: '409 when the slug is taken.',
  })
  @ApiOkResponse({ type: EnvironmentResponse })
  @ApiStandardErrors({ notFound: false, conflict: 'An environment with the same slug exists' })
  create(@OrgContext() ctx: OrganisationContext, @Body() body: CreateEnvironmentRequest) {
    return this.environments.create(ctx.organisation, body);
  }

  @Get('count')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'Count the environments of the organisation',
    description: 'The number of environments of the organisation that are not deleted.',
  })
  @ApiOkResponse({ type: CountResponse })
  @ApiStandardErrors({ notFound: false, badRequest: false })
  count(@OrgContext() ctx: OrganisationContext) {
    return this.environments.count(ctx.organisation);
  }

  @Get(':environmentSlug')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'Get one environment',
    description: 'One environment by slug; `show-compute` adds the cpu and memory of its clusters.',
    errors: '404 when the environment does not exist in the organisation.',
  })
  @ApiOkResponse({ type: EnvironmentResponse })
  @ApiStandardErrors()
  get(@OrgContext() ctx: OrganisationContext, @Param('environmentSlug') slug: string, @Query() query: ShowComputeQuery) {
    return this.environments.get(ctx.organisation, slug, query['show-compute'] === true);
  }

  @Patch(':environmentSlug')
  @RequireOrgRole('MEMBER')
  @ApiDoc({
    summary: 'Change name, description, purpose or type; the slug stays',
    description:
      'Changes the name, description, purpose or type of the environment; only the given fields change. The slug, and so ' +
      'every URL of the environment, stays as created.',
    errors: '404 when the environment does not exist.',
  })
  @ApiOkResponse({ type: EnvironmentResponse })
  @ApiStandardErrors()
  update(@OrgContext() ctx: OrganisationContext, @Param('environmentSlug') slug: string, @Body() body: UpdateEnvironmentRequest) {
    return this.environments.update(ctx.organisation, slug, body);
  }

  @Delete(':environmentSlug')
  @HttpCode(204)
  @RequireOrgRole('MEMBER')
  @ApiDoc({
    summary: 'Delete an environment (refused while it holds clusters that are not deleted)',
    description:
      'Deletes the environment (soft delete, audited). Refused with 409 while it still holds clusters that are not deleted: ' +
      'delete those first.',
    errors: '404 when the environment does not exist.',
  })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiStandardErrors({ conflict: 'The environment still holds clusters' })
  async delete(@OrgContext() ctx: OrganisationContext, @Param('environmentSlug') slug: string): Promise<void> {
    await this.environments.delete(ctx.organisation, slug);
  }

  @Get(':environmentSlug/members')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: "Every organisation member with the kubernetesRole that applies in this environment (the override, else the organisation member's)",
    description:
      "Every member of the organisation with the kubernetesRole that applies in this environment: the environment's override " +
      "where one is set, else the member's organisation-wide kubernetesRole.",
    errors: '404 when the environment does not exist.',
  })
  @ApiPageResponse(EnvironmentMemberResponse, { form: 'A', sortable: ['email', 'createdAt', 'kubernetesRole', 'memberIdentity'] })
  @ApiStandardErrors()
  members(@OrgContext() ctx: OrganisationContext, @Param('environmentSlug') slug: string, @Query() query: PageQueryDto) {
    return this.environments.members(ctx.organisation, slug, query);
  }

  @Post(':environmentSlug/members/:memberIdentity')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: "Add or change a member's kubernetesRole in this environment (ADMIN: it grants cluster access); answers the environment's member list",
    description:
      "Sets the member's kubernetesRole in this environment (an override of the organisation-wide role), creating or changing " +
      "the override; audited. It grants cluster access, hence ADMIN. Only an OWNER may change an OWNER's access (403). " +
      "Answers the environment's member list.",
    errors: '404 when the environment or the membership does not exist.',
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
  @ApiDoc({
    summary: "Remove a member's environment role; the organisation member's kubernetesRole applies again",
    description:
      "Removes the member's override in this environment; the member's organisation-wide kubernetesRole applies there again. " +
      "Only an OWNER may change an OWNER's access (403).",
    errors: '404 when the environment or the membership does not exist, or the member has no override here.',
  })
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
