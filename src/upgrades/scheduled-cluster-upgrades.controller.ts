import { Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrganisationContext, OrgContext, RequireOrgRole } from '../auth/organisation-access';
import { CurrentPrincipal, Principal } from '../auth/principal';
import { ApiStandardErrors } from '../common/api-docs';
import { ValidationFailedException } from '../common/errors';
import { ApiPageResponse } from '../common/paging';
import { ScheduledClusterUpgradeQuery, ScheduledClusterUpgradeResponse } from './dto/scheduled-cluster-upgrade.dto';
import { UpgradesService } from './upgrades.service';

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
  @ApiOperation({ summary: "List the organisation's scheduled cluster upgrades, optionally by cluster and status" })
  @ApiPageResponse(ScheduledClusterUpgradeResponse, 'B')
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext, @Query() query: ScheduledClusterUpgradeQuery) {
    return this.upgrades.list(ctx.organisation, query);
  }

  @Get(':scheduledClusterUpgradeIdentity')
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: 'Get a scheduled cluster upgrade' })
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
  @ApiOperation({ summary: 'Cancel a scheduled cluster upgrade (only while SCHEDULED or SCHEDULED_NOTIFIED)' })
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
