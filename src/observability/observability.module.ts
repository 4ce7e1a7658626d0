import { SilencesController } from './silences.controller';
import { SilencesService } from './silences.service';
import { Module } from '@nestjs/common';
import { OrganisationsModule } from '../organisations/organisations.module';
import { AlertingConfigService } from './alerting-config.service';
import { AlertsWebhookController } from './alerts-webhook.controller';
import { AlertsService } from './alerts.service';
import { DashboardHealthChecker } from './dashboard-health-checker';
import { DashboardIntegrationsService } from './dashboard-integrations.service';
import { IntegrationsController } from './integrations.controller';
import { MonitoringController } from './monitoring.controller';
import { OrganisationIntegrationsService } from './organisation-integrations.service';
import { TenantsService } from './tenants.service';

/** Observability tenants, alerting configuration, alerts, dashboard and organisation integrations. */
@Module({
  imports: [OrganisationsModule],
  controllers: [MonitoringController, IntegrationsController, AlertsWebhookController, SilencesController],
  providers: [
    SilencesService,
    TenantsService,
    AlertingConfigService,
    AlertsService,
    DashboardIntegrationsService,
    DashboardHealthChecker,
    OrganisationIntegrationsService,
  ],
  exports: [TenantsService, OrganisationIntegrationsService, DashboardHealthChecker, AlertsService, SilencesService],
})
export class ObservabilityModule {}
