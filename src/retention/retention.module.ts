import { Module } from '@nestjs/common';
import { RetentionService } from './retention.service';

/** Deletes expired audit, activity, resolved-alert and webhook outbox rows in batches (docs/decisions.md, "Retention"). */
@Module({ providers: [RetentionService], exports: [RetentionService] })
export class RetentionModule {}
