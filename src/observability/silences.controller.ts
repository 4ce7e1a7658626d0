import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrganisationContext, OrgContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { CurrentPrincipal, Principal } from '../identity/principal';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiExecutorErrors } from '../executor/executor-docs';

import { CreateSilenceRequest, SilenceResponse } from './dto/silence.dto';
import { SilencesService } from './silences.service';

/** Alert silences of a monitoring tenant, with Alertmanager v2 semantics and the original client's shapes. */
@ApiTags('Observability')
@ApiParam({ name: 'organisationSlug' })
@ApiParam({ name: 'tenantSlug' })
@Controller('api/v1/orgs/:organisationSlug/observability/:tenantSlug/silences')
export class SilencesController {
  constructor(private readonly silences: SilencesService) {}

  @Get()
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: "List the tenant's alert silences (pending, active and expired), newest first",
    description: 'An active silence mutes the alerts all its matchers hold for: they show as `suppressed` in the alert lists and do not count as firing.',
  })
  @ApiOkResponse({ type: [SilenceResponse] })
  @ApiStandardErrors()
  list(@OrgContext() ctx: OrganisationContext, @Param('tenantSlug') tenantSlug: string): Promise<SilenceResponse[]> {
    return this.silences.list(ctx.organisation, tenantSlug);
  }

  @Post()
  @ApiExecutorErrors()
  @HttpCode(200)
  @RequireOrgRole('MEMBER')
  @ApiDoc({
    summary: 'Create a silence (audited ALERT_SILENCE_CREATED)',
    description:
      'At least one matcher (at most 20), and at least one that does not match the empty string (Alertmanager\'s rule: a ' +
      'silence may not match every alert); regular expressions are RE2 (Alertmanager\'s syntax, linear-time matching) and ' +
      'match the whole label value; endsAt after startsAt ' +
      'and in the future; at most 100 silences per tenant that are not expired (409 beyond).',
  })
  @ApiOkResponse({ type: SilenceResponse })
  @ApiStandardErrors({ conflict: 'The tenant already has 100 silences that are not expired' })
  create(
    @OrgContext() ctx: OrganisationContext,
    @Param('tenantSlug') tenantSlug: string,
    @Body() body: CreateSilenceRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<SilenceResponse> {
    return this.silences.create(ctx.organisation, tenantSlug, body, principal.user.username);
  }

  @Delete(':silenceId')
  @HttpCode(204)
  @RequireOrgRole('MEMBER')
  @ApiDoc({
    summary: 'Expire a pending or active silence now (audited ALERT_SILENCE_EXPIRED)',
    description:
      'Ends a pending or active silence now: its endsAt becomes the current time and the alerts it muted count as firing ' +
      'again. The silence stays in the list as expired.',
    errors: '404 when the silence is not in the tenant; 409 when it has already expired.',
  })
  @ApiParam({ name: 'silenceId', format: 'uuid' })
  @ApiNoContentResponse({ description: 'Expired' })
  @ApiStandardErrors({ conflict: 'The silence has already expired' })
  async expire(@OrgContext() ctx: OrganisationContext, @Param('tenantSlug') tenantSlug: string, @Param('silenceId') silenceId: string): Promise<void> {
    await this.silences.expire(ctx.organisation, tenantSlug, silenceId);
  }
}
