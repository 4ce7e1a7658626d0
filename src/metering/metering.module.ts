import { Module } from '@nestjs/common';
import { PriceBookService } from './price-book.service';

/**
 * Usage metering and showback (issue 41, docs/metering.md): the usage ledger the database keeps (migration
 * UsageLedger, ADR 0200), the price book (ADR 0201), usage, statements, the FOCUS export and budgets.
 */
@Module({
  providers: [PriceBookService],
  exports: [PriceBookService],
})
export class MeteringModule {}
