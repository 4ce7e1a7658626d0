import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { OrganisationContext, OrgContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { CurrentPrincipal, Principal } from '../identity/principal';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import {
  CreateWebhookRequest,
  MAX_PINGS_PER_SUBSCRIPTION,
  MAX_WEBHOOKS_PER_ORGANISATION,
  PING_WINDOW_SECONDS,
  UpdateWebhookRequest,
  WebhookDeliveryResponse,
  WebhookResponse,
  WebhookWithSecretResponse,
} from './dto/webhook.dto';
import { WebhooksService } from './webhooks.service';


/**
 * Signed webhooks: events of the organisation delivered to an outside receiver as CloudEvents 1.0 JSON,
 * signed per Standard Webhooks, at least once (see docs/webhooks.md).
 */
@ApiTags('Webhooks')
@ApiParam({ name: 'organisationSlug' })
@Controller('api/v1/orgs/:organisationSlug/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Get()
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: "List the organisation's webhook subscriptions (ADMIN)",
    description: 'Oldest first; secrets are never shown here.',
  })
  @ApiOkResponse({ type: [WebhookResponse] })
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext): Promise<WebhookResponse[]> {
    return this.webhooks.list(ctx.organisation);
  }

  @Post()
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: 'Create a webhook subscription (ADMIN; audited WEBHOOK_CREATED)',
    description:
      'The answer carries the signing secret, once. Events are delivered as CloudEvents 1.0 JSON ' +
      '(`content-type: application/cloudevents+json`) with the Standard Webhooks headers `webhook-id`, `webhook-timestamp` and ' +
      '`webhook-signature` (`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`). Delivery is at least once: receivers ' +
      'de-duplicate by `webhook-id`; order is best-effort. A delivery that does not get a 2xx is retried after about ' +
      '5 s, 1 min, 5 min, 30 min, 2 h, 5 h and 10 h (each +-20 %), for up to 24 h; a subscription whose deliveries fail for 3 days ' +
      `is disabled. The URL must pass the outbound policy (no internal addresses). At most ${MAX_WEBHOOKS_PER_ORGANISATION} per organisation.`,
  })
  @ApiOkResponse({ type: WebhookWithSecretResponse })
  @ApiStandardErrors({ notFound: false, conflict: `The organisation already has ${MAX_WEBHOOKS_PER_ORGANISATION} webhooks` })
  create(
    @OrgContext() ctx: OrganisationContext,
    @Body() body: CreateWebhookRequest,
    @CurrentPrincipal() principal: Principal,
  ): Promise<WebhookWithSecretResponse> {
    return this.webhooks.create(ctx.organisation, body, principal.user.username);
  }

  @Get(':webhookIdentity')
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: 'Get one webhook subscription (ADMIN)',
    description: 'One webhook subscription: URL, event types, enabled flag and delivery health; the signing secret is never answered here.',
    errors: '404 when the subscription is not in the organisation.',
  })
  @ApiParam({ name: 'webhookIdentity' })
  @ApiOkResponse({ type: WebhookResponse })
  @ApiStandardErrors({ badRequest: false })
  get(@OrgContext() ctx: OrganisationContext, @Param('webhookIdentity') identity: string): Promise<WebhookResponse> {
    return this.webhooks.get(ctx.organisation, identity);
  }

  @Patch(':webhookIdentity')
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: 'Change a webhook subscription (ADMIN; audited WEBHOOK_UPDATED)',
    description: '`enabled: true` re-enables a subscription the service disabled after 3 days of failures. A new URL passes the outbound policy.',
  })
  @ApiParam({ name: 'webhookIdentity' })
  @ApiOkResponse({ type: WebhookResponse })
  @ApiStandardErrors()
  update(@OrgContext() ctx: OrganisationContext, @Param('webhookIdentity') identity: string, @Body() body: UpdateWebhookRequest): Promise<WebhookResponse> {
    return this.webhooks.update(ctx.organisation, identity, body);
  }

  @Delete(':webhookIdentity')
  @HttpCode(204)
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: 'Delete a webhook subscription and its pending deliveries (ADMIN; audited WEBHOOK_DELETED)',
    description: 'Deletes the webhook subscription and its pending deliveries; nothing more is sent to its URL. Audited.',
    errors: '404 when the subscription is not in the organisation.',
  })
  @ApiParam({ name: 'webhookIdentity' })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiStandardErrors({ badRequest: false })
  async remove(@OrgContext() ctx: OrganisationContext, @Param('webhookIdentity') identity: string): Promise<void> {
    await this.webhooks.remove(ctx.organisation, identity);
  }

  @Post(':webhookIdentity/rotate-secret')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: 'Rotate the signing secret (ADMIN; audited WEBHOOK_SECRET_ROTATED)',
    description:
      'Answers the new secret, once. For 24 h deliveries carry two signatures in `webhook-signature` (new and previous, ' +
      'space-separated), so a receiver can switch secrets without losing events.',
  })
  @ApiParam({ name: 'webhookIdentity' })
  @ApiOkResponse({ type: WebhookWithSecretResponse })
  @ApiStandardErrors({ badRequest: false })
  rotate(@OrgContext() ctx: OrganisationContext, @Param('webhookIdentity') identity: string): Promise<WebhookWithSecretResponse> {
    return this.webhooks.rotateSecret(ctx.organisation, identity);
  }

  @Post(':webhookIdentity/ping')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: 'Send a WEBHOOK_PING event to this subscription only (ADMIN; audited WEBHOOK_PINGED)',
    description:
      'Answers the queued delivery; follow it in the deliveries list. ' +
      `At most ${MAX_PINGS_PER_SUBSCRIPTION} pings per subscription within ${PING_WINDOW_SECONDS} s (over all replicas).`,
    errors:
      '409 when the subscription is disabled. ' +
      `429 after ${MAX_PINGS_PER_SUBSCRIPTION} pings to the subscription within ${PING_WINDOW_SECONDS} s; \`Retry-After\` says when the next is allowed.`,
  })
  @ApiParam({ name: 'webhookIdentity' })
  @ApiOkResponse({ type: WebhookDeliveryResponse })
  @ApiStandardErrors({
    badRequest: false,
    conflict: 'The subscription is disabled',
    tooManyRequests: `${MAX_PINGS_PER_SUBSCRIPTION} pings to this subscription within ${PING_WINDOW_SECONDS} s`,
  })
  ping(
    @OrgContext() ctx: OrganisationContext,
    @Param('webhookIdentity') identity: string,
    @CurrentPrincipal() principal: Principal,
  ): Promise<WebhookDeliveryResponse> {
    return this.webhooks.ping(ctx.organisation, identity, principal.user.username);
  }

  @Get(':webhookIdentity/deliveries')
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: 'Deliveries of a webhook subscription (ADMIN); newest first; sortable by createdAt, status, eventType, attempts',
    description:
      'The deliveries of the subscription with status, attempts, last response code and next attempt. A failed attempt is ' +
      'retried after 5 s, 1 min, 5 min, 30 min, 2 h, 5 h and 10 h (at most 8 attempts) before the delivery is FAILED; it can ' +
      'be sent again by hand (redeliver).',
    errors: '404 when the subscription is not in the organisation.',
  })
  @ApiParam({ name: 'webhookIdentity' })
  @ApiPageResponse(WebhookDeliveryResponse, { form: 'A', sortable: ['createdAt', 'status', 'eventType', 'attempts'], defaultOrder: 'createdAt descending (newest first)' }, 'OK')
  @ApiStandardErrors()
  deliveries(
    @OrgContext() ctx: OrganisationContext,
    @Param('webhookIdentity') identity: string,
    @Query() query: PageQueryDto,
  ) {
    return this.webhooks.deliveries(ctx.organisation, identity, query);
  }

  @Post(':webhookIdentity/deliveries/:deliveryIdentity/redeliver')
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: 'Deliver an event again (ADMIN; audited WEBHOOK_DELIVERY_REDELIVERED)',
    description: 'A new delivery of the same event (same `webhook-id`), due now.',
    errors: '409 while the delivery is still pending or the subscription is disabled.',
  })
  @ApiParam({ name: 'webhookIdentity' })
  @ApiParam({ name: 'deliveryIdentity' })
  @ApiOkResponse({ type: WebhookDeliveryResponse })
  @ApiStandardErrors({ badRequest: false, conflict: 'The delivery is still pending, or the subscription is disabled' })
  redeliver(
    @OrgContext() ctx: OrganisationContext,
    @Param('webhookIdentity') identity: string,
    @Param('deliveryIdentity') deliveryIdentity: string,
  ): Promise<WebhookDeliveryResponse> {
    return this.webhooks.redeliver(ctx.organisation, identity, deliveryIdentity);
  }
}
