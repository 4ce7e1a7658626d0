import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBody, ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, Page, PageQueryDto } from '../common/paging';
import { PlatformAdminOnly } from '../common/route-access';
import { CreatePriceBookEntryRequest, PriceBookEntryResponse, UpdatePriceBookEntryRequest } from '../metering/dto/price-book.dto';
import { PRICE_BOOK_SORTABLE, PriceBookService } from '../metering/price-book.service';

const ENTRY_ID = { name: 'entryIdentity', format: 'uuid' };

/** The price book usage is priced with (docs/metering.md), for platform administrators (everyone else 403). */
@ApiTags('Platform administration')
@PlatformAdminOnly()
@Controller('admin/v1/price-book')
export class PriceBookAdminController {
  constructor(private readonly prices: PriceBookService) {}

  @Get()
  @ApiDoc({
    summary: 'Every price book entry (page form A, latest effectiveFrom first)',
    description:
      'Every price of the price book: per cloud provider and region, an hour of a control plane (with or without high ' +
      'availability) or of one node of a node type, with its list price, the price each organisation type pays, when it ' +
      'applies, and whether it is scheduled, in effect or ended.',
  })
  @ApiPageResponse(PriceBookEntryResponse, { form: 'A', sortable: [...PRICE_BOOK_SORTABLE], defaultOrder: 'effectiveFrom descending' })
  @ApiStandardErrors({ notFound: false })
  list(@Query() query: PageQueryDto): Promise<Page<PriceBookEntryResponse>> {
    return this.prices.list(query);
  }

  @Post()
  @HttpCode(200)
  @ApiDoc({
    summary: 'Add a price from now or a later time (audited PRICE_BOOK_ENTRY_CREATED)',
    description:
      'Adds a price for a control plane (`highlyAvailable` required) or a node type (`nodeType` required) in a region of a ' +
      'cloud provider of the catalog, applying from `effectiveFrom` (now when left out, never in the past) until the next ' +
      'entry of the same key begins or `effectiveTo`. Prices are decimal strings (never floating point). Audited.',
    errors:
      '400 when effectiveFrom or effectiveTo is in the past, a field does not fit the kind, or the provider, region or node ' +
      'type is not in the catalog. 409 when an entry of the same key begins at the same time, or the currency differs from ' +
      "the price book's.",
  })
  @ApiOkResponse({ type: PriceBookEntryResponse })
  @ApiStandardErrors({ notFound: false, conflict: 'An entry of the same key begins at the same time, or another currency' })
  create(@Body() body: CreatePriceBookEntryRequest): Promise<PriceBookEntryResponse> {
    return this.prices.create(body);
  }

  @Get(':entryIdentity')
  @ApiDoc({ summary: 'One price book entry', description: 'The entry with when it applies and its state.', errors: '404 when the entry does not exist.' })
  @ApiParam(ENTRY_ID)
  @ApiOkResponse({ type: PriceBookEntryResponse })
  @ApiStandardErrors({ badRequest: false })
  get(@Param('entryIdentity') identity: string): Promise<PriceBookEntryResponse> {
    return this.prices.get(identity);
  }

  @Patch(':entryIdentity')
  @ApiDoc({
    summary: 'Change a scheduled entry, or close one in effect (audited PRICE_BOOK_ENTRY_UPDATED)',
    description:
      'An entry that has not begun accepts new prices and times (never in the past). An entry in effect accepts only ' +
      '`effectiveTo`, now or later, which closes it; its prices never change, so usage already priced keeps its price. ' +
      'A change that changes nothing answers 200 and records nothing. Audited.',
    errors:
      '404 when the entry does not exist. 400 when a time is in the past or effectiveTo is not after effectiveFrom. 409 ' +
      'when the entry has begun and the change is more than effectiveTo, the entry has ended, or another entry of the same ' +
      'key begins at the new effectiveFrom.',
  })
  @ApiParam(ENTRY_ID)
  // The path example is an entry in effect, which accepts only effectiveTo: the pre-filled body closes it.
  @ApiBody({ type: UpdatePriceBookEntryRequest, examples: { close: { summary: 'Close an entry in effect', value: { effectiveTo: '2027-01-01T00:00:00Z' } } } })
  @ApiOkResponse({ type: PriceBookEntryResponse })
  @ApiStandardErrors({ conflict: 'The entry has begun (only effectiveTo may change) or ended, or the new effectiveFrom is taken' })
  update(@Param('entryIdentity') identity: string, @Body() body: UpdatePriceBookEntryRequest): Promise<PriceBookEntryResponse> {
    return this.prices.update(identity, body);
  }

  @Delete(':entryIdentity')
  @HttpCode(204)
  @ApiDoc({
    summary: 'Delete an entry that has not begun (audited PRICE_BOOK_ENTRY_DELETED)',
    description: 'Deletes a scheduled entry. An entry that has begun stays (close it with effectiveTo). Audited.',
    errors: '404 when the entry does not exist. 409 when it has begun.',
  })
  @ApiParam(ENTRY_ID)
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiStandardErrors({ badRequest: false, conflict: 'The entry has begun' })
  async remove(@Param('entryIdentity') identity: string): Promise<void> {
    await this.prices.remove(identity);
  }
}
