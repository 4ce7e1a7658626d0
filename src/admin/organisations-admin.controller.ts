import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { PlatformAdminOnly } from '../auth/principal';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { AdminOrganisationResponse, OrganisationResponse } from '../organisations/dto/organisation.dto';
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
}
