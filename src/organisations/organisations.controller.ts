import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { ApiForbiddenResponse, ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { CurrentPrincipal, Principal } from '../identity/principal';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { NOT_MEMBER_REFUSED } from '../common/operation-descriptions';
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
  @ApiDoc({
    summary: 'Create an organisation; the caller becomes its OWNER (needs canCreateOrganisations)',
    description:
      'Creates an organisation; its slug is derived from organisationName and the caller becomes its OWNER. ' +
      '`acceptedAgreements` must include every agreement the service requires, and a `vatNumber` must be a valid VAT number ' +
      '(country prefix, format and check digits); both are 400 otherwise.',
    access:
      'The caller needs canCreateOrganisations (403 otherwise). `organisationType` sets the cluster quota: a caller who is not a platform ' +
      'administrator may choose only the types of SELF_SERVICE_ORGANISATION_TYPES (default TRIAL, INDIVIDUAL, BUSINESS; 403 naming the rule otherwise).',
    errors: '409 when an organisation with the derived slug exists.',
  })
  @ApiOkResponse({ type: OrganisationResponse })
  @ApiForbiddenResponse({
    description: 'The caller may not create organisations (canCreateOrganisations) or organisations of this organisationType, or the token is READ_ONLY',
  })
  @ApiStandardErrors({ notFound: false, conflict: 'An organisation with the slug derived from organisationName exists' })
  async create(@CurrentPrincipal() p: Principal, @Body() body: CreateOrganisationRequest): Promise<OrganisationResponse> {
    return this.organisations.toResponse(await this.organisations.create(p.user, body));
  }

  @Get('organisations/:organisationSlug')
  @RequireOrgRole('VIEWER')
  @ApiParam(SLUG_PARAM)
  @ApiDoc({
    summary: 'Read an organisation (VIEWER)',
    description: "The organisation's details: name, slug, type, company and contact details, VAT code and whether it was validated, accepted terms.",
    errors: NOT_MEMBER_REFUSED,
  })
  @ApiOkResponse({ type: OrganisationResponse })
  @ApiStandardErrors({ badRequest: false })
  get(@OrgContext() ctx: OrganisationContext): OrganisationResponse {
    return this.organisations.toResponse(ctx.organisation);
  }

  @Patch('organisations/:organisationSlug')
  @RequireOrgRole('ADMIN')
  @ApiParam(SLUG_PARAM)
  @ApiDoc({
    summary: "Change an organisation's details (ADMIN); renaming keeps the slug",
    description:
      'Changes the details of the organisation; only the given fields change, and a new name keeps the slug and so every URL. ' +
      'A vatNumber must be a valid VAT number (400). `organisationType` sets the cluster quota, so only a platform ' +
      'administrator changes it (here as a member, or with PATCH /admin/v1/orgs/{organisationIdentity}). Audited.',
    errors: `${NOT_MEMBER_REFUSED} 403 when a caller who is not a platform administrator changes organisationType.`,
  })
  @ApiOkResponse({ type: OrganisationResponse })
  @ApiStandardErrors()
  async update(
    @OrgContext() ctx: OrganisationContext,
    @CurrentPrincipal() p: Principal,
    @Body() body: UpdateOrganisationRequest,
  ): Promise<OrganisationResponse> {
    return this.organisations.toResponse(await this.organisations.update(ctx.organisation.id, body, p.user));
  }

  @Delete('organisations/:organisationIdentity')
  @HttpCode(204)
  @RequireOrgRole('OWNER', { identityParam: 'organisationIdentity', platformAdmin: true })
  @ApiParam({ name: 'organisationIdentity', format: 'uuid', description: 'Identity of the organisation' })
  @ApiDoc({
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
  @ApiDoc({
    summary: "The organisation's quotas (VIEWER)",
    description: "The organisation's quotas: clustersPerCustomer, the most clusters the organisation may have (creating one more is 409).",
    errors: NOT_MEMBER_REFUSED,
  })
  @ApiOkResponse({ type: QuotaResponse })
  @ApiStandardErrors({ badRequest: false })
  quotas(@OrgContext() ctx: OrganisationContext): QuotaResponse {
    return this.organisations.quota(ctx.organisation);
  }

  @Get('compute-information/organisation/:organisationSlug')
  @RequireOrgRole('VIEWER')
  @ApiParam(SLUG_PARAM)
  @ApiDoc({
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
