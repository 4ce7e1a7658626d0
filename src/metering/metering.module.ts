import { Module } from '@nestjs/common';
import { BudgetsController } from './budgets.controller';
import { BudgetsService } from './budgets.service';
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
  controllers: [UsageController, BudgetsController],
  providers: [PriceBookService, UsageService, StatementsService, StatementCloser, UsageExportService, BudgetsService],
  exports: [PriceBookService, UsageService, StatementsService, StatementCloser, UsageExportService, BudgetsService],
})
export class MeteringModule {}
