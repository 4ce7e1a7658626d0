import { Controller, Get, Param, Query, StreamableFile } from '@nestjs/common';
import { ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, Page } from '../common/paging';
import { RequireOrgRole } from '../common/route-access';
import { OrgContext, OrganisationContext } from '../identity/organisation-context';
import { StatementListQuery, StatementQuery, StatementResponse, StatementSummary, UsageQuery, UsageResponse } from './dto/usage.dto';
import { StatementsService } from './statements.service';
import { UsageExportQuery } from './dto/usage-export.dto';
import { focusResponseContent } from './focus';
import { UsageExportService } from './usage-export.service';
import { UsageService } from './usage.service';

/** Usage and monthly statements of an organisation (docs/metering.md). */
@ApiTags('Usage and statements')
@Controller('api/v1/orgs/:organisationSlug')
@ApiParam({ name: 'organisationSlug' })
export class UsageController {
  constructor(
    private readonly usage: UsageService,
    private readonly statements: StatementsService,
    private readonly exports: UsageExportService,
  ) {}

  @Get('usage')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: "The organisation's usage and its cost over a window, grouped",
    description:
      'Control-plane hours and node hours from the usage ledger (exact to the second, deleted clusters included) between ' +
      '`from` and `to` (at most now), one group per environment, cluster, node pool, node type or UTC day, priced with ' +
      "the price book: what the organisation pays (its type's price, else the list price) and the list cost, each " +
      'rounded to cents once per group; usage no price covers is reported as unpriced hours.',
    errors: '400 when to is not after from, or the window is longer than 366 days.',
  })
  @ApiOkResponse({ type: UsageResponse })
  @ApiStandardErrors({ notFound: false })
  get(@OrgContext() ctx: OrganisationContext, @Query() query: UsageQuery): Promise<UsageResponse> {
    return this.usage.usage(ctx.organisation, query);
  }

  @Get('usage/export')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: "The organisation's charges of a month as a FOCUS 1.1 export (CSV or JSON)",
    description:
      'One FOCUS row per charge (statement line) of the calendar month (UTC): the closed lines, correction lines ' +
      'included (ChargeClass Correction), or while the period is open the lines computed from the ledger as of now. ' +
      'Streamed as it is read, in the FinOps Open Cost and Usage Specification columns (docs/metering.md).',
    errors: '400 when period or format is missing or malformed. 404 when the period has not begun.',
  })
  @ApiOkResponse({ description: 'The FOCUS rows', content: focusResponseContent() as never })
  @ApiStandardErrors()
  export(@OrgContext() ctx: OrganisationContext, @Query() query: UsageExportQuery): Promise<StreamableFile> {
    return this.exports.export(ctx.organisation, query.period, query.format);
  }

  @Get('statements')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: "The organisation's monthly statements (page form A, latest period first)",
    description:
      'One statement per calendar month (UTC) from the month of the first usage to the current one, with its status ' +
      '(OPEN until it closes an hour after the month ends, then CLOSED) and its totals.',
  })
  @ApiPageResponse(StatementSummary, { form: 'A', sortable: ['period'], defaultOrder: 'period descending' })
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext, @Query() query: StatementListQuery): Promise<Page<StatementSummary>> {
    return this.statements.list(ctx.organisation, query);
  }

  @Get('statements/:period')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: 'One monthly statement with its line items',
    description:
      'The line items of a calendar month (UTC): one per cluster resource (control plane or node pool), SKU and price, ' +
      'with quantity, unit prices and costs. An OPEN period is computed from the ledger as of now; a CLOSED one is what ' +
      'was written when it closed, byte for byte, plus correction lines (chargeClass Correction) for any later change. ' +
      'Lines come in pages of `size` (default and maximum 500; `page` is zero-based): `lineCount` and `totals` are the ' +
      "whole statement's, so a statement of up to 500 lines comes whole. The FOCUS export (`/usage/export`) streams a " +
      'whole month.',
    errors: '404 when the period is not a month (YYYY-MM) or has not begun.',
  })
  @ApiParam({ name: 'period', example: '2026-11', description: 'A calendar month in UTC, YYYY-MM' })
  @ApiOkResponse({ type: StatementResponse })
  @ApiStandardErrors({ badRequest: false })
  getStatement(@OrgContext() ctx: OrganisationContext, @Param('period') period: string, @Query() query: StatementQuery): Promise<StatementResponse> {
    return this.statements.get(ctx.organisation, period, query);
  }
}
