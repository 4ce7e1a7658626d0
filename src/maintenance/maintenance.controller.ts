import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Patch, Post } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrganisationContext, OrgContext, RequireOrgRole } from '../auth/organisation-access';
import { ApiStandardErrors } from '../common/api-docs';
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
  @ApiOperation({ summary: "List the organisation's maintenance schedules" })
  @ApiOkResponse({ type: [MaintenanceScheduleResponse] })
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext): Promise<MaintenanceScheduleResponse[]> {
    return this.schedules.list(ctx.organisation);
  }

  @Post()
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiOperation({ summary: 'Create a maintenance schedule (weekly UTC windows that must not overlap)' })
  @ApiOkResponse({ type: MaintenanceScheduleResponse })
  @ApiStandardErrors({ notFound: false })
  create(@OrgContext() ctx: OrganisationContext, @Body() body: CreateMaintenanceScheduleRequest): Promise<MaintenanceScheduleResponse> {
    return this.schedules.create(ctx.organisation, body);
  }

  @Get(':maintenanceScheduleIdentity')
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: 'Get a maintenance schedule' })
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
  @ApiOperation({ summary: 'Change the name, windows, time zone or exclusions of a maintenance schedule (each given list replaces the old one)' })
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
  @ApiOperation({ summary: 'Delete a maintenance schedule (refused while clusters use it)' })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiStandardErrors({ conflict: 'Clusters still use the schedule' })
  async delete(
    @OrgContext() ctx: OrganisationContext,
    @Param('maintenanceScheduleIdentity', scheduleIdentity) identity: string,
  ): Promise<void> {
    await this.schedules.delete(ctx.organisation, identity);
  }
}
