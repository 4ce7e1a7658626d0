import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext, RequireOrgRole } from '../auth/organisation-access';
import { ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { ActivityFeedQuery } from './activity-feed.query';
import { ActivityEventResponse } from './dto/activity-event.dto';

@ApiTags('Activity')
@Controller('api/v1/organisations/:organisationSlug/activity')
export class ActivityController {
  constructor(private readonly feed: ActivityFeedQuery) {}

  @Get()
  @RequireOrgRole('VIEWER')
  @ApiParam({ name: 'organisationSlug', example: 'acme' })
  @ApiOperation({ summary: 'Activity feed of the organisation (VIEWER); newest first by default; sortable by createdAt, type' })
  @ApiPageResponse(ActivityEventResponse, 'A', 'OK')
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext, @Query() query: PageQueryDto) {
    return this.feed.page(ctx.organisation.id, query);
  }
}
