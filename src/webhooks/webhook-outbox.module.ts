import { Global, Module } from '@nestjs/common';
import { WebhookOutbox } from './webhook-outbox';

/**
 * The webhook outbox, for every module that emits events: alerts, and the audit layer through its AuditEventSink
 * port (bound to the outbox in src/app.module.ts: an organisation's audit entry writes its webhook events in the same
 * statement).
 */
@Global()
@Module({ providers: [WebhookOutbox], exports: [WebhookOutbox] })
export class WebhookOutboxModule {}
