import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { CatalogService, toVersionResponse } from './catalog.service';
import { CloudProviderNodeTypeResponse, CloudProviderResponse, PlatformKubernetesVersionResponse } from './dto/catalog.dto';
import { ENVIRONMENT_TYPES } from './environment-types';

/** Catalog reads outside any organisation; any authenticated caller. */
@ApiTags('Catalog')
@Controller('api/v1')
export class CatalogController {
  constructor(private readonly catalog: CatalogService) {}

  @Get('cloud-providers/:cloudProviderSlug')
  @ApiDoc({
    summary: 'One cloud provider, by slug (available or not)',
    description: 'One cloud provider by slug, whether it is available or not, with its display name and type.',
    errors: '404 when no provider has this slug.',
  })
  @ApiParam({ name: 'cloudProviderSlug', example: 'platform_1' })
  @ApiOkResponse({ type: CloudProviderResponse })
  @ApiStandardErrors({ badRequest: false })
  getProvider(@Param('cloudProviderSlug') slug: string): Promise<CloudProviderResponse> {
    return this.catalog.getProviderResponse(slug);
  }

  @Get('cloud-providers/:cloudProviderSlug/nodetypes')
  @ApiDoc({
    summary: "The provider's node types (cpu in cores, memory in MiB); sortable by type, cpu, memory",
    description: 'The node types of the provider: cpu in cores and memory in MiB.',
    errors: '404 when no provider has this slug.',
  })
  @ApiParam({ name: 'cloudProviderSlug', example: 'platform_1' })
  @ApiPageResponse(CloudProviderNodeTypeResponse, { form: 'A', sortable: ['type', 'cpu', 'memory'] })
  @ApiStandardErrors()
  nodeTypes(@Param('cloudProviderSlug') slug: string, @Query() query: PageQueryDto) {
    return this.catalog.nodeTypesPage(slug, query);
  }

  @Get('cluster-versions')
  @ApiDoc({
    summary: 'Every cluster version, available or not (see `available`), in ascending semver order',
    description:
      'Every cluster version of the catalog, available or withdrawn (see `available`), in ascending semantic-version order, ' +
      'as a plain array. New clusters, upgrades and downgrades use available versions only.',
  })
  @ApiOkResponse({ type: [PlatformKubernetesVersionResponse] })
  @ApiStandardErrors({ badRequest: false, notFound: false })
  async versions(): Promise<PlatformKubernetesVersionResponse[]> {
    return (await this.catalog.listVersions()).map(toVersionResponse);
  }

  @Get('cluster-versions/:version/available-upgrades')
  @ApiDoc({
    summary: 'Versions a cluster on `version` may upgrade to: available newer patches of its minor and available patches of the next minor (no minor skipped)',
    description:
      'The versions a cluster running `version` may move up to: available newer patches of its minor version, and available ' +
      'patches of the next minor (no minor is skipped). Ascending order; empty when there is none.',
    errors: '404 when `version` is not a version of the catalog.',
  })
  @ApiParam({ name: 'version', example: '1.30.6' })
  @ApiOkResponse({ type: [PlatformKubernetesVersionResponse] })
  @ApiStandardErrors({ badRequest: false })
  async upgrades(@Param('version') version: string): Promise<PlatformKubernetesVersionResponse[]> {
    return (await this.catalog.upgradeTargets(version)).map(toVersionResponse);
  }

  @Get('cluster-versions/:version/available-downgrades')
  @ApiDoc({
    summary: 'Versions a cluster on `version` may downgrade to: available older patches of the same minor',
    description:
      'The versions a cluster running `version` may move down to: available older patches of the same minor version. ' +
      'Ascending order; empty when there is none.',
    errors: '404 when `version` is not a version of the catalog.',
  })
  @ApiParam({ name: 'version', example: '1.30.9' })
  @ApiOkResponse({ type: [PlatformKubernetesVersionResponse] })
  @ApiStandardErrors({ badRequest: false })
  async downgrades(@Param('version') version: string): Promise<PlatformKubernetesVersionResponse[]> {
    return (await this.catalog.downgradeTargets(version)).map(toVersionResponse);
  }

  @Get('environments/types')
  @ApiDoc({
    summary: 'Environment types an environment may have',
    description: "The values an environment's `type` may take, as a plain array of strings.",
  })
  @ApiOkResponse({ schema: { type: 'array', items: { type: 'string', enum: [...ENVIRONMENT_TYPES] }, example: [...ENVIRONMENT_TYPES] } })
  @ApiStandardErrors({ badRequest: false, notFound: false })
  environmentTypes(): string[] {
    return [...ENVIRONMENT_TYPES];
  }
}
