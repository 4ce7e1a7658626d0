import { Module } from '@nestjs/common';
import { PriceBookService } from './price-book.service';
import { StatementCloser } from './statement-closer.service';
import { StatementsService } from './statements.service';
import { UsageController } from './usage.controller';
import { UsageExportService } from './usage-export.service';
import { UsageService } from './usage.service';

/**
 * Usage metering and showback (issue 41, docs/metering.md): the usage ledger the database keeps (migration
 * UsageLedger, ADR 0200), the price book (ADR 0201), usage, monthly statements and the job that closes them.
 */
@Module({
  controllers: [UsageController],
  providers: [PriceBookService, UsageService, StatementsService, StatementCloser, UsageExportService],
  exports: [PriceBookService, UsageService, StatementsService, StatementCloser, UsageExportService],
})
export class MeteringModule {}
