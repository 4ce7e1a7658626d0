import { Global, Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { ActivityService } from '../activity/activity.service';
import { AuditRecorder } from './audit-recorder';
import { AuditedTransaction, AuditedTransactionHooks } from './audited-transaction';
import { AuditInterceptor } from './audit.interceptor';
import { AuditService } from './audit.service';

/** The audit mechanism every module uses: record what changed; the interceptor writes it. */
@Global()
@Module({
  providers: [AuditRecorder, AuditService, AuditedTransaction, AuditedTransactionHooks, ActivityService, { provide: APP_INTERCEPTOR, useClass: AuditInterceptor }],
  exports: [AuditRecorder, AuditService, AuditedTransaction, AuditedTransactionHooks, ActivityService],
})
export class AuditModule {}
