import { Module } from '@nestjs/common';
import { AuditEventsController } from './audit-events.controller';
import { AuditEventsService } from './audit-events.service';

/** Read side of the audit trail (the write side is the global AuditModule). */
@Module({ controllers: [AuditEventsController], providers: [AuditEventsService] })
export class AuditEventsModule {}
