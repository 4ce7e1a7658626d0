import { Controller, Get, Query } from '@nestjs/common';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
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
  @ApiDoc({
    summary: 'Activity feed of the organisation (VIEWER); newest first by default; sortable by createdAt, type',
    description:
      'The human-readable activity feed of the organisation: one line per notable change (clusters created, upgraded, ' +
      'deleted, members added and the like), with who did it.',
  })
  @ApiPageResponse(ActivityEventResponse, { form: 'A', sortable: ['createdAt', 'type'], defaultOrder: 'createdAt descending (newest first)' }, 'OK')
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext, @Query() query: PageQueryDto) {
    return this.feed.page(ctx.organisation.id, query);
  }
}
