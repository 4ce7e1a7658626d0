import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Patch, Post, Query } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrganisationContext, OrgContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
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
  @ApiDoc({
    summary: "List the organisation's integrations (a plain array; one of type alerting, created disabled)",
    description:
      'The integrations of the organisation as a plain array. Today there is one, of type `alerting`; it is created ' +
      '(disabled) the first time it is read.',
  })
  @ApiOkResponse({ type: [OrganisationIntegrationResponse] })
  list(@OrgContext() ctx: OrganisationContext) {
    return this.integrations.list(ctx.organisation);
  }

  @Get('dashboard')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'List the dashboard integrations (the API token is never returned)',
    description:
      'The dashboard integrations of the organisation with their URL and health status (PENDING until the first check, then ' +
      'CONNECTED or ERROR); the API token given at creation is never answered.',
  })
  @ApiPageResponse(DashboardIntegrationResponse, { form: 'B', sortable: ['name', 'slug', 'status', 'url', 'createdAt', 'modifiedAt'] })
  listDashboards(@OrgContext() ctx: OrganisationContext, @Query() query: PageQueryDto) {
    return this.dashboards.list(ctx.organisation, query);
  }

  @Post('dashboard')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiStandardErrors({ conflict: 'A dashboard integration with this slug already exists in the organisation' })
  @ApiDoc({
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
  @ApiDoc({
    summary: 'Delete a dashboard integration',
    description: 'Deletes the dashboard integration and its stored API token; the slug becomes free again.',
    errors: '404 when no integration has this slug in the organisation.',
  })
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
  @ApiDoc({
    summary: "Update the organisation's integration (displayName, enabled, config)",
    description:
      "Changes the display name, enabled flag or config of the organisation's integration; a given `config` replaces the old " +
      'one whole (string values only, at most 50 keys). `organisationIntegrationIdentity` in the body must equal the identity ' +
      'in the path (400). Changes are audited with secret values redacted.',
    errors: '404 when the integration is not in the organisation.',
  })
  @ApiOkResponse({ type: OrganisationIntegrationResponse })
  update(
    @OrgContext() ctx: OrganisationContext,
    @Param('organisationIntegrationIdentity', new ParseUUIDPipe()) identity: string,
    @Body() body: UpdateOrganisationIntegrationRequest,
  ) {
    return this.integrations.update(ctx.organisation, identity, body);
  }
}
