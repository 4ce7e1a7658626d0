import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext, RequireOrgRole } from '../auth/organisation-access';
import { ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { AuditEventsService } from './audit-events.service';
import { AuditEventResponse, ClusterAuditEventResponse, ClusterAuditPathParams } from './dto/audit-event.dto';

@ApiTags('Audit events')
@Controller('api/v1/orgs/:organisationSlug/audit-events')
export class AuditEventsController {
  constructor(private readonly events: AuditEventsService) {}

  @Get()
  @RequireOrgRole('VIEWER')
  @ApiParam({ name: 'organisationSlug', example: 'acme' })
  @ApiOperation({
    summary: 'Audit events of the organisation (VIEWER); oldest first (createdAt ascending) by default; sortable by createdAt, type',
  })
  @ApiPageResponse(AuditEventResponse, 'B')
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext, @Query() query: PageQueryDto) {
    return this.events.forOrganisation(ctx.organisation.id, query);
  }

  @Get(':environmentSlug/:cluster')
  @RequireOrgRole('VIEWER')
  @ApiOperation({
    summary: 'Audit events of one cluster (VIEWER), including those of a deleted cluster with that slug; oldest first (createdAt ascending) by default',
  })
  @ApiPageResponse(ClusterAuditEventResponse, 'B')
  @ApiStandardErrors({ notFound: false })
  forCluster(@OrgContext() ctx: OrganisationContext, @Param() params: ClusterAuditPathParams, @Query() query: PageQueryDto) {
    return this.events.forCluster(ctx.organisation.id, params.environmentSlug, params.cluster, query);
  }
}
