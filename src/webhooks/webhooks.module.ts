import { Module } from '@nestjs/common';
import { ObservabilityModule } from '../observability/observability.module';
import { WebhookDeliveryWorker } from './webhook-delivery.worker';
import { WebhooksController } from './webhooks.controller';
import { WebhooksService } from './webhooks.service';

/** Webhook subscriptions, their deliveries, and the delivery worker (the outbox writer lives in AuditModule). */
@Module({
  imports: [ObservabilityModule],
  controllers: [WebhooksController],
  providers: [WebhooksService, WebhookDeliveryWorker],
  exports: [WebhookDeliveryWorker],
})
export class WebhooksModule {}
