import { Global, Module } from '@nestjs/common';
import { AuditEventSink } from '../audit/audit-event-sink';
import { WebhookOutbox } from './webhook-outbox';

/**
 * The webhook outbox, for every module that emits events (alerts, and the audit layer through its AuditEventSink
 * port: an organisation's audit entry writes its webhook events in the same statement).
 */
@Global()
@Module({
  providers: [WebhookOutbox, { provide: AuditEventSink, useExisting: WebhookOutbox }],
  exports: [WebhookOutbox, AuditEventSink],
})
export class WebhookOutboxModule {}
