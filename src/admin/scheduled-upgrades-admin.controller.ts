import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Principal } from '../identity/principal';
import { PlatformAdminOnly } from '../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ValidationFailedException } from '../common/errors';
import { ApiPageResponse } from '../common/paging';
import {
  AdminPutScheduledClusterUpgradeRequest,
  CreateScheduledClusterUpgradeRequest,
  ScheduledClusterUpgradeQuery,
  ScheduledClusterUpgradeResponse,
  UpdateScheduledClusterUpgradeRequest,
} from '../upgrades/dto/scheduled-cluster-upgrade.dto';
import { UPGRADE_SORTABLE } from '../upgrades/upgrades.service';
import { UpgradesService } from '../upgrades/upgrades.service';

const upgradeIdentity = new ParseUUIDPipe({
  exceptionFactory: () => ValidationFailedException.forField('identity', 'identity must be a UUID'),
});

/** Platform administrators schedule and move upgrades of any organisation's clusters. */
@ApiTags('Platform administration')
@PlatformAdminOnly()
@Controller('admin/v1/scheduled-cluster-upgrades')
export class ScheduledUpgradesAdminController {
  constructor(private readonly upgrades: UpgradesService) {}

  @Get()
  @ApiDoc({
    summary: 'List scheduled cluster upgrades of every organisation (platform administrators; page form A)',
    description: 'Scheduled upgrades of every organisation. `clusterIdentities` and `statuses` (each repeatable) narrow the list.',
  })
  @ApiPageResponse(ScheduledClusterUpgradeResponse, { form: 'A', sortable: UPGRADE_SORTABLE })
  @ApiStandardErrors({ notFound: false })
  list(@Query() query: ScheduledClusterUpgradeQuery) {
    return this.upgrades.list(null, query);
  }

  @Post()
  @HttpCode(200)
  @ApiDoc({
    summary: 'Schedule an upgrade of a cluster in a given window (platform administrators)',
    description:
      'Schedules an upgrade of a cluster (by identity) to `toClusterVersion`, a known version newer than the one it runs ' +
      '(else 400). windowEnd must be after windowStart and in the future (400). Unless `ignoreMaintenanceSchedule` is true, ' +
      "the window moves into the cluster's first maintenance window starting at or after windowStart. With " +
      '`fromClusterVersion`, the cluster must run exactly that version (409 otherwise). The reason defaults to the ' +
      'administrator who scheduled it; audited.',
    errors: '404 when the cluster does not exist; 409 when the cluster already has an open upgrade.',
  })
  @ApiOkResponse({ type: ScheduledClusterUpgradeResponse })
  @ApiStandardErrors({ conflict: 'The cluster already has an open upgrade' })
  create(@CurrentPrincipal() p: Principal, @Body() body: CreateScheduledClusterUpgradeRequest): Promise<ScheduledClusterUpgradeResponse> {
    return this.upgrades.adminCreate(p.user, body);
  }

  @Get(':identity')
  @ApiDoc({
    summary: 'One scheduled cluster upgrade of any organisation (platform administrators)',
    description: 'One scheduled upgrade of any organisation by identity.',
    errors: '400 when the identity is not a UUID; 404 when it does not exist.',
  })
  @ApiParam({ name: 'identity', format: 'uuid' })
  @ApiOkResponse({ type: ScheduledClusterUpgradeResponse })
  @ApiStandardErrors()
  get(@Param('identity', upgradeIdentity) identity: string): Promise<ScheduledClusterUpgradeResponse> {
    return this.upgrades.get(null, identity);
  }

  @Delete(':identity')
  @ApiDoc({
    summary: 'Cancel an upgrade that has not started (answers the upgrade, as the organisation DELETE does)',
    description:
      'Cancels an upgrade that is SCHEDULED or SCHEDULED_NOTIFIED (status CANCELLED, audited) and answers it, like the ' +
      'organisation DELETE.',
    errors: '404 when it does not exist; 409 when it has started or ended.',
  })
  @ApiParam({ name: 'identity', format: 'uuid' })
  @ApiOkResponse({ type: ScheduledClusterUpgradeResponse })
  @ApiStandardErrors({ conflict: 'The upgrade has started or ended' })
  cancel(@CurrentPrincipal() p: Principal, @Param('identity', upgradeIdentity) identity: string): Promise<ScheduledClusterUpgradeResponse> {
    return this.upgrades.cancel(null, identity, p.user);
  }

  @Put(':identity')
  @ApiDoc({
    summary: "Set an upgrade's status or reason, as older versions of the original admin client do (only CANCELLED may be set by hand)",
    description:
      "The original admin client's older update, `{identity, status, reason}`, handled as the PATCH: the reason may always change; the only " +
      'status a person may set is CANCELLED, from SCHEDULED or SCHEDULED_NOTIFIED (the scheduler sets the others: 400), with the reason as ' +
      'the reason of the cancellation. An `identity` in the body must equal the one in the path (400). Audited.',
    errors: '404 when it does not exist; 409 for cancelling an upgrade that started or ended.',
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
  @ApiDoc({
    summary: 'Move the window, change the target, the reason or cancel an upgrade (platform administrators; the original admin client)',
    description:
      'Every field takes effect or is refused, none is ignored. `windowStart`/`windowEnd` (windowEnd after windowStart and in the future) and ' +
      "`toClusterVersion` (or the original admin client's `version`; known and newer than the running version) re-plan an upgrade that has " +
      'not started (409 otherwise); a notified upgrade whose plan changes goes back to SCHEDULED, so the new plan is announced again. ' +
      '`reason` replaces the reason. `status` CANCELLED cancels as DELETE does, with `reason` as the reason of the cancellation, and cannot ' +
      'be combined with a new window or target (400); the current status changes nothing and any other status is 400 (the scheduler sets ' +
      'them). An `identity` in the body must equal the one in the path (400). One audit entry names every change.',
    errors: '404 when it does not exist; 409 when it has started or ended.',
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
