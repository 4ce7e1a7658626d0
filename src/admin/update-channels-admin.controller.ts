import { Body, Controller, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { PlatformAdminOnly } from '../common/route-access';
import { CatalogAdminService } from '../catalog/catalog-admin.service';
import { UpdateChannelResponse } from '../catalog/dto/catalog.dto';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, Page, PageQueryDto } from '../common/paging';
import { CreateUpdateChannelRequest, UpdateUpdateChannelRequest } from '../catalog/dto/catalog-admin.dto';

/** Update channels, for platform administrators (everyone else 403). The list is a page (form A) by name. */
@ApiTags('Platform administration')
@PlatformAdminOnly()
@Controller('admin/v1/update-channels')
export class UpdateChannelsAdminController {
  constructor(private readonly admin: CatalogAdminService) {}

  @Get()
  @ApiDoc({
    summary: 'Every update channel (page form A, by name)',
    description: 'Every update channel with the version it points to.',
  })
  @ApiPageResponse(UpdateChannelResponse, { form: 'A', sortable: ['name', 'available'], defaultOrder: 'name' })
  @ApiStandardErrors({ notFound: false })
  list(@Query() query: PageQueryDto): Promise<Page<UpdateChannelResponse>> {
    return this.admin.listChannels(query);
  }

  @Post()
  @HttpCode(200)
  @ApiDoc({
    summary: 'Add an update channel pointing to an available version (audited UPDATE_CHANNEL_CREATED)',
    description:
      'Adds an update channel pointing to `kubernetesClusterVersion`, which must be a known and available version (400 ' +
      'otherwise); available defaults to true. Audited.',
    errors: '409 when a channel of that name exists (PATCH it instead).',
  })
  @ApiOkResponse({ type: UpdateChannelResponse })
  @ApiStandardErrors({ notFound: false, conflict: 'The channel already exists' })
  create(@Body() body: CreateUpdateChannelRequest): Promise<UpdateChannelResponse> {
    return this.admin.createChannel(body);
  }

  @Patch(':name')
  @ApiDoc({
    summary: "Move a channel to another available version, or set its availability (audited UPDATE_CHANNEL_UPDATED)",
    description:
      'Points the channel to another version, which must be known and available (400 otherwise), or sets its availability; ' +
      'only the given fields change. Audited.',
    errors: '404 when the channel does not exist.',
  })
  @ApiParam({ name: 'name', example: 'stable' })
  @ApiOkResponse({ type: UpdateChannelResponse })
  @ApiStandardErrors()
  update(@Param('name') name: string, @Body() body: UpdateUpdateChannelRequest): Promise<UpdateChannelResponse> {
    return this.admin.updateChannel(name, body);
  }
}
