import { Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module';
import { ClusterDriversModule } from '../cluster-drivers/cluster-drivers.module';
import { ClustersModule } from '../clusters/clusters.module';
import { MeteringModule } from '../metering/metering.module';
import { OrganisationsModule } from '../organisations/organisations.module';
import { PoliciesModule } from '../policies/policies.module';
import { UpgradesModule } from '../upgrades/upgrades.module';
import { ClusterDriversAdminController } from './cluster-drivers-admin.controller';
import { ClusterPoliciesAdminController } from './cluster-policies-admin.controller';
import { ClusterVersionsAdminController } from './cluster-versions-admin.controller';
import { ClustersAdminController } from './clusters-admin.controller';
import { OrganisationsAdminController } from './organisations-admin.controller';
import { PriceBookAdminController } from './price-book-admin.controller';
import { UsageAdminController } from './usage-admin.controller';
import { ScheduledUpgradesAdminController } from './scheduled-upgrades-admin.controller';
import { UpdateChannelsAdminController } from './update-channels-admin.controller';

/**
 * The platform administrators' API (/admin/v1): controllers at the edge of the module layers, over the services the
 * domain modules export. No domain module knows them.
 */
@Module({
  imports: [OrganisationsModule, CatalogModule, ClusterDriversModule, ClustersModule, UpgradesModule, PoliciesModule, MeteringModule],
  controllers: [
    ClustersAdminController,
    ScheduledUpgradesAdminController,
    ClusterVersionsAdminController,
    UpdateChannelsAdminController,
    OrganisationsAdminController,
    ClusterPoliciesAdminController,
    ClusterDriversAdminController,
    PriceBookAdminController,
    UsageAdminController,
  ],
})
export class AdminModule {}
