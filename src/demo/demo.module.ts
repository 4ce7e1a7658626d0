import { Module } from '@nestjs/common';
import { CloudAccountsModule } from '../cloud-accounts/cloud-accounts.module';
import { ClustersModule } from '../clusters/clusters.module';
import { EnvironmentsModule } from '../environments/environments.module';
import { MaintenanceModule } from '../maintenance/maintenance.module';
import { MeteringModule } from '../metering/metering.module';
import { ObservabilityModule } from '../observability/observability.module';
import { OrganisationsModule } from '../organisations/organisations.module';
import { PoliciesModule } from '../policies/policies.module';
import { TokensModule } from '../tokens/tokens.module';
import { UsersModule } from '../users/users.module';
import { UpgradesModule } from '../upgrades/upgrades.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { ClusterDriversModule } from '../cluster-drivers/cluster-drivers.module';
import { DemoDataService } from './demo-data.service';

/** The demo organisation of a fresh install (DEMO_DATA), created through the feature modules' own services. */
@Module({
  imports: [
    OrganisationsModule,
    EnvironmentsModule,
    CloudAccountsModule,
    MaintenanceModule,
    ClustersModule,
    ObservabilityModule,
    UpgradesModule,
    WebhooksModule,
    PoliciesModule,
    MeteringModule,
    ClusterDriversModule,
    TokensModule,
    UsersModule,
  ],
  providers: [DemoDataService],
  exports: [DemoDataService],
})
export class DemoModule {}
