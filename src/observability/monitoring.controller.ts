import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { NoAudit } from '../audit/audit.interceptor';
import { OrganisationContext, OrgContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { CurrentPrincipal, Principal } from '../identity/principal';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { mayReadSecret, secretReaderOf } from '../common/secret-fields';
import { ApiExecutorErrors } from '../executor/executor-docs';
import { AlertingConfigService } from './alerting-config.service';
import { AlertsService } from './alerts.service';
import {
  ALERTING_CONFIG_SECRET,
  AlertingConfigurationRequest,
  AlertingConfigurationResponse,
  AlertingValidationResponse,
  MessageResponse,
} from './dto/alerting.dto';
import { Alerts, TenantAlert, TenantAlertCounts } from './dto/alerts.dto';
import { AlertWebhookTokenResponse, CountResponse, ObservabilityTenant, ObservabilityTenantWithPushUrls } from './dto/tenant.dto';
import { TenantsService } from './tenants.service';

/** Receiver credentials in alerting configurations: as their declaration says (members of that role, not READ_ONLY tokens). */
function mayReadSecrets(ctx: OrganisationContext, principal: Principal): boolean {
  return mayReadSecret(ALERTING_CONFIG_SECRET, secretReaderOf({ organisationContext: ctx, user: principal }));
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
  @ApiDoc({
    summary: 'List the monitoring (observability) tenants of the organisation; one per cluster',
    description: 'The monitoring (observability) tenants of the organisation, one per cluster, with the cluster they belong to.',
  })
  @ApiPageResponse(ObservabilityTenant, { form: 'B', sortable: ['id', 'name', 'slug', 'createdAt', 'modifiedAt', 'available'] })
  list(@OrgContext() ctx: OrganisationContext, @Query() query: PageQueryDto) {
    return this.tenants.list(ctx.organisation, query);
  }

  @Get('monitoring/count')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'Count the monitoring tenants of the organisation',
    description: 'The number of monitoring tenants of the organisation (deleted tenants are not counted).',
  })
  @ApiOkResponse({ type: CountResponse })
  count(@OrgContext() ctx: OrganisationContext) {
    return this.tenants.count(ctx.organisation);
  }

  @Get('monitoring/:tenantSlug')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'Read one monitoring tenant',
    description: 'One monitoring tenant by slug, without its push addresses (GET /observability/{tenantSlug} adds them).',
    errors: '404 when the tenant does not exist in the organisation.',
  })
  @ApiOkResponse({ type: ObservabilityTenant })
  get(@OrgContext() ctx: OrganisationContext, @Param('tenantSlug') tenantSlug: string) {
    return this.tenants.get(ctx.organisation, tenantSlug);
  }

  @Get('observability/:tenantSlug')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
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
  @ApiExecutorErrors()
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: "Read the tenant's alerting configuration",
    description:
      "The tenant's alerting configuration: its alert manager file and rule files. Secrets in it (receiver passwords, tokens, " +
      'webhook URLs) are answered only to MEMBER or above with a token that may write; VIEWERs and READ_ONLY tokens see a ' +
      'placeholder instead.',
    errors: '404 when the tenant does not exist.',
  })
  @ApiOkResponse({ type: AlertingConfigurationResponse })
  getAlerting(
    @OrgContext() ctx: OrganisationContext,
    @Param('tenantSlug') tenantSlug: string,
    @CurrentPrincipal() principal: Principal,
  ) {
    return this.alerting.getForTenant(ctx.organisation, tenantSlug, mayReadSecrets(ctx, principal));
  }

  @Post('monitoring/:tenantSlug/alerting')
  @ApiExecutorErrors()
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiDoc({
    summary: "Replace the tenant's alerting configuration",
    description: 'Checked before it is stored; an invalid configuration is 400 with one `errors` entry per problem, naming the file (and line/column).',
  })
  @ApiOkResponse({ type: MessageResponse })
  replaceAlerting(@OrgContext() ctx: OrganisationContext, @Param('tenantSlug') tenantSlug: string, @Body() body: AlertingConfigurationRequest) {
    return this.alerting.replaceForTenant(ctx.organisation, tenantSlug, body);
  }

  @Post('monitoring/:tenantSlug/alerting/validate')
  @ApiExecutorErrors()
  @HttpCode(200)
  @NoAudit()
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'Check an alerting configuration without storing it',
    description: 'Answers {valid, errors: [{file, line?, column?, message}]}; changes nothing.',
  })
  @ApiOkResponse({ type: AlertingValidationResponse })
  validateAlerting(@OrgContext() ctx: OrganisationContext, @Param('tenantSlug') tenantSlug: string, @Body() body: AlertingConfigurationRequest) {
    return this.alerting.validateForTenant(ctx.organisation, tenantSlug, body);
  }

  @Post('monitoring/:tenantSlug/alert-webhook-token')
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiDoc({
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
  @ApiExecutorErrors()
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: "Every alert of the organisation's monitoring tenants, each with its tenant (firing first)",
    description:
      "Every alert of the organisation's monitoring tenants in one list: firing first, then the newest. Each carries the original client's " +
      'alert fields (labels, annotations, state, activeAt, value) and the slugs of its tenant, cluster and environment. Alerts muted by an ' +
      'active silence show as suppressed. Counts per tenant: the alerts summary.',
  })
  @ApiOkResponse({ type: [Alerts] })
  listAlerts(@OrgContext() ctx: OrganisationContext) {
    return this.alerts.listForOrganisation(ctx.organisation);
  }

  @Get('alerts-summary')
  @ApiExecutorErrors()
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'How many alerts fire, are silenced and are resolved, per monitoring tenant',
    description:
      'One entry per monitoring tenant of the organisation (by tenant slug; also those without alerts) with its cluster and environment and ' +
      'how many of its alerts fire, are suppressed by an active silence and are resolved.',
  })
  @ApiOkResponse({ type: [TenantAlertCounts] })
  alertsSummary(@OrgContext() ctx: OrganisationContext) {
    return this.alerts.countsForOrganisation(ctx.organisation);
  }

  @Get('alerts/:tenantSlug')
  @ApiExecutorErrors()
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'Alerts of one monitoring tenant (firing first)',
    description:
      'The alerts received for one monitoring tenant: firing alerts first, then by start time, newest first. A firing alert ' +
      'has no endsAt until it resolves.',
    errors: '404 when the tenant does not exist in the organisation.',
  })
  @ApiOkResponse({ type: [TenantAlert] })
  tenantAlerts(@OrgContext() ctx: OrganisationContext, @Param('tenantSlug') tenantSlug: string) {
    return this.alerts.listForTenant(ctx.organisation, tenantSlug);
  }

  @Get('environments/:environmentSlug/metrics/alerting')
  @ApiExecutorErrors()
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: "Read the environment's alerting configuration",
    description:
      "The environment's alerting configuration (alert manager file and rule files), shared by the tenants of its clusters. " +
      'Secrets are answered only to MEMBER or above with a token that may write; others see a placeholder.',
    errors: '404 when the environment does not exist in the organisation.',
  })
  @ApiOkResponse({ type: AlertingConfigurationResponse })
  getEnvironmentAlerting(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') environmentSlug: string,
    @CurrentPrincipal() principal: Principal,
  ) {
    return this.alerting.getForEnvironment(ctx.organisation, environmentSlug, mayReadSecrets(ctx, principal));
  }

  @Post('environments/:environmentSlug/metrics/alerting')
  @ApiExecutorErrors()
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiDoc({
    summary: "Replace the environment's alerting configuration",
    description: 'Checked before it is stored; an invalid configuration is 400 with one `errors` entry per problem, naming the file (and line/column).',
  })
  @ApiOkResponse({ type: MessageResponse })
  replaceEnvironmentAlerting(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') environmentSlug: string,
    @Body() body: AlertingConfigurationRequest,
  ) {
    return this.alerting.replaceForEnvironment(ctx.organisation, environmentSlug, body);
  }

  @Post('environments/:environmentSlug/metrics/alerting/default-rules')
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiDoc({
    summary: 'Copy the default rules shipped with the service into the environment',
    description: 'Stored as rule file `default-rules.yaml` (replacing a file of that name); other files are kept.',
  })
  @ApiOkResponse({ type: MessageResponse })
  copyDefaultRules(@OrgContext() ctx: OrganisationContext, @Param('environmentSlug') environmentSlug: string) {
    return this.alerting.copyDefaultRules(ctx.organisation, environmentSlug);
  }
}
