import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, PageQueryDto, PagingDoc } from '../common/paging';
import { AuditEventsService } from './audit-events.service';
import { AuditEventResponse, ClusterAuditEventResponse, ClusterAuditPathParams } from './dto/audit-event.dto';

/** Both audit lists: oldest first unless `sort` says otherwise. */
const AUDIT_PAGING: PagingDoc = { form: 'B', sortable: ['createdAt', 'type'], defaultOrder: 'createdAt ascending (oldest first)' };

@ApiTags('Audit events')
@Controller('api/v1/orgs/:organisationSlug/audit-events')
export class AuditEventsController {
  constructor(private readonly events: AuditEventsService) {}

  @Get()
  @RequireOrgRole('VIEWER')
  @ApiParam({ name: 'organisationSlug', example: 'acme' })
  @ApiDoc({
    summary: 'Audit events of the organisation (VIEWER); oldest first (createdAt ascending) by default; sortable by createdAt, type',
    description:
      'The full audit trail of the organisation: who did what to which resource, with the old and new value of each changed ' +
      'field (secrets redacted).',
  })
  @ApiPageResponse(AuditEventResponse, AUDIT_PAGING)
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext, @Query() query: PageQueryDto) {
    return this.events.forOrganisation(ctx.organisation.id, query);
  }

  @Get(':environmentSlug/:cluster')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'Audit events of one cluster (VIEWER), including those of a deleted cluster with that slug; oldest first (createdAt ascending) by default',
    description:
      'The audit events of one cluster, found by environment and cluster slug; this includes the events of an earlier, ' +
      'deleted cluster that had the same slug.',
    errors: '404 when no cluster, current or deleted, had this slug in the environment.',
  })
  @ApiPageResponse(ClusterAuditEventResponse, AUDIT_PAGING)
  @ApiStandardErrors({ notFound: false })
  forCluster(@OrgContext() ctx: OrganisationContext, @Param() params: ClusterAuditPathParams, @Query() query: PageQueryDto) {
    return this.events.forCluster(ctx.organisation.id, params.environmentSlug, params.cluster, query);
  }
}
