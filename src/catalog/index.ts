/** What other modules use from the catalog. */
export { CatalogModule } from './catalog.module';
export {
  CatalogService,
  providerTypeRank,
  providerVisibleTo,
  regionVisibleTo,
  toCloudProviderResponse,
  toNodeTypeResponse,
  toRegionResponse,
  toZoneResponse,
  toUpdateChannelResponse,
  toVersionResponse,
} from './catalog.service';
export type { CatalogViewer } from './catalog.service';
export { ENVIRONMENT_TYPES } from './environment-types';
export type { EnvironmentType } from './environment-types';
export { CLOUD_PROVIDER_TYPES } from './cloud-provider.entity';
export type { CloudProviderType } from './cloud-provider.entity';
export { compareVersions, downgradeTargets, upgradeTargets } from './semver-targets';
export * from './dto/catalog.dto';
