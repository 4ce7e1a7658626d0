import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { PlatformAdminOnly } from '../auth/principal';
import { CatalogAdminService } from '../catalog/catalog-admin.service';
import { PlatformKubernetesVersionResponse } from '../catalog/dto/catalog.dto';
import { ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, Page, PageQueryDto } from '../common/paging';
import { AdminClusterVersionResponse } from '../catalog/dto/catalog.dto';
import { CreateClusterVersionRequest, UpdateClusterVersionRequest } from './dto/catalog-admin.dto';

/** Cluster versions, for platform administrators (everyone else 403). Lists are pages (form A) in semver order. */
@ApiTags('Admin: cluster versions')
@PlatformAdminOnly()
@Controller('admin/v1/cluster-versions')
export class ClusterVersionsAdminController {
  constructor(private readonly admin: CatalogAdminService) {}

  @Get()
  @ApiOperation({
    summary: 'Every cluster version, available or not (page form A, ascending semver order)',
    description: 'Each version carries `clusterCount`, the non-deleted clusters running or wanting it.',
  })
  @ApiPageResponse(AdminClusterVersionResponse, 'A')
  @ApiStandardErrors({ notFound: false })
  list(@Query() query: PageQueryDto): Promise<Page<AdminClusterVersionResponse>> {
    return this.admin.pageVersions(query, () => true);
  }

  @Get('available')
  @ApiOperation({ summary: 'The versions new clusters, upgrades and downgrades may use (page form A)' })
  @ApiPageResponse(AdminClusterVersionResponse, 'A')
  @ApiStandardErrors({ notFound: false })
  available(@Query() query: PageQueryDto): Promise<Page<AdminClusterVersionResponse>> {
    return this.admin.pageVersions(query, (v) => v.available);
  }

  @Get('history')
  @ApiOperation({ summary: 'Withdrawn versions (available false), still run by older clusters (page form A)' })
  @ApiPageResponse(AdminClusterVersionResponse, 'A')
  @ApiStandardErrors({ notFound: false })
  history(@Query() query: PageQueryDto): Promise<Page<AdminClusterVersionResponse>> {
    return this.admin.pageVersions(query, (v) => !v.available);
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({ summary: 'Add a cluster version (audited CLUSTER_VERSION_CREATED)' })
  @ApiOkResponse({ type: PlatformKubernetesVersionResponse })
  @ApiStandardErrors({ notFound: false, conflict: 'The version already exists' })
  create(@Body() body: CreateClusterVersionRequest): Promise<PlatformKubernetesVersionResponse> {
    return this.admin.createVersion(body);
  }

  @Get(':version')
  @ApiOperation({ summary: 'One cluster version' })
  @ApiParam({ name: 'version', example: '1.31.6' })
  @ApiOkResponse({ type: PlatformKubernetesVersionResponse })
  @ApiStandardErrors({ badRequest: false })
  get(@Param('version') version: string): Promise<PlatformKubernetesVersionResponse> {
    return this.admin.getVersion(version);
  }

  @Patch(':version')
  @ApiOperation({ summary: 'Make a version available or withdraw it, or change its note (audited CLUSTER_VERSION_UPDATED)' })
  @ApiParam({ name: 'version', example: '1.31.6' })
  @ApiOkResponse({ type: PlatformKubernetesVersionResponse })
  @ApiStandardErrors({ conflict: 'Withdrawing a version an update channel points to' })
  update(@Param('version') version: string, @Body() body: UpdateClusterVersionRequest): Promise<PlatformKubernetesVersionResponse> {
    return this.admin.updateVersion(version, body);
  }

  @Put(':version')
  @ApiOperation({ summary: 'Same as PATCH (the original admin client sends PUT {available})' })
  @ApiParam({ name: 'version', example: '1.31.6' })
  @ApiOkResponse({ type: PlatformKubernetesVersionResponse })
  @ApiStandardErrors({ conflict: 'Withdrawing a version an update channel points to' })
  replace(@Param('version') version: string, @Body() body: UpdateClusterVersionRequest): Promise<PlatformKubernetesVersionResponse> {
    return this.admin.updateVersion(version, body);
  }

  @Delete(':version')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a version no cluster runs or wants, no update channel points to and no open upgrade targets (audited CLUSTER_VERSION_DELETED)' })
  @ApiParam({ name: 'version', example: '1.29.10' })
  @ApiNoContentResponse({ description: 'Deleted; the start-up catalog load will not bring it back' })
  @ApiStandardErrors({ badRequest: false, conflict: 'A non-deleted cluster runs or wants it, an update channel points to it, or an open scheduled upgrade targets it' })
  async remove(@Param('version') version: string): Promise<void> {
    await this.admin.deleteVersion(version);
  }
}
