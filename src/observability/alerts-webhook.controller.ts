import { Body, Controller, Headers, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { Public } from '../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { AlertsService, presentedWebhookToken } from './alerts.service';
import { AlertManagerWebhookDto, WebhookReceivedResponse } from './dto/alerts.dto';

@ApiTags('Observability')
@ApiStandardErrors({ notFound: false })
@Controller('api/v1/observability')
export class AlertsWebhookController {
  constructor(private readonly alerts: AlertsService) {}

  @Post(':tenantSlug/alerts/webhook')
  @Public()
  @HttpCode(200)
  // The tenant's own token, in either header (schemes declared in openapi-polish.ts).
  @ApiSecurity('alertWebhookTokenHeader')
  @ApiSecurity('alertWebhookToken')
  @ApiDoc({
    summary: "Receive alerts for a tenant (the metrics stack's alert-manager webhook)",
    description:
      'Authenticated by the tenant webhook token (`Authorization: Bearer <token>` or `X-Alert-Token: <token>`), not by a user ' +
      'credential; unknown or wrong token is 401. Alerts are stored by (tenant, fingerprint): repeating a call changes nothing, ' +
      'and a resolved alert updates the stored one (status resolved, endsAt).',
  })
  @ApiBody({ type: AlertManagerWebhookDto })
  @ApiOkResponse({ type: WebhookReceivedResponse })
  receive(
    @Param('tenantSlug') tenantSlug: string,
    @Headers() headers: Record<string, string | string[] | undefined>,
    @Body() body: unknown,
  ) {
    // The body is validated after the token is checked, so an unauthenticated caller learns nothing from 400s.
    return this.alerts.receive(tenantSlug, presentedWebhookToken(headers), body);
  }
}
