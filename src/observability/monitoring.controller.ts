import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { NoAudit } from '../audit/audit.interceptor';
import { OrganisationContext, OrgContext, RequireOrgRole } from '../auth/organisation-access';
import { CurrentPrincipal, Principal } from '../auth/principal';
import { roleAtLeast } from '../organisations/organisation-member.entity';
import { ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { AlertingConfigService } from './alerting-config.service';
import { AlertsService } from './alerts.service';
import {
  AlertingConfigurationRequest,
  AlertingConfigurationResponse,
  AlertingValidationResponse,
  MessageResponse,
} from './dto/alerting.dto';
import { Alerts, TenantAlert, TenantAlertCounts } from './dto/alerts.dto';
import { AlertWebhookTokenResponse, CountResponse, ObservabilityTenant, ObservabilityTenantWithPushUrls } from './dto/tenant.dto';
import { TenantsService } from './tenants.service';

/** Receiver credentials in alerting configurations: MEMBER and above, not through READ_ONLY tokens. */
function mayReadSecrets(ctx: OrganisationContext, principal: Principal): boolean {
  return roleAtLeast(ctx.role, 'MEMBER') && principal.token?.type !== 'READ_ONLY';
}

/** Who a check is counted against: the member (platform administrators outside the organisation by organisation). */
function callerKey(ctx: OrganisationContext): string {
  return ctx.member ? `member:${ctx.member.id}` : `organisation:${ctx.organisation.id}`;
}

@ApiTags('Observability')
@ApiStandardErrors()
@ApiParam({ name: 'organisationSlug', description: 'Slug of the organisation (also written organizationSlug in the interface)' })
@Controller('api/v1/orgs/:organisationSlug')
export class MonitoringController {
  constructor(
    private readonly tenants: TenantsService,
    private readonly alerting: AlertingConfigService,
    private readonly alerts: AlertsService,
  ) {}

  @Get('monitoring')
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: 'List the monitoring (observability) tenants of the organisation; one per cluster' })
  @ApiPageResponse(ObservabilityTenant, 'B')
  list(@OrgContext() ctx: OrganisationContext, @Query() query: PageQueryDto) {
    return this.tenants.list(ctx.organisation, query);
  }

  @Get('monitoring/count')
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: 'Count the monitoring tenants of the organisation' })
  @ApiOkResponse({ type: CountResponse })
  count(@OrgContext() ctx: OrganisationContext) {
    return this.tenants.count(ctx.organisation);
  }

  @Get('monitoring/:tenantSlug')
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: 'Read one monitoring tenant' })
  @ApiOkResponse({ type: ObservabilityTenant })
  get(@OrgContext() ctx: OrganisationContext, @Param('tenantSlug') tenantSlug: string) {
    return this.tenants.get(ctx.organisation, tenantSlug);
  }

  @Get('observability/:tenantSlug')
  @RequireOrgRole('VIEWER')
  @ApiOperation({
    summary: 'Read one observability tenant with its push addresses',
    description:
      'monitoringPushUrl = `${OBSERVABILITY_PUSH_BASE_URL}/metrics/v1/{organisationSlug}/{tenantSlug}/push`, ' +
      'loggingPushUrl = `${OBSERVABILITY_PUSH_BASE_URL}/logs/v1/{organisationSlug}/{tenantSlug}/push`.',
  })
  @ApiOkResponse({ type: ObservabilityTenantWithPushUrls })
  getWithPushUrls(@OrgContext() ctx: OrganisationContext, @Param('tenantSlug') tenantSlug: string) {
    return this.tenants.getWithPushUrls(ctx.organisation, tenantSlug);
  }

  @Get('monitoring/:tenantSlug/alerting')
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: "Read the tenant's alerting configuration" })
  @ApiOkResponse({ type: AlertingConfigurationResponse })
  getAlerting(
    @OrgContext() ctx: OrganisationContext,
    @Param('tenantSlug') tenantSlug: string,
    @CurrentPrincipal() principal: Principal,
  ) {
    return this.alerting.getForTenant(ctx.organisation, tenantSlug, mayReadSecrets(ctx, principal));
  }

  @Post('monitoring/:tenantSlug/alerting')
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiOperation({
    summary: "Replace the tenant's alerting configuration",
    description: 'Checked before it is stored; an invalid configuration is 400 with one `errors` entry per problem, naming the file (and line/column).',
  })
  @ApiOkResponse({ type: MessageResponse })
  replaceAlerting(@OrgContext() ctx: OrganisationContext, @Param('tenantSlug') tenantSlug: string, @Body() body: AlertingConfigurationRequest) {
    return this.alerting.replaceForTenant(ctx.organisation, tenantSlug, body, callerKey(ctx));
  }

  @Post('monitoring/:tenantSlug/alerting/validate')
  @HttpCode(200)
  @NoAudit()
  @RequireOrgRole('VIEWER')
  @ApiOperation({
    summary: 'Check an alerting configuration without storing it',
    description: 'Answers {valid, errors: [{file, line?, column?, message}]}; changes nothing.',
  })
  @ApiOkResponse({ type: AlertingValidationResponse })
  validateAlerting(@OrgContext() ctx: OrganisationContext, @Param('tenantSlug') tenantSlug: string, @Body() body: AlertingConfigurationRequest) {
    return this.alerting.validateForTenant(ctx.organisation, tenantSlug, body, callerKey(ctx));
  }

  @Post('monitoring/:tenantSlug/alert-webhook-token')
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiOperation({
    summary: "Issue (or replace) the tenant's alert webhook token",
    description:
      'The token is shown once; only its SHA-256 is stored and an earlier token stops working. The metrics stack posts alerts to ' +
      '`url` with `Authorization: Bearer <token>` (or `X-Alert-Token: <token>`).',
  })
  @ApiOkResponse({ type: AlertWebhookTokenResponse })
  rotateWebhookToken(@OrgContext() ctx: OrganisationContext, @Param('tenantSlug') tenantSlug: string) {
    return this.tenants.rotateWebhookToken(ctx.organisation, tenantSlug);
  }

  @Get('alerts')
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: "Every alert of the organisation's monitoring tenants, each with its tenant (firing first)" })
  @ApiOkResponse({ type: [Alerts] })
  listAlerts(@OrgContext() ctx: OrganisationContext) {
    return this.alerts.listForOrganisation(ctx.organisation);
  }

  @Get('alerts-summary')
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: 'How many alerts fire, are silenced and are resolved, per monitoring tenant' })
  @ApiOkResponse({ type: [TenantAlertCounts] })
  alertsSummary(@OrgContext() ctx: OrganisationContext) {
    return this.alerts.countsForOrganisation(ctx.organisation);
  }

  @Get('alerts/:tenantSlug')
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: 'Alerts of one monitoring tenant (firing first)' })
  @ApiOkResponse({ type: [TenantAlert] })
  tenantAlerts(@OrgContext() ctx: OrganisationContext, @Param('tenantSlug') tenantSlug: string) {
    return this.alerts.listForTenant(ctx.organisation, tenantSlug);
  }

  @Get('environments/:environmentSlug/metrics/alerting')
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: "Read the environment's alerting configuration" })
  @ApiOkResponse({ type: AlertingConfigurationResponse })
  getEnvironmentAlerting(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') environmentSlug: string,
    @CurrentPrincipal() principal: Principal,
  ) {
    return this.alerting.getForEnvironment(ctx.organisation, environmentSlug, mayReadSecrets(ctx, principal));
  }

  @Post('environments/:environmentSlug/metrics/alerting')
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiOperation({
    summary: "Replace the environment's alerting configuration",
    description: 'Checked before it is stored; an invalid configuration is 400 with one `errors` entry per problem, naming the file (and line/column).',
  })
  @ApiOkResponse({ type: MessageResponse })
  replaceEnvironmentAlerting(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') environmentSlug: string,
    @Body() body: AlertingConfigurationRequest,
  ) {
    return this.alerting.replaceForEnvironment(ctx.organisation, environmentSlug, body, callerKey(ctx));
  }

  @Post('environments/:environmentSlug/metrics/alerting/default-rules')
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiOperation({
    summary: 'Copy the default rules shipped with the service into the environment',
    description: 'Stored as rule file `default-rules.yaml` (replacing a file of that name); other files are kept.',
  })
  @ApiOkResponse({ type: MessageResponse })
  copyDefaultRules(@OrgContext() ctx: OrganisationContext, @Param('environmentSlug') environmentSlug: string) {
    return this.alerting.copyDefaultRules(ctx.organisation, environmentSlug);
  }
}
