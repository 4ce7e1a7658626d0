import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiStandardErrors } from '../common/api-docs';
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
  @ApiOperation({ summary: 'One cloud provider, by slug (available or not)' })
  @ApiParam({ name: 'cloudProviderSlug', example: 'platform_1' })
  @ApiOkResponse({ type: CloudProviderResponse })
  @ApiStandardErrors({ forbidden: false, badRequest: false })
  getProvider(@Param('cloudProviderSlug') slug: string): Promise<CloudProviderResponse> {
    return this.catalog.getProviderResponse(slug);
  }

  @Get('cloud-providers/:cloudProviderSlug/nodetypes')
  @ApiOperation({ summary: "The provider's node types (cpu in cores, memory in MiB); sortable by type, cpu, memory" })
  @ApiParam({ name: 'cloudProviderSlug', example: 'platform_1' })
  @ApiPageResponse(CloudProviderNodeTypeResponse, 'A')
  @ApiStandardErrors({ forbidden: false })
  nodeTypes(@Param('cloudProviderSlug') slug: string, @Query() query: PageQueryDto) {
    return this.catalog.nodeTypesPage(slug, query);
  }

  @Get('cluster-versions')
  @ApiOperation({ summary: 'Every cluster version, available or not (see `available`), in ascending semver order' })
  @ApiOkResponse({ type: [PlatformKubernetesVersionResponse] })
  @ApiStandardErrors({ forbidden: false, badRequest: false, notFound: false })
  async versions(): Promise<PlatformKubernetesVersionResponse[]> {
    return (await this.catalog.listVersions()).map(toVersionResponse);
  }

  @Get('cluster-versions/:version/available-upgrades')
  @ApiOperation({
    summary: 'Versions a cluster on `version` may upgrade to: available newer patches of its minor and available patches of the next minor (no minor skipped)',
  })
  @ApiParam({ name: 'version', example: '1.30.6' })
  @ApiOkResponse({ type: [PlatformKubernetesVersionResponse] })
  @ApiStandardErrors({ forbidden: false, badRequest: false })
  async upgrades(@Param('version') version: string): Promise<PlatformKubernetesVersionResponse[]> {
    return (await this.catalog.upgradeTargets(version)).map(toVersionResponse);
  }

  @Get('cluster-versions/:version/available-downgrades')
  @ApiOperation({ summary: 'Versions a cluster on `version` may downgrade to: available older patches of the same minor' })
  @ApiParam({ name: 'version', example: '1.30.9' })
  @ApiOkResponse({ type: [PlatformKubernetesVersionResponse] })
  @ApiStandardErrors({ forbidden: false, badRequest: false })
  async downgrades(@Param('version') version: string): Promise<PlatformKubernetesVersionResponse[]> {
    return (await this.catalog.downgradeTargets(version)).map(toVersionResponse);
  }

  @Get('environments/types')
  @ApiOperation({ summary: 'Environment types an environment may have' })
  @ApiOkResponse({ schema: { type: 'array', items: { type: 'string', enum: [...ENVIRONMENT_TYPES] }, example: [...ENVIRONMENT_TYPES] } })
  @ApiStandardErrors({ forbidden: false, badRequest: false, notFound: false })
  environmentTypes(): string[] {
    return [...ENVIRONMENT_TYPES];
  }
}
