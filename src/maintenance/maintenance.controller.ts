import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Patch, Post } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrganisationContext, OrgContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ValidationFailedException } from '../common/errors';
import {
  CreateMaintenanceScheduleRequest,
  MaintenanceScheduleResponse,
  UpdateMaintenanceScheduleRequest,
} from './dto/maintenance-schedule.dto';
import { MaintenanceService } from './maintenance.service';

const scheduleIdentity = new ParseUUIDPipe({
  exceptionFactory: () =>
    ValidationFailedException.forField('maintenanceScheduleIdentity', 'maintenanceScheduleIdentity must be a UUID'),
});

@ApiTags('Maintenance schedules')
@ApiParam({ name: 'organisationSlug', example: 'acme' })
@Controller('api/v1/organisations/:organisationSlug/maintenance-schedule')
export class MaintenanceController {
  constructor(private readonly schedules: MaintenanceService) {}

  @Get()
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: "List the organisation's maintenance schedules",
    description: 'Every maintenance schedule of the organisation with its weekly windows, time zone and exclusions, as a plain array.',
  })
  @ApiOkResponse({ type: [MaintenanceScheduleResponse] })
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext): Promise<MaintenanceScheduleResponse[]> {
    return this.schedules.list(ctx.organisation);
  }

  @Post()
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiDoc({
    summary: 'Create a maintenance schedule (weekly UTC windows that must not overlap)',
    description:
      'Creates a maintenance schedule: one or more weekly windows (day, start time HH:mm and duration in minutes), which must ' +
      'not overlap each other (400 naming the pair), an IANA time zone (default UTC), and optional exclusions (periods ' +
      'without maintenance). Clusters refer to it by identity; upgrades scheduled for them are placed into its windows.',
  })
  @ApiOkResponse({ type: MaintenanceScheduleResponse })
  @ApiStandardErrors({ notFound: false })
  create(@OrgContext() ctx: OrganisationContext, @Body() body: CreateMaintenanceScheduleRequest): Promise<MaintenanceScheduleResponse> {
    return this.schedules.create(ctx.organisation, body);
  }

  @Get(':maintenanceScheduleIdentity')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'Get a maintenance schedule',
    description: 'One maintenance schedule by identity.',
    errors: '404 when the schedule is not in the organisation.',
  })
  @ApiOkResponse({ type: MaintenanceScheduleResponse })
  @ApiStandardErrors()
  get(
    @OrgContext() ctx: OrganisationContext,
    @Param('maintenanceScheduleIdentity', scheduleIdentity) identity: string,
  ): Promise<MaintenanceScheduleResponse> {
    return this.schedules.get(ctx.organisation, identity);
  }

  @Patch(':maintenanceScheduleIdentity')
  @RequireOrgRole('MEMBER')
  @ApiDoc({
    summary: 'Change the name, windows, time zone or exclusions of a maintenance schedule (each given list replaces the old one)',
    description:
      'Changes the name, windows, time zone or exclusions; each list that is given replaces the old list whole, fields left ' +
      'out stay. The windows must still not overlap (400).',
    errors: '404 when the schedule is not in the organisation.',
  })
  @ApiOkResponse({ type: MaintenanceScheduleResponse })
  @ApiStandardErrors()
  update(
    @OrgContext() ctx: OrganisationContext,
    @Param('maintenanceScheduleIdentity', scheduleIdentity) identity: string,
    @Body() body: UpdateMaintenanceScheduleRequest,
  ): Promise<MaintenanceScheduleResponse> {
    return this.schedules.update(ctx.organisation, identity, body);
  }

  @Delete(':maintenanceScheduleIdentity')
  @HttpCode(204)
  @RequireOrgRole('MEMBER')
  @ApiDoc({
    summary: 'Delete a maintenance schedule (refused while clusters use it)',
    description: 'Deletes the maintenance schedule. Refused with 409 while clusters use it: move them to another schedule (or none) first.',
    errors: '404 when the schedule is not in the organisation.',
  })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiStandardErrors({ conflict: 'Clusters still use the schedule' })
  async delete(
    @OrgContext() ctx: OrganisationContext,
    @Param('maintenanceScheduleIdentity', scheduleIdentity) identity: string,
  ): Promise<void> {
    await this.schedules.delete(ctx.organisation, identity);
  }
}
