import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { CatalogService } from './catalog.service';
import {
  CloudProfileResponse,
  CloudProviderRegionAvailabilityZoneResponse,
  CloudProviderRegionResponse,
  CloudProviderResponse,
  UpdateChannelResponse,
} from './dto/catalog.dto';
import { ENVIRONMENT_TYPES } from './environment-types';

const RESTRICTION_NOTE =
  'An organisation with restrictedToAvailableCloudProviders does not see unavailable providers, nor restricted or unavailable regions; ' +
  'other organisations see them with available=false / restricted=true.';

/** The catalog as one organisation sees it; any member (VIEWER and up). */
@ApiTags('Catalog')
@ApiParam({ name: 'organisationSlug', example: 'acme' })
@Controller('api/v1/orgs/:organisationSlug')
export class OrgCatalogController {
  constructor(private readonly catalog: CatalogService) {}

  @Get('cloud-providers')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'Cloud providers, by default in the interface\'s type order (platform_1, platform_2, byon, platform_3, empty, platform_4, platform_5, platform_6, none, platform_7)',
    description: RESTRICTION_NOTE,
  })
  @ApiPageResponse(CloudProviderResponse, { form: 'A', sortable: ['type', 'name', 'slug', 'available'] })
  @ApiStandardErrors({ notFound: false })
  providers(@OrgContext() ctx: OrganisationContext, @Query() query: PageQueryDto) {
    return this.catalog.providersPage(ctx.organisation, query);
  }

  @Get('cloud-providers/:provider/regions')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: "A provider's regions (provider by slug or type value)",
    description: RESTRICTION_NOTE,
  })
  @ApiParam({ name: 'provider', example: 'platform_1' })
  @ApiPageResponse(CloudProviderRegionResponse, { form: 'A', sortable: ['slug', 'name', 'available', 'restricted'] })
  @ApiStandardErrors()
  regions(@OrgContext() ctx: OrganisationContext, @Param('provider') provider: string, @Query() query: PageQueryDto) {
    return this.catalog.regionsPage(ctx.organisation, provider, query);
  }

  @Get('cloud-providers/:provider/regions/:region/availability-zones')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: "A region's availability zones",
    description: RESTRICTION_NOTE,
  })
  @ApiParam({ name: 'provider', example: 'platform_1' })
  @ApiParam({ name: 'region', example: 'eu-central-1' })
  @ApiPageResponse(CloudProviderRegionAvailabilityZoneResponse, { form: 'A', sortable: ['slug', 'name'] })
  @ApiStandardErrors()
  zones(
    @OrgContext() ctx: OrganisationContext,
    @Param('provider') provider: string,
    @Param('region') region: string,
    @Query() query: PageQueryDto,
  ) {
    return this.catalog.zonesPage(ctx.organisation, provider, region, query);
  }

  @Get('cloud-profiles')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'Public cloud profiles to choose from when creating a cloud account (by identity or slug)',
    description: RESTRICTION_NOTE,
  })
  @ApiPageResponse(CloudProfileResponse, { form: 'A', sortable: ['type', 'slug', 'displayName', 'enabled'], defaultOrder: 'provider type order, then slug' })
  @ApiStandardErrors({ notFound: false })
  cloudProfiles(@OrgContext() ctx: OrganisationContext, @Query() query: PageQueryDto) {
    return this.catalog.cloudProfilesPage(ctx.organisation, query);
  }

  @Get('update-channels')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'Update channels and the version each one currently points to; sortable by name, available',
    description:
      'The update channels (such as stable) with the version each one points to now; a cluster may follow a channel (its ' +
      '`updateChannel`).',
  })
  @ApiPageResponse(UpdateChannelResponse, { form: 'B', sortable: ['name', 'available'], defaultOrder: 'name' })
  @ApiStandardErrors({ notFound: false })
  updateChannels(@Query() query: PageQueryDto) {
    return this.catalog.updateChannelsPage(query);
  }

  @Get('environments/types')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'Environment types an environment of this organisation may have',
    description: 'The values the `type` of an environment of this organisation may take, as a plain array of strings.',
  })
  @ApiOkResponse({ schema: { type: 'array', items: { type: 'string', enum: [...ENVIRONMENT_TYPES] }, example: [...ENVIRONMENT_TYPES] } })
  @ApiStandardErrors({ badRequest: false, notFound: false })
  environmentTypes(): string[] {
    return [...ENVIRONMENT_TYPES];
  }
}
