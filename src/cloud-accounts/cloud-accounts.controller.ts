import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Patch, Post, Query } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ValidationFailedException } from '../common/errors';
import { ApiPageResponse } from '../common/paging';
import { CloudAccountsService } from './cloud-accounts.service';
import {
  CloudAccountListQuery,
  CloudAccountResponse,
  CreateCloudAccountRequest,
  UpdateCloudAccountRequest,
} from './dto/cloud-account.dto';

/** A uuid path parameter; a malformed one is 400 naming the parameter. */
export const uuidParam = (name: string) =>
  new ParseUUIDPipe({ exceptionFactory: () => ValidationFailedException.forField(name, `${name} must be a UUID`) });

@ApiTags('Cloud accounts')
@ApiParam({ name: 'organisationSlug', example: 'acme' })
@Controller('api/v1/orgs/:organisationSlug/cloud-accounts')
export class CloudAccountsController {
  constructor(private readonly accounts: CloudAccountsService) {}

  @Get()
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'List the cloud accounts of the organisation (page form B), optionally filtered',
    description:
      '`display-name` keeps the accounts whose display name contains the text (case-insensitive); `cloud-provider-slug` keeps ' +
      'those of one provider.',
  })
  @ApiPageResponse(CloudAccountResponse, { form: 'B', sortable: ['displayName', 'enabled', 'createdAt', 'modifiedAt'] })
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext, @Query() query: CloudAccountListQuery) {
    return this.accounts.list(ctx.organisation, query);
  }

  @Post()
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: 'Create a cloud account from a cloud profile of the catalog',
    description:
      'Creates a cloud account from an enabled cloud profile of the catalog (its identity or slug), which decides the ' +
      'provider. A profile that is unknown, disabled, or of a provider not available to the organisation is 400. The account ' +
      'starts without credentials: add them with the credentials POST of its platform.',
  })
  @ApiOkResponse({ type: CloudAccountResponse })
  @ApiStandardErrors({ notFound: false })
  create(@OrgContext() ctx: OrganisationContext, @Body() body: CreateCloudAccountRequest) {
    return this.accounts.create(ctx.organisation, body);
  }

  @Get(':cloudAccountIdentity')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'Get one cloud account',
    description: 'One cloud account with its provider, enabled flag and primary credentials (no secrets).',
    errors: '404 when the account is not in the organisation.',
  })
  @ApiParam({ name: 'cloudAccountIdentity', format: 'uuid' })
  @ApiOkResponse({ type: CloudAccountResponse })
  @ApiStandardErrors()
  get(@OrgContext() ctx: OrganisationContext, @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string) {
    return this.accounts.get(ctx.organisation, id);
  }

  @Patch(':cloudAccountIdentity')
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: 'Change the display name, enable or disable, or choose the primary credentials',
    description:
      'Changes the display name or the enabled flag, or makes other credentials of the account primary ' +
      '(`primaryCloudCredentials`, which must be credentials of this account, else 400). Only the given fields change; ' +
      'changes are audited.',
    errors: '404 when the account is not in the organisation.',
  })
  @ApiParam({ name: 'cloudAccountIdentity', format: 'uuid' })
  @ApiOkResponse({ type: CloudAccountResponse })
  @ApiStandardErrors()
  update(
    @OrgContext() ctx: OrganisationContext,
    @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string,
    @Body() body: UpdateCloudAccountRequest,
  ) {
    return this.accounts.update(ctx.organisation, id, body);
  }

  @Delete(':cloudAccountIdentity')
  @HttpCode(204)
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: 'Delete a cloud account and its credentials; refused while a cluster uses it or one of its clusters was deleted less than 24 hours ago',
    description:
      'Deletes the cloud account and its credentials. Refused with 409 while a cluster that is not deleted uses it, and for ' +
      '24 hours after the last of its clusters was deleted (the message says from when it can be deleted).',
    errors: '404 when the account is not in the organisation.',
  })
  @ApiParam({ name: 'cloudAccountIdentity', format: 'uuid' })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiStandardErrors({ conflict: 'A cluster uses the account, or used it within the last 24 hours; the message says when deletion becomes possible' })
  async delete(
    @OrgContext() ctx: OrganisationContext,
    @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string,
  ): Promise<void> {
    await this.accounts.delete(ctx.organisation, id);
  }
}
