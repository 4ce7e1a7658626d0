import { Body, Controller, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { PlatformAdminOnly } from '../auth/principal';
import { CatalogAdminService } from '../catalog/catalog-admin.service';
import { UpdateChannelResponse } from '../catalog/dto/catalog.dto';
import { ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, Page, PageQueryDto } from '../common/paging';
import { CreateUpdateChannelRequest, UpdateUpdateChannelRequest } from './dto/catalog-admin.dto';

/** Update channels, for platform administrators (everyone else 403). The list is a page (form A) by name. */
@ApiTags('Admin: update channels')
@PlatformAdminOnly()
@Controller('admin/v1/update-channels')
export class UpdateChannelsAdminController {
  constructor(private readonly admin: CatalogAdminService) {}

  @Get()
  @ApiOperation({ summary: 'Every update channel (page form A, by name)' })
  @ApiPageResponse(UpdateChannelResponse, 'A')
  @ApiStandardErrors({ notFound: false })
  list(@Query() query: PageQueryDto): Promise<Page<UpdateChannelResponse>> {
    return this.admin.listChannels(query);
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({ summary: 'Add an update channel pointing to an available version (audited UPDATE_CHANNEL_CREATED)' })
  @ApiOkResponse({ type: UpdateChannelResponse })
  @ApiStandardErrors({ notFound: false, conflict: 'The channel already exists' })
  create(@Body() body: CreateUpdateChannelRequest): Promise<UpdateChannelResponse> {
    return this.admin.createChannel(body);
  }

  @Patch(':name')
  @ApiOperation({ summary: "Move a channel to another available version, or set its availability (audited UPDATE_CHANNEL_UPDATED)" })
  @ApiParam({ name: 'name', example: 'stable' })
  @ApiOkResponse({ type: UpdateChannelResponse })
  @ApiStandardErrors()
  update(@Param('name') name: string, @Body() body: UpdateUpdateChannelRequest): Promise<UpdateChannelResponse> {
    return this.admin.updateChannel(name, body);
  }
}
