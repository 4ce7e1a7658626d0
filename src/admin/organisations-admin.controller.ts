import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { PlatformAdminOnly } from '../auth/principal';
import { ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { OrganisationResponse } from '../organisations/dto/organisation.dto';
import { OrganisationsService } from '../organisations/organisations.service';

@ApiTags('Platform administration')
@Controller('admin/v1')
@PlatformAdminOnly()
export class OrganisationsAdminController {
  constructor(private readonly organisations: OrganisationsService) {}

  @Get('organisations')
  @ApiOperation({ summary: 'Every organisation (platform administrators); sortable by name, slug, type, createdAt' })
  @ApiPageResponse(OrganisationResponse, 'B')
  @ApiStandardErrors({ notFound: false })
  list(@Query() query: PageQueryDto) {
    return this.organisations.listAll(query);
  }
}
