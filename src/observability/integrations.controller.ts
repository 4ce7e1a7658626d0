import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Patch, Post, Query } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrganisationContext, OrgContext, RequireOrgRole } from '../auth/organisation-access';
import { ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { DashboardIntegrationsService } from './dashboard-integrations.service';
import { CreateDashboardIntegrationRequest, DashboardIntegrationResponse } from './dto/dashboard.dto';
import { OrganisationIntegrationResponse, UpdateOrganisationIntegrationRequest } from './dto/organisation-integration.dto';
import { OrganisationIntegrationsService } from './organisation-integrations.service';

@ApiTags('Integrations')
@ApiStandardErrors()
@ApiParam({ name: 'organisationSlug', description: 'Slug of the organisation (also written organizationSlug in the interface)' })
@Controller('api/v1/orgs/:organisationSlug/integrations')
export class IntegrationsController {
  constructor(
    private readonly dashboards: DashboardIntegrationsService,
    private readonly integrations: OrganisationIntegrationsService,
  ) {}

  @Get()
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: "List the organisation's integrations (a plain array; one of type alerting, created disabled)" })
  @ApiOkResponse({ type: [OrganisationIntegrationResponse] })
  list(@OrgContext() ctx: OrganisationContext) {
    return this.integrations.list(ctx.organisation);
  }

  @Get('dashboard')
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: 'List the dashboard integrations (the API token is never returned)' })
  @ApiPageResponse(DashboardIntegrationResponse, 'B')
  listDashboards(@OrgContext() ctx: OrganisationContext, @Query() query: PageQueryDto) {
    return this.dashboards.list(ctx.organisation, query);
  }

  @Post('dashboard')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiStandardErrors({ conflict: 'A dashboard integration with this slug already exists in the organisation' })
  @ApiOperation({
    summary: 'Create a dashboard integration',
    description:
      'status starts PENDING; a background check calls `{url}/api/health` with the token and sets CONNECTED or ERROR. ' +
      'The URL must pass the outbound policy (http/https, no credentials, public addresses only), else 400 naming url.',
  })
  @ApiOkResponse({ type: DashboardIntegrationResponse })
  createDashboard(@OrgContext() ctx: OrganisationContext, @Body() body: CreateDashboardIntegrationRequest) {
    return this.dashboards.create(ctx.organisation, body);
  }

  @Delete('dashboard/:integrationSlug')
  @HttpCode(204)
  @RequireOrgRole('ADMIN')
  @ApiOperation({ summary: 'Delete a dashboard integration' })
  @ApiNoContentResponse({ description: 'Deleted' })
  async deleteDashboard(@OrgContext() ctx: OrganisationContext, @Param('integrationSlug') integrationSlug: string): Promise<void> {
    await this.dashboards.delete(ctx.organisation, integrationSlug);
  }

  @Patch(':organisationIntegrationIdentity')
  @RequireOrgRole('ADMIN')
  @ApiParam({
    name: 'organisationSlug',
    description: 'The organisation slug (the interface also spells this parameter organizationSlug; it is the same path)',
  })
  @ApiOperation({ summary: "Update the organisation's integration (displayName, enabled, config)" })
  @ApiOkResponse({ type: OrganisationIntegrationResponse })
  update(
    @OrgContext() ctx: OrganisationContext,
    @Param('organisationIntegrationIdentity', new ParseUUIDPipe()) identity: string,
    @Body() body: UpdateOrganisationIntegrationRequest,
  ) {
    return this.integrations.update(ctx.organisation, identity, body);
  }
}
