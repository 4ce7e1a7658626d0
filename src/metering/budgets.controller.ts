import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse, Page, PageQueryDto } from '../common/paging';
import { RequireOrgRole } from '../common/route-access';
import { OrgContext, OrganisationContext } from '../identity/organisation-context';
import { BUDGET_SORTABLE, BudgetsService } from './budgets.service';
import { BudgetResponse, CreateBudgetRequest, UpdateBudgetRequest } from './dto/budget.dto';

const BUDGET_ID = { name: 'budgetIdentity', format: 'uuid' };

/** Monthly budgets of an organisation or one of its environments (docs/metering.md). */
@ApiTags('Usage and statements')
@Controller('api/v1/orgs/:organisationSlug/budgets')
@ApiParam({ name: 'organisationSlug' })
export class BudgetsController {
  constructor(private readonly budgets: BudgetsService) {}

  @Get()
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: "The organisation's budgets (page form A, by name)",
    description: 'Every budget with its actual and forecast cost this month and the thresholds it crossed this month.',
  })
  @ApiPageResponse(BudgetResponse, { form: 'A', sortable: [...BUDGET_SORTABLE], defaultOrder: 'name' })
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext, @Query() query: PageQueryDto): Promise<Page<BudgetResponse>> {
    return this.budgets.list(ctx.organisation, query);
  }

  @Post()
  @HttpCode(200)
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: 'Add a monthly budget for the organisation or an environment (audited BUDGET_CREATED)',
    description:
      'A monthly amount in the price book\'s currency with thresholds in percent of the actual or the forecast cost. Each ' +
      'threshold crossed in a month is reported once in that month: a BUDGET_THRESHOLD_CROSSED webhook event and activity ' +
      'entry. Audited.',
    errors: '400 when the environment does not exist, the currency is not the price book\'s, or a threshold is listed twice. 409 when the name is taken.',
  })
  @ApiOkResponse({ type: BudgetResponse })
  @ApiStandardErrors({ notFound: false, conflict: 'A budget of that name exists' })
  create(@OrgContext() ctx: OrganisationContext, @Body() body: CreateBudgetRequest): Promise<BudgetResponse> {
    return this.budgets.create(ctx.organisation, body);
  }

  @Get(':budgetIdentity')
  @RequireOrgRole('VIEWER')
  @ApiDoc({ summary: 'One budget with its costs this month', description: 'The budget, its actual and forecast cost this month and the thresholds crossed.', errors: '404 when the budget does not exist.' })
  @ApiParam(BUDGET_ID)
  @ApiOkResponse({ type: BudgetResponse })
  @ApiStandardErrors({ badRequest: false })
  get(@OrgContext() ctx: OrganisationContext, @Param('budgetIdentity') identity: string): Promise<BudgetResponse> {
    return this.budgets.get(ctx.organisation, identity);
  }

  @Patch(':budgetIdentity')
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: 'Change a budget (audited BUDGET_UPDATED)',
    description: 'Changes the name, the amount or the thresholds; thresholds crossed this month stay reported. Audited.',
    errors: '404 when the budget does not exist. 409 when the new name is taken.',
  })
  @ApiParam(BUDGET_ID)
  @ApiOkResponse({ type: BudgetResponse })
  @ApiStandardErrors({ conflict: 'A budget of that name exists' })
  update(@OrgContext() ctx: OrganisationContext, @Param('budgetIdentity') identity: string, @Body() body: UpdateBudgetRequest): Promise<BudgetResponse> {
    return this.budgets.update(ctx.organisation, identity, body);
  }

  @Delete(':budgetIdentity')
  @HttpCode(204)
  @RequireOrgRole('ADMIN')
  @ApiDoc({ summary: 'Delete a budget (audited BUDGET_DELETED)', description: 'Deletes the budget and what it reported. Audited.', errors: '404 when the budget does not exist.' })
  @ApiParam(BUDGET_ID)
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiStandardErrors({ badRequest: false })
  async remove(@OrgContext() ctx: OrganisationContext, @Param('budgetIdentity') identity: string): Promise<void> {
    await this.budgets.remove(ctx.organisation, identity);
  }
}
