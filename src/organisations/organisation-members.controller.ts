import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Patch, Post, Query } from '@nestjs/common';
import { ApiBody, ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { CurrentPrincipal, Principal } from '../identity/principal';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import {
  AddMemberRequest,
  OrganisationMemberResponse,
  OrganisationMembershipResponse,
  UpdateMemberRequest,
} from './dto/member.dto';
import { OrganisationMembersService } from './organisation-members.service';

const SLUG_PARAM = { name: 'organisationSlug', example: 'acme', description: 'Slug of the organisation' };
const MEMBER_PARAM = { name: 'memberIdentity', format: 'uuid', description: 'Identity of the membership' };

@ApiTags('Organisation members')
@Controller('api/v1')
export class OrganisationMembersController {
  constructor(private readonly members: OrganisationMembersService) {}

  @Get('organisations/:organisationSlug/me')
  @RequireOrgRole('VIEWER')
  @ApiParam(SLUG_PARAM)
  @ApiDoc({
    summary: "The caller's own membership of the organisation",
    description: "The caller's own membership of the organisation: role, kubernetesRole and when they joined.",
    errors: '404 for a platform administrator who reads the organisation without being a member (there is no membership to answer); anyone else who is not a member gets 403.',
  })
  @ApiOkResponse({ type: OrganisationMemberResponse })
  @ApiStandardErrors({ badRequest: false })
  me(@OrgContext() ctx: OrganisationContext): Promise<OrganisationMemberResponse> {
    return this.members.me(ctx);
  }

  @Get('organisations/:organisationSlug/members')
  @RequireOrgRole('VIEWER')
  @ApiParam(SLUG_PARAM)
  @ApiDoc({
    summary: 'Members of the organisation (VIEWER); sortable by username, email, role, kubernetesRole, joinedAt',
    description: 'The members of the organisation with username, email, role, kubernetesRole and joinedAt.',
  })
  @ApiPageResponse(OrganisationMemberResponse, { form: 'A', sortable: ['username', 'email', 'role', 'kubernetesRole', 'joinedAt'] })
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext, @Query() query: PageQueryDto) {
    return this.members.list(ctx.organisation.id, query);
  }

  @Post('organisations/:organisationSlug/members')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiParam(SLUG_PARAM)
  @ApiDoc({
    summary: 'Add a user to the organisation by username or email (ADMIN; only an OWNER may grant OWNER)',
    description: 'Defaults: role VIEWER, kubernetesRole VIEW. Answers 200 with no body.',
  })
  // jane.doe is a user of a fresh install (the demo) who is not a member yet.
  @ApiBody({ type: AddMemberRequest, examples: { byUsername: { summary: 'By username', value: { username: 'jane.doe', role: 'MEMBER', kubernetesRole: 'VIEW' } } } })
  @ApiOkResponse({ description: 'Added; no body' })
  @ApiStandardErrors({ conflict: 'The user is already a member' })
  async add(@OrgContext() ctx: OrganisationContext, @Body() body: AddMemberRequest): Promise<void> {
    await this.members.add(ctx, body);
  }

  @Patch('organisations/:organisationSlug/members/:memberIdentity')
  @RequireOrgRole('ADMIN')
  @ApiParam(SLUG_PARAM)
  @ApiParam(MEMBER_PARAM)
  @ApiDoc({
    summary: "Change a member's role or kubernetesRole (ADMIN; OWNER to grant or change OWNER)",
    description: 'The last OWNER cannot be demoted (409).',
  })
  @ApiOkResponse({ type: OrganisationMemberResponse })
  @ApiStandardErrors({ conflict: 'The member is the last OWNER' })
  update(
    @OrgContext() ctx: OrganisationContext,
    @Param('memberIdentity', new ParseUUIDPipe()) memberIdentity: string,
    @Body() body: UpdateMemberRequest,
  ): Promise<OrganisationMemberResponse> {
    return this.members.update(ctx, memberIdentity, body);
  }

  @Delete('organisations/:organisationSlug/members/:memberIdentity')
  @HttpCode(204)
  @RequireOrgRole('ADMIN')
  @ApiParam(SLUG_PARAM)
  @ApiParam(MEMBER_PARAM)
  @ApiDoc({
    summary: 'Remove a member (ADMIN; only an OWNER removes an OWNER; the last OWNER stays, 409)',
    description:
      'Removes a member from the organisation; audited. Only an OWNER may remove an OWNER (403), and the last OWNER cannot be ' +
      'removed (409).',
    errors: '404 when the organisation has no member with this identity.',
  })
  @ApiNoContentResponse({ description: 'Removed' })
  @ApiStandardErrors({ conflict: 'The member is the last OWNER' })
  async remove(
    @OrgContext() ctx: OrganisationContext,
    @Param('memberIdentity', new ParseUUIDPipe()) memberIdentity: string,
  ): Promise<void> {
    await this.members.remove(ctx, memberIdentity);
  }

  @Get('memberships')
  @ApiDoc({
    summary: "The caller's memberships across organisations; sortable by name, slug, role, joinedAt",
    description: "Every organisation the caller is a member of, with the caller's role there.",
  })
  @ApiPageResponse(OrganisationMembershipResponse, { form: 'A', sortable: ['name', 'slug', 'role', 'joinedAt'] })
  @ApiStandardErrors({ notFound: false })
  memberships(@CurrentPrincipal() p: Principal, @Query() query: PageQueryDto) {
    return this.members.memberships(p.user, query);
  }
}
