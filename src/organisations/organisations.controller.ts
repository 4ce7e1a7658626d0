import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext, RequireOrgRole } from '../auth/organisation-access';
import { CurrentPrincipal, Principal } from '../auth/principal';
import { ApiStandardErrors } from '../common/api-docs';
import {
  ComputeInformationResponse,
  CreateOrganisationRequest,
  OrganisationResponse,
  QuotaResponse,
  UpdateOrganisationRequest,
} from './dto/organisation.dto';
import { OrganisationsService } from './organisations.service';

const SLUG_PARAM = { name: 'organisationSlug', example: 'acme', description: 'Slug of the organisation' };

@ApiTags('Organisations')
@Controller('api/v1')
export class OrganisationsController {
  constructor(private readonly organisations: OrganisationsService) {}

  @Post('organisations')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Create an organisation; the caller becomes its OWNER (needs canCreateOrganisations)',
  })
  @ApiOkResponse({ type: OrganisationResponse })
  @ApiStandardErrors({ notFound: false, conflict: 'An organisation with the slug derived from organisationName exists' })
  async create(@CurrentPrincipal() p: Principal, @Body() body: CreateOrganisationRequest): Promise<OrganisationResponse> {
    return this.organisations.toResponse(await this.organisations.create(p.user, body));
  }

  @Get('organisations/:organisationSlug')
  @RequireOrgRole('VIEWER')
  @ApiParam(SLUG_PARAM)
  @ApiOperation({ summary: 'Read an organisation (VIEWER)' })
  @ApiOkResponse({ type: OrganisationResponse })
  @ApiStandardErrors({ badRequest: false })
  get(@OrgContext() ctx: OrganisationContext): OrganisationResponse {
    return this.organisations.toResponse(ctx.organisation);
  }

  @Patch('organisations/:organisationSlug')
  @RequireOrgRole('ADMIN')
  @ApiParam(SLUG_PARAM)
  @ApiOperation({ summary: "Change an organisation's details (ADMIN); renaming keeps the slug" })
  @ApiOkResponse({ type: OrganisationResponse })
  @ApiStandardErrors()
  async update(@OrgContext() ctx: OrganisationContext, @Body() body: UpdateOrganisationRequest): Promise<OrganisationResponse> {
    return this.organisations.toResponse(await this.organisations.update(ctx.organisation.id, body));
  }

  @Delete('organisations/:organisationIdentity')
  @HttpCode(204)
  @RequireOrgRole('OWNER', { identityParam: 'organisationIdentity', platformAdmin: true })
  @ApiParam({ name: 'organisationIdentity', format: 'uuid', description: 'Identity of the organisation' })
  @ApiOperation({
    summary: 'Delete an organisation (OWNER or platform administrator)',
    description: 'Refused (409) while it has cloud accounts, clusters that are not deleted, or active monitoring tenants.',
  })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiStandardErrors({ badRequest: false, conflict: 'The organisation still has cloud accounts, clusters or monitoring tenants' })
  async delete(@OrgContext() ctx: OrganisationContext): Promise<void> {
    await this.organisations.delete(ctx.organisation.id);
  }

  @Get('organisations/:organisationSlug/quotas')
  @RequireOrgRole('VIEWER')
  @ApiParam(SLUG_PARAM)
  @ApiOperation({ summary: "The organisation's quotas (VIEWER)" })
  @ApiOkResponse({ type: QuotaResponse })
  @ApiStandardErrors({ badRequest: false })
  quotas(@OrgContext() ctx: OrganisationContext): QuotaResponse {
    return this.organisations.quota(ctx.organisation);
  }

  @Get('compute-information/organisation/:organisationSlug')
  @RequireOrgRole('VIEWER')
  @ApiParam(SLUG_PARAM)
  @ApiOperation({
    summary: 'Compute of the organisation (VIEWER)',
    description:
      'Over clusters that are not deleted: count, CPU cores and memory (MiB) of node types times pool sizes, plus what the registered nodes of bring-your-own-node pools reported.',
  })
  @ApiOkResponse({ type: ComputeInformationResponse })
  @ApiStandardErrors({ badRequest: false })
  compute(@OrgContext() ctx: OrganisationContext): Promise<ComputeInformationResponse> {
    return this.organisations.computeInformation(ctx.organisation);
  }
}
