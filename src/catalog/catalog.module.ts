import { Module } from '@nestjs/common';
import { CatalogAdminService } from './catalog-admin.service';
import { CatalogLoader } from './catalog-loader.service';
import { CatalogController } from './catalog.controller';
import { CatalogService } from './catalog.service';
import { OrgCatalogController } from './org-catalog.controller';

/**
 * The catalog: providers, regions, zones, node types, cloud profiles, cluster versions, update
 * channels and add-ons, loaded from data/catalog.yaml at start-up. Other modules import this module
 * and use CatalogService (lookups) and the shared constants (ENVIRONMENT_TYPES, CLOUD_PROVIDER_TYPES).
 */
@Module({
  controllers: [CatalogController, OrgCatalogController],
  providers: [CatalogLoader, CatalogService, CatalogAdminService],
  exports: [CatalogLoader, CatalogService, CatalogAdminService],
})
export class CatalogModule {}
