import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Patch, Post, Query } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext, RequireOrgRole } from '../auth/organisation-access';
import { ApiStandardErrors } from '../common/api-docs';
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
  @ApiOperation({ summary: 'List the cloud accounts of the organisation (page form B), optionally filtered' })
  @ApiPageResponse(CloudAccountResponse, 'B')
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext, @Query() query: CloudAccountListQuery) {
    return this.accounts.list(ctx.organisation, query);
  }

  @Post()
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiOperation({ summary: 'Create a cloud account from a cloud profile of the catalog' })
  @ApiOkResponse({ type: CloudAccountResponse })
  @ApiStandardErrors({ notFound: false })
  create(@OrgContext() ctx: OrganisationContext, @Body() body: CreateCloudAccountRequest) {
    return this.accounts.create(ctx.organisation, body);
  }

  @Get(':cloudAccountIdentity')
  @RequireOrgRole('VIEWER')
  @ApiOperation({ summary: 'Get one cloud account' })
  @ApiParam({ name: 'cloudAccountIdentity', format: 'uuid' })
  @ApiOkResponse({ type: CloudAccountResponse })
  @ApiStandardErrors()
  get(@OrgContext() ctx: OrganisationContext, @Param('cloudAccountIdentity', uuidParam('cloudAccountIdentity')) id: string) {
    return this.accounts.get(ctx.organisation, id);
  }

  @Patch(':cloudAccountIdentity')
  @RequireOrgRole('ADMIN')
  @ApiOperation({ summary: 'Change the display name, enable or disable, or choose the primary credentials' })
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
  @ApiOperation({
    summary: 'Delete a cloud account and its credentials; refused while a cluster uses it or one of its clusters was deleted less than 24 hours ago',
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
