import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Patch, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, PlatformAdminOnly, Principal } from '../auth/principal';
import { ApiStandardErrors } from '../common/api-docs';
import { ValidationFailedException } from '../common/errors';
import { ApiPageResponse } from '../common/paging';
import {
  CreateScheduledClusterUpgradeRequest,
  ScheduledClusterUpgradeQuery,
  ScheduledClusterUpgradeResponse,
  UpdateScheduledClusterUpgradeRequest,
} from '../upgrades/dto/scheduled-cluster-upgrade.dto';
import { UpgradesService } from '../upgrades/upgrades.service';

const upgradeIdentity = new ParseUUIDPipe({
  exceptionFactory: () => ValidationFailedException.forField('identity', 'identity must be a UUID'),
});

/** Platform administrators schedule and move upgrades of any organisation's clusters. */
@ApiTags('Admin: scheduled cluster upgrades')
@PlatformAdminOnly()
@Controller('admin/v1/scheduled-cluster-upgrades')
export class ScheduledUpgradesAdminController {
  constructor(private readonly upgrades: UpgradesService) {}

  @Get()
  @ApiOperation({ summary: 'List scheduled cluster upgrades of every organisation (platform administrators)' })
  @ApiPageResponse(ScheduledClusterUpgradeResponse, 'B')
  @ApiStandardErrors({ notFound: false })
  list(@Query() query: ScheduledClusterUpgradeQuery) {
    return this.upgrades.list(null, query);
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({ summary: 'Schedule an upgrade of a cluster in a given window (platform administrators)' })
  @ApiOkResponse({ type: ScheduledClusterUpgradeResponse })
  @ApiStandardErrors({ conflict: 'The cluster already has an open upgrade' })
  create(@CurrentPrincipal() p: Principal, @Body() body: CreateScheduledClusterUpgradeRequest): Promise<ScheduledClusterUpgradeResponse> {
    return this.upgrades.adminCreate(p.user, body);
  }

  @Patch(':identity')
  @ApiOperation({ summary: 'Move the window or change the target of an upgrade that has not started (platform administrators)' })
  @ApiOkResponse({ type: ScheduledClusterUpgradeResponse })
  @ApiStandardErrors({ conflict: 'The upgrade has started or ended' })
  update(
    @Param('identity', upgradeIdentity) identity: string,
    @Body() body: UpdateScheduledClusterUpgradeRequest,
  ): Promise<ScheduledClusterUpgradeResponse> {
    return this.upgrades.adminUpdate(identity, body);
  }
}
