import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { CLOUD_PROVIDER_TYPES } from '../catalog/cloud-provider.entity';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ValidationFailedException } from '../common/errors';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { uuidParam } from './cloud-accounts.controller';
import { CloudCredentialsService } from './cloud-credentials.service';
import {
  CloudCredentialsResponse,
  NoSecretCredentialsRequest,
  Platform1CredentialsRequest,
  Platform2CredentialsRequest,
  Platform3CredentialsRequest,
  Platform4CredentialsRequest,
  Platform5CredentialsRequest,
  Platform6CredentialsRequest,
  Platform7CredentialsRequest,
} from './dto/credentials.dto';

/**
 * Credentials of a cloud account. One create route per platform type, each with its own body
 * (docs/conventions.md, "Cloud accounts and credentials"): the body is validated against the path platform, and the path platform must be the
 * account's platform.
 */
/** The credential create operations differ in their platform and body; what they share is said once. */
const ApiAddCredentials = (summary: string, what: string) =>
  ApiDoc({
    summary,
    description:
      `Adds credentials of ${what} to the cloud account. The platform in the path must be the platform of the cloud account ` +
      '(400 otherwise, naming the right path). The secret values are stored encrypted and are never answered again; the first ' +
      'credentials of an account become its primary credentials.',
    errors: '404 when the cloud account is not in the organisation.',
  });

@ApiTags('Cloud accounts')
@ApiParam({ name: 'organisationSlug', example: 'acme' })
@ApiParam({ name: 'cloudAccountIdentity', format: 'uuid' })
@Controller('api/v1/orgs/:organisationSlug/cloud-accounts/:cloudAccountIdentity')
export class CloudCredentialsController {
  constructor(private readonly credentials: CloudCredentialsService) {}

