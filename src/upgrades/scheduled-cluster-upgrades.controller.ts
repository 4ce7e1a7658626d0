import { Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Query } from '@nestjs/common';
import { ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrganisationContext, OrgContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { CurrentPrincipal, Principal } from '../identity/principal';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ValidationFailedException } from '../common/errors';
import { ApiPageResponse } from '../common/paging';
import { ScheduledClusterUpgradeQuery, ScheduledClusterUpgradeResponse } from './dto/scheduled-cluster-upgrade.dto';
import { UPGRADE_SORTABLE, UpgradesService } from './upgrades.service';

const upgradeIdentity = new ParseUUIDPipe({
  exceptionFactory: () =>
    ValidationFailedException.forField('scheduledClusterUpgradeIdentity', 'scheduledClusterUpgradeIdentity must be a UUID'),
});

@ApiTags('Scheduled cluster upgrades')
@ApiParam({ name: 'organisationSlug', example: 'acme' })
@Controller('api/v1/orgs/:organisationSlug/scheduled-cluster-upgrades')
export class ScheduledClusterUpgradesController {
  constructor(private readonly upgrades: UpgradesService) {}

  @Get()
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: "List the organisation's scheduled cluster upgrades, optionally by cluster and status",
    description: '`clusterIdentities` and `statuses` (each repeatable) narrow the list to those clusters and states.',
  })
  @ApiPageResponse(ScheduledClusterUpgradeResponse, { form: 'B', sortable: UPGRADE_SORTABLE })
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext, @Query() query: ScheduledClusterUpgradeQuery) {
    return this.upgrades.list(ctx.organisation, query);
  }

  @Get(':scheduledClusterUpgradeIdentity')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'Get a scheduled cluster upgrade',
    description: 'One scheduled upgrade of a cluster of the organisation: from and to version, window, status and reason.',
    errors: '404 when it is not an upgrade of this organisation.',
  })
  @ApiOkResponse({ type: ScheduledClusterUpgradeResponse })
  @ApiStandardErrors()
  get(
    @OrgContext() ctx: OrganisationContext,
    @Param('scheduledClusterUpgradeIdentity', upgradeIdentity) identity: string,
  ): Promise<ScheduledClusterUpgradeResponse> {
    return this.upgrades.get(ctx.organisation, identity);
  }

  @Delete(':scheduledClusterUpgradeIdentity')
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiDoc({
    summary: 'Cancel a scheduled cluster upgrade (only while SCHEDULED or SCHEDULED_NOTIFIED)',
    description:
      'Cancels the upgrade (status CANCELLED, audited) and answers it. Only an upgrade that is SCHEDULED or ' +
      'SCHEDULED_NOTIFIED can be cancelled; one that has started or ended is 409.',
    errors: '404 when it is not an upgrade of this organisation.',
  })
  @ApiOkResponse({ type: ScheduledClusterUpgradeResponse, description: 'The cancelled upgrade' })
  @ApiStandardErrors({ conflict: 'The upgrade has started or ended and can no longer be cancelled' })
  cancel(
    @OrgContext() ctx: OrganisationContext,
    @CurrentPrincipal() p: Principal,
    @Param('scheduledClusterUpgradeIdentity', upgradeIdentity) identity: string,
  ): Promise<ScheduledClusterUpgradeResponse> {
    return this.upgrades.cancel(ctx.organisation, identity, p.user);
  }
}
