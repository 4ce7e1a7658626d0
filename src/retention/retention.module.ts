import { Module } from '@nestjs/common';
import { RetentionService } from './retention.service';

/** Deletes expired audit, activity, resolved-alert and webhook outbox rows in batches (docs/adr/0067-retention.md). */
@Module({ providers: [RetentionService], exports: [RetentionService] })
export class RetentionModule {}
