import { Global, Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { ActivityService } from '../activity/activity.service';
import { WebhookOutbox } from '../webhooks/webhook-outbox';
import { AuditRecorder } from './audit-recorder';
import { AuditedTransaction } from './audited-transaction';
import { AuditInterceptor } from './audit.interceptor';
import { AuditService } from './audit.service';

/** The audit mechanism every module uses: record what changed; the interceptor writes it. */
@Global()
@Module({
  providers: [AuditRecorder, AuditService, AuditedTransaction, ActivityService, WebhookOutbox, { provide: APP_INTERCEPTOR, useClass: AuditInterceptor }],
  exports: [AuditRecorder, AuditService, AuditedTransaction, ActivityService, WebhookOutbox],
})
export class AuditModule {}
