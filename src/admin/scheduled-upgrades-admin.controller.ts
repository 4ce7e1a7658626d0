import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, PlatformAdminOnly, Principal } from '../auth/principal';
import { ApiStandardErrors } from '../common/api-docs';
import { ValidationFailedException } from '../common/errors';
import { ApiPageResponse } from '../common/paging';
import {
  AdminPutScheduledClusterUpgradeRequest,
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
  @ApiOperation({ summary: 'List scheduled cluster upgrades of every organisation (platform administrators; page form A)' })
  @ApiPageResponse(ScheduledClusterUpgradeResponse, 'A')
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

  @Get(':identity')
  @ApiOperation({ summary: 'One scheduled cluster upgrade of any organisation (platform administrators)' })
  @ApiParam({ name: 'identity', format: 'uuid' })
  @ApiOkResponse({ type: ScheduledClusterUpgradeResponse })
  @ApiStandardErrors()
  get(@Param('identity', upgradeIdentity) identity: string): Promise<ScheduledClusterUpgradeResponse> {
    return this.upgrades.get(null, identity);
  }

  @Delete(':identity')
  @ApiOperation({ summary: 'Cancel an upgrade that has not started (answers the upgrade, as the organisation DELETE does)' })
  @ApiParam({ name: 'identity', format: 'uuid' })
  @ApiOkResponse({ type: ScheduledClusterUpgradeResponse })
  @ApiStandardErrors({ conflict: 'The upgrade has started or ended' })
  cancel(@CurrentPrincipal() p: Principal, @Param('identity', upgradeIdentity) identity: string): Promise<ScheduledClusterUpgradeResponse> {
    return this.upgrades.cancel(null, identity, p.user);
  }

  @Put(':identity')
  @ApiOperation({
    summary: "Set an upgrade's status or reason, as older versions of the original admin client do (only CANCELLED may be set by hand)",
  })
  @ApiParam({ name: 'identity', format: 'uuid' })
  @ApiOkResponse({ type: ScheduledClusterUpgradeResponse })
  @ApiStandardErrors({ conflict: 'Cancelling an upgrade that started or ended' })
  put(
    @CurrentPrincipal() p: Principal,
    @Param('identity', upgradeIdentity) identity: string,
    @Body() body: AdminPutScheduledClusterUpgradeRequest,
  ): Promise<ScheduledClusterUpgradeResponse> {
    return this.upgrades.adminUpdate(identity, body, p.user);
  }

  @Patch(':identity')
  @ApiParam({ name: 'identity', format: 'uuid' })
  @ApiOperation({
    summary: 'Move the window, change the target, the reason or cancel an upgrade (platform administrators; the original admin client)',
  })
  @ApiOkResponse({ type: ScheduledClusterUpgradeResponse })
  @ApiStandardErrors({ conflict: 'The upgrade has started or ended' })
  update(
    @CurrentPrincipal() p: Principal,
    @Param('identity', upgradeIdentity) identity: string,
    @Body() body: UpdateScheduledClusterUpgradeRequest,
  ): Promise<ScheduledClusterUpgradeResponse> {
    return this.upgrades.adminUpdate(identity, body, p.user);
  }
}