  @Get('credentials')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'List the credentials of a cloud account (page form B); secrets are never shown',
    description:
      'The credentials of the cloud account: display name, platform (cloudType), isPrimary, metadata and dates; the secret ' +
      'values are never answered.',
    errors: '404 when the account is not in the organisation.',
  })
  @ApiPageResponse(CloudCredentialsResponse, { form: 'B', sortable: ['displayName', 'createdAt'] })
  @ApiStandardErrors()
  list(
    @OrgContext() ctx: OrganisationContext,
    @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string,
    @Query() query: PageQueryDto,
  ) {
    return this.credentials.list(ctx.organisation, id, query);
  }

  @Post('credentials/platform_1')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiAddCredentials(
    'Add platform_1 credentials (access key id and secret); the first credentials of an account become primary',
    'platform_1 (access key id and secret access key)',
  )
  @ApiOkResponse({ type: CloudCredentialsResponse })
  @ApiStandardErrors()
  createPlatform1(@OrgContext() ctx: OrganisationContext, @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string, @Body() body: Platform1CredentialsRequest) {
    return this.credentials.create(ctx.organisation, id, 'platform_1', body);
  }

  @Post('credentials/platform_2')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiAddCredentials(
    'Add platform_2 credentials (service principal: clientId, clientSecret, tenantId, subscriptionId); the first credentials of an account become primary',
    'platform_2 (a service principal: clientId, clientSecret, tenantId and subscriptionId)',
  )
  @ApiOkResponse({ type: CloudCredentialsResponse })
  @ApiStandardErrors()
  createPlatform2(@OrgContext() ctx: OrganisationContext, @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string, @Body() body: Platform2CredentialsRequest) {
    return this.credentials.create(ctx.organisation, id, 'platform_2', body);
  }

  @Post('credentials/platform_3')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiAddCredentials(
    'Add platform_3 credentials (API token); the first credentials of an account become primary',
    'platform_3 (an API token)',
  )
  @ApiOkResponse({ type: CloudCredentialsResponse })
  @ApiStandardErrors()
  createPlatform3(@OrgContext() ctx: OrganisationContext, @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string, @Body() body: Platform3CredentialsRequest) {
    return this.credentials.create(ctx.organisation, id, 'platform_3', body);
  }

  @Post('credentials/platform_4')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiAddCredentials(
    'Add platform_4 credentials (API key and secret); the first credentials of an account become primary',
    'platform_4 (an API key and its secret)',
  )
  @ApiOkResponse({ type: CloudCredentialsResponse })
  @ApiStandardErrors()
  createPlatform4(@OrgContext() ctx: OrganisationContext, @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string, @Body() body: Platform4CredentialsRequest) {
    return this.credentials.create(ctx.organisation, id, 'platform_4', body);
  }

  @Post('credentials/platform_5')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiAddCredentials(
    'Add platform_5 credentials (service account key (JSON string with client_email and private_key)); the first credentials of an account become primary',
    'platform_5 (a service account key: a JSON string holding client_email and private_key)',
  )
  @ApiOkResponse({ type: CloudCredentialsResponse })
  @ApiStandardErrors()
  createPlatform5(@OrgContext() ctx: OrganisationContext, @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string, @Body() body: Platform5CredentialsRequest) {
    return this.credentials.create(ctx.organisation, id, 'platform_5', body);
  }

  @Post('credentials/platform_6')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiAddCredentials(
    'Add platform_6 credentials (API token); the first credentials of an account become primary',
    'platform_6 (an API token)',
  )
  @ApiOkResponse({ type: CloudCredentialsResponse })
  @ApiStandardErrors()
  createPlatform6(@OrgContext() ctx: OrganisationContext, @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string, @Body() body: Platform6CredentialsRequest) {
    return this.credentials.create(ctx.organisation, id, 'platform_6', body);
  }

  @Post('credentials/platform_7')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiAddCredentials(
    'Add platform_7 credentials (applicationKey, applicationSecret, consumerKey, projectId); the first credentials of an account become primary',
    'platform_7 (applicationKey, applicationSecret, consumerKey and projectId)',
  )
  @ApiOkResponse({ type: CloudCredentialsResponse })
  @ApiStandardErrors()
  createPlatform7(@OrgContext() ctx: OrganisationContext, @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string, @Body() body: Platform7CredentialsRequest) {
    return this.credentials.create(ctx.organisation, id, 'platform_7', body);
  }

  @Post('credentials/byon')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiAddCredentials(
    'Add byon credentials (no secret); the first credentials of an account become primary',
    'a byon account (bring your own nodes: no secret, only a display name)',
  )
  @ApiOkResponse({ type: CloudCredentialsResponse })
  @ApiStandardErrors()
  createByon(@OrgContext() ctx: OrganisationContext, @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string, @Body() body: NoSecretCredentialsRequest) {
    return this.credentials.create(ctx.organisation, id, 'byon', body);
  }

  @Post('credentials/none')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiAddCredentials(
    'Add none credentials (no secret); the first credentials of an account become primary',
    'a `none` account (no secret, only a display name)',
  )
  @ApiOkResponse({ type: CloudCredentialsResponse })
  @ApiStandardErrors()
  createNone(@OrgContext() ctx: OrganisationContext, @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string, @Body() body: NoSecretCredentialsRequest) {
    return this.credentials.create(ctx.organisation, id, 'none', body);
  }

  @Post('credentials/empty')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiAddCredentials(
    'Add empty credentials (no secret); the first credentials of an account become primary',
    'an `empty` account (no secret, only a display name)',
  )
  @ApiOkResponse({ type: CloudCredentialsResponse })
  @ApiStandardErrors()
  createEmpty(@OrgContext() ctx: OrganisationContext, @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string, @Body() body: NoSecretCredentialsRequest) {
    return this.credentials.create(ctx.organisation, id, 'empty', body);
  }

  @Post('credentials/:platform')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  // Not an operation: turns an unknown platform segment into a 400 naming it instead of a bare 404.
  @ApiExcludeEndpoint()
  unknownPlatform(@Param('platform') platform: string): never {
    throw ValidationFailedException.forField(
      'platform',
      `platform '${platform}' is not a cloud provider type; use one of: ${CLOUD_PROVIDER_TYPES.join(', ')}`,
    );
  }

  @Delete('credentials/:credentialsIdentity')
  @HttpCode(204)
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary:
      'Delete credentials; refused while they are primary and the account has clusters. Deleting the primary promotes the newest remaining credentials',
    description:
      'Deletes the credentials. Refused with 409 while they are the primary credentials of an account that has clusters, or ' +
      'while a cluster uses them. Deleting the primary credentials of an account without clusters makes the newest remaining ' +
      'credentials primary.',
    errors: '404 when the account or the credentials are not found.',
  })
  @ApiParam({ name: 'credentialsIdentity', format: 'uuid' })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiStandardErrors({ conflict: 'The credentials are primary and the account has clusters, or a cluster uses them' })
  async delete(
    @OrgContext() ctx: OrganisationContext,
    @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string,
    @Param('credentialsIdentity', uuidParam('credentialsIdentity')) credentialsIdentity: string,
  ): Promise<void> {
    await this.credentials.delete(ctx.organisation, id, credentialsIdentity);
  }
}
