import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { PlatformAdminOnly } from '../common/route-access';
import { CatalogAdminService } from '../catalog/catalog-admin.service';
import { PlatformKubernetesVersionResponse } from '../catalog/dto/catalog.dto';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, Page, PageQueryDto, PagingDoc } from '../common/paging';
import { AdminClusterVersionResponse } from '../catalog/dto/catalog.dto';
import { CreateClusterVersionRequest, UpdateClusterVersionRequest } from '../catalog/dto/catalog-admin.dto';

/** Cluster versions, for platform administrators (everyone else 403). Lists are pages (form A) in semver order. */
/** Every version list: form A, in ascending semantic-version order unless `sort` says otherwise. */
const VERSION_PAGING: PagingDoc = { form: 'A', sortable: ['version', 'available', 'createdAt'], defaultOrder: 'ascending semantic version' };

@ApiTags('Platform administration')
@PlatformAdminOnly()
@Controller('admin/v1/cluster-versions')
export class ClusterVersionsAdminController {
  constructor(private readonly admin: CatalogAdminService) {}

  @Get()
  @ApiDoc({
    summary: 'Every cluster version, available or not (page form A, ascending semver order)',
    description: 'Each version carries `clusterCount`, the non-deleted clusters running or wanting it.',
  })
  @ApiPageResponse(AdminClusterVersionResponse, VERSION_PAGING)
  @ApiStandardErrors({ notFound: false })
  list(@Query() query: PageQueryDto): Promise<Page<AdminClusterVersionResponse>> {
    return this.admin.pageVersions(query, () => true);
  }

  @Get('available')
  @ApiDoc({
    summary: 'The versions new clusters, upgrades and downgrades may use (page form A)',
    description: 'The versions that new clusters, upgrades and downgrades may use (available true), each with clusterCount.',
  })
  @ApiPageResponse(AdminClusterVersionResponse, VERSION_PAGING)
  @ApiStandardErrors({ notFound: false })
  available(@Query() query: PageQueryDto): Promise<Page<AdminClusterVersionResponse>> {
    return this.admin.pageVersions(query, (v) => v.available);
  }

  @Get('history')
  @ApiDoc({
    summary: 'Withdrawn versions (available false), still run by older clusters (page form A)',
    description:
      'Withdrawn versions (available false): older clusters may still run them, but nothing new may move to them. Each ' +
      'carries clusterCount.',
  })
  @ApiPageResponse(AdminClusterVersionResponse, VERSION_PAGING)
  @ApiStandardErrors({ notFound: false })
  history(@Query() query: PageQueryDto): Promise<Page<AdminClusterVersionResponse>> {
    return this.admin.pageVersions(query, (v) => !v.available);
  }

  @Post()
  @HttpCode(200)
  @ApiDoc({
    summary: 'Add a cluster version (audited CLUSTER_VERSION_CREATED)',
    description:
      'Adds a cluster version: `version` must be a semantic version (400 otherwise); kubernetesVersion defaults to ' +
      '`v<version>`, available to true. A version that was deleted may be added again. Audited.',
    errors: '409 when the version exists (PATCH it instead).',
  })
  @ApiOkResponse({ type: PlatformKubernetesVersionResponse })
  @ApiStandardErrors({ notFound: false, conflict: 'The version already exists' })
  create(@Body() body: CreateClusterVersionRequest): Promise<PlatformKubernetesVersionResponse> {
    return this.admin.createVersion(body);
  }

  @Get(':version')
  @ApiDoc({
    summary: 'One cluster version',
    description: 'One cluster version of the catalog, available or withdrawn.',
    errors: '404 when the version does not exist.',
  })
  @ApiParam({ name: 'version', example: '1.31.6' })
  @ApiOkResponse({ type: PlatformKubernetesVersionResponse })
  @ApiStandardErrors({ badRequest: false })
  get(@Param('version') version: string): Promise<PlatformKubernetesVersionResponse> {
    return this.admin.getVersion(version);
  }

  @Patch(':version')
  @ApiDoc({
    summary: 'Make a version available or withdraw it, or change its note (audited CLUSTER_VERSION_UPDATED)',
    description:
      'Makes the version available or withdraws it, or changes its note; only the given fields change. Withdrawing a version ' +
      'that an update channel points to is 409: move the channel first. Withdrawing does not touch the clusters that run it. ' +
      'Audited.',
    errors: '404 when the version does not exist.',
  })
  @ApiParam({ name: 'version', example: '1.31.6' })
  @ApiOkResponse({ type: PlatformKubernetesVersionResponse })
  @ApiStandardErrors({ conflict: 'Withdrawing a version an update channel points to' })
  update(@Param('version') version: string, @Body() body: UpdateClusterVersionRequest): Promise<PlatformKubernetesVersionResponse> {
    return this.admin.updateVersion(version, body);
  }

  @Put(':version')
  @ApiDoc({
    summary: 'Same as PATCH (the original admin client sends PUT {available})',
    description:
      'The same change as PATCH, for the original admin client, which sends PUT `{available}`: only the given fields change. ' +
      'Withdrawing a version an update channel points to is 409. Audited.',
    errors: '404 when the version does not exist.',
  })
  @ApiParam({ name: 'version', example: '1.31.6' })
  @ApiOkResponse({ type: PlatformKubernetesVersionResponse })
  @ApiStandardErrors({ conflict: 'Withdrawing a version an update channel points to' })
  replace(@Param('version') version: string, @Body() body: UpdateClusterVersionRequest): Promise<PlatformKubernetesVersionResponse> {
    return this.admin.updateVersion(version, body);
  }

  @Delete(':version')
  @HttpCode(204)
  @ApiDoc({
    summary: 'Delete a version no cluster runs or wants, no update channel points to and no open upgrade targets (audited CLUSTER_VERSION_DELETED)',
    description:
      'Deletes the version from the catalog; the start-up catalog load will not bring it back. Refused with 409 while a ' +
      'cluster that is not deleted runs or wants it, an update channel points to it, or an open scheduled upgrade targets it. ' +
      'Audited.',
    errors: '404 when the version does not exist.',
  })
  @ApiParam({ name: 'version', example: '1.29.10' })
  @ApiNoContentResponse({ description: 'Deleted; the start-up catalog load will not bring it back' })
  @ApiStandardErrors({ badRequest: false, conflict: 'A non-deleted cluster runs or wants it, an update channel points to it, or an open scheduled upgrade targets it' })
  async remove(@Param('version') version: string): Promise<void> {
    await this.admin.deleteVersion(version);
  }
}
