import { Module } from '@nestjs/common';
import { WebhookDeliveryClaims } from './webhook-delivery-claims';
import { WebhookDeliveryRecorder } from './webhook-delivery-recorder';
import { WebhookDeliveryWorker } from './webhook-delivery.worker';
import { WebhookSender } from './webhook-sender';
import { WebhooksController } from './webhooks.controller';
import { WebhooksService } from './webhooks.service';

/** Webhook subscriptions, their deliveries, and the delivery worker (the outbox writer: WebhookOutboxModule). */
@Module({
  controllers: [WebhooksController],
  providers: [WebhooksService, WebhookDeliveryClaims, WebhookSender, WebhookDeliveryRecorder, WebhookDeliveryWorker],
  exports: [WebhookDeliveryWorker, WebhooksService],
})
export class WebhooksModule {}
