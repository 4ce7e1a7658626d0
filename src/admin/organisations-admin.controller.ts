import { Body, Controller, Get, Param, Patch, Query } from '@nestjs/common';
import { ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { PlatformAdminOnly } from '../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { AdminOrganisationResponse, AdminUpdateOrganisationRequest, OrganisationResponse } from '../organisations/dto/organisation.dto';
import { OrganisationsService } from '../organisations/organisations.service';

@ApiTags('Platform administration')
@Controller('admin/v1')
@PlatformAdminOnly()
export class OrganisationsAdminController {
  constructor(private readonly organisations: OrganisationsService) {}

  @Get('organisations')
  @ApiDoc({
    summary: 'Every organisation (platform administrators; page form A); sortable by name, slug, type, createdAt',
    description: 'Every organisation of the platform, with its identity, slug, type, VAT code and contact and billing emails.',
  })
  @ApiPageResponse(OrganisationResponse, { form: 'A', sortable: ['name', 'slug', 'type', 'createdAt'], defaultOrder: 'name' })
  @ApiStandardErrors({ notFound: false })
  list(@Query() query: PageQueryDto) {
    return this.organisations.listAll(query);
  }

  @Get('orgs/:organisationIdentity')
  @ApiDoc({
    summary: 'One organisation by identity, in the original admin client shape (slug and emails as strings)',
    description: 'Beyond the interface: the original admin client reads `/admin/v1/orgs/{identity}`.',
  })
  @ApiParam({ name: 'organisationIdentity', format: 'uuid' })
  @ApiOkResponse({ type: AdminOrganisationResponse })
  @ApiStandardErrors({ badRequest: false })
  async get(@Param('organisationIdentity') identity: string): Promise<AdminOrganisationResponse> {
    return this.organisations.adminView(identity);
  }

  @Patch('orgs/:organisationIdentity')
  @ApiDoc({
    summary: "Set an organisation's type (platform administrators), which sets its cluster quota",
    description:
      "The type sets the cluster quota (clustersPerCustomer follows it while it holds the old type's default), so only a platform " +
      'administrator changes it, member or not. Answers the organisation in the admin client shape. Audited as ORGANISATION_UPDATED.',
    errors: '404 when no organisation has this identity.',
  })
  @ApiParam({ name: 'organisationIdentity', format: 'uuid' })
  @ApiOkResponse({ type: AdminOrganisationResponse })
  @ApiStandardErrors()
  setType(@Param('organisationIdentity') identity: string, @Body() body: AdminUpdateOrganisationRequest): Promise<AdminOrganisationResponse> {
    return this.organisations.adminSetType(identity, body);
  }
}
