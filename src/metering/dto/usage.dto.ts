import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsISO8601, IsOptional } from 'class-validator';
import { MAX_PAGE_SIZE, PageQueryDto, toPageSize } from '../../common/paging';

export const USAGE_GROUP_BY = ['environment', 'cluster', 'nodePool', 'nodeType', 'day'] as const;
export type UsageGroupBy = (typeof USAGE_GROUP_BY)[number];
export const USAGE_RESOURCES = ['CONTROL_PLANE', 'NODES'] as const;

export class UsageQuery {
  @ApiPropertyOptional({
    format: 'date-time',
    maxLength: 40,
    example: '2026-11-01T00:00:00Z',
    description: 'Start of the window (inclusive). Left out: the start of the current month (UTC)',
  })
  @IsOptional() @IsISO8601({ strict: true }, { message: 'from must be an ISO 8601 date-time' })
  from?: string;

  @ApiPropertyOptional({
    format: 'date-time',
    maxLength: 40,
    example: '2026-12-01T00:00:00Z',
    description: 'End of the window (exclusive), at most 366 days after from. Left out: now. Usage is counted up to now at most',
  })
  @IsOptional() @IsISO8601({ strict: true }, { message: 'to must be an ISO 8601 date-time' })
  to?: string;

  @ApiPropertyOptional({ enum: USAGE_GROUP_BY, default: 'cluster', description: 'What each group of the answer is: one per value of this dimension' })
  @IsOptional() @IsIn(USAGE_GROUP_BY as unknown as string[], { message: `groupBy must be one of ${USAGE_GROUP_BY.join(', ')}` })
  groupBy?: UsageGroupBy;
}

export class UsageAmounts {
  @ApiProperty({ example: '744.000000', description: 'Control-plane hours (decimal string, 6 places)' }) controlPlaneHours: string;
  @ApiProperty({ example: '1488.000000', description: 'Node hours: hours times nodes (decimal string, 6 places)' }) nodeHours: string;
  @ApiProperty({ example: '208.32', description: 'What the organisation pays: its type\'s prices, else list prices (decimal string, 2 places)' })
  billedCost: string;
  @ApiProperty({ example: '217.25', description: 'At list prices (decimal string, 2 places)' }) listCost: string;
  @ApiProperty({ example: '0.000000', description: 'Resource hours no price covers (not in the costs)' }) unpricedHours: string;
}

export class UsageGroup extends UsageAmounts {
  @ApiProperty({ nullable: true, type: String, example: 'production', description: 'groupBy environment, cluster, nodePool' })
  environmentSlug: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'uuid', example: '3b2f9a4c-1d7e-4c55-8f0a-6e2d9b7c1a34', description: 'groupBy cluster, nodePool' })
  clusterIdentity: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'web', description: 'groupBy cluster, nodePool' }) clusterName: string | null;
  @ApiProperty({ nullable: true, enum: USAGE_RESOURCES, example: 'NODES', description: 'groupBy nodePool, nodeType' })
  resource: (typeof USAGE_RESOURCES)[number] | null;
  @ApiProperty({ nullable: true, type: String, format: 'uuid', example: 'a9d3c2b1-7e6f-4a5b-9c8d-1e2f3a4b5c6d', description: 'groupBy nodePool (null for the control plane)' })
  nodePoolIdentity: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'workers', description: 'groupBy nodePool (null for the control plane)' })
  nodePoolName: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'm5.large', description: 'groupBy nodeType (null for a control plane)' })
  nodeType: string | null;
  @ApiProperty({ nullable: true, type: Boolean, example: null, description: 'groupBy nodeType: for a control plane, whether highly available' })
  highlyAvailable: boolean | null;
  @ApiProperty({ nullable: true, type: String, format: 'date', example: null, description: 'groupBy day (UTC)' }) day: string | null;
}

export class UsageResponse {
  @ApiProperty({ example: 'demo' }) organisation: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-01T00:00:00.000Z' }) from: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-27T14:00:00.000Z', description: 'End of the window, at most now' }) to: string;
  @ApiProperty({ enum: USAGE_GROUP_BY, example: 'cluster' }) groupBy: UsageGroupBy;
  @ApiProperty({ example: 'UTC', description: 'The time zone of days and periods' }) timeZone: string;
  @ApiProperty({ nullable: true, type: String, example: 'EUR', description: 'The price book\'s currency (null: no prices yet)' }) currency: string | null;
  @ApiProperty({ type: [UsageGroup] }) groups: UsageGroup[];
  @ApiProperty({ type: UsageAmounts, description: 'Sums of the groups (the costs: sums of the rounded group costs)' }) total: UsageAmounts;
}

export const STATEMENT_STATUSES = ['OPEN', 'CLOSED'] as const;
export const CHARGE_CLASSES = ['Correction'] as const;

export class StatementLine {
  @ApiProperty({ example: 1, minimum: 1, type: 'integer' }) lineNumber: number;
  @ApiProperty({ nullable: true, enum: CHARGE_CLASSES, example: null, description: "FOCUS ChargeClass: 'Correction' for a line added after the period closed" })
  chargeClass: 'Correction' | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time', example: null, description: 'When a closed line was written (null while open)' })
  recordedAt: string | null;
  @ApiProperty({ enum: USAGE_RESOURCES, example: 'NODES' }) resource: (typeof USAGE_RESOURCES)[number];
  @ApiProperty({ example: 'production' }) environmentSlug: string;
  @ApiProperty({ format: 'uuid', example: '3b2f9a4c-1d7e-4c55-8f0a-6e2d9b7c1a34' }) clusterIdentity: string;
  @ApiProperty({ example: 'web' }) clusterSlug: string;
  @ApiProperty({ example: 'web' }) clusterName: string;
  @ApiProperty({ nullable: true, type: String, format: 'uuid', example: 'a9d3c2b1-7e6f-4a5b-9c8d-1e2f3a4b5c6d' }) nodePoolIdentity: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'workers' }) nodePoolName: string | null;
  @ApiProperty({ example: 'platform_1' }) cloudProvider: string;
  @ApiProperty({ example: 'eu-central-1' }) region: string;
  @ApiProperty({ nullable: true, type: String, example: 'm5.large' }) nodeType: string | null;
  @ApiProperty({ nullable: true, type: Boolean, example: null }) highlyAvailable: boolean | null;
  @ApiProperty({ example: 'node/platform_1/eu-central-1/m5.large', description: 'What is priced: control-plane/<provider>/<region>/standard|ha or node/<provider>/<region>/<node type>' })
  skuId: string;
  @ApiProperty({ nullable: true, type: String, format: 'uuid', example: '6f1c7a2e-4b0d-4f7e-9d3a-2c5b8e1f0a47', description: 'The price book entry (null: no price covers this usage)' })
  priceEntryIdentity: string | null;
  @ApiProperty({ nullable: true, type: String, example: '0.09', description: 'Price per unit the organisation pays' }) unitPrice: string | null;
  @ApiProperty({ nullable: true, type: String, example: '0.096', description: 'List price per unit' }) listUnitPrice: string | null;
  @ApiProperty({ example: '1488.000000', description: 'Hours (control plane) or node hours (nodes), 6 places' }) quantity: string;
  @ApiProperty({ example: 'Node-Hours', enum: ['Hours', 'Node-Hours'] }) unit: 'Hours' | 'Node-Hours';
  @ApiProperty({ format: 'date-time', example: '2026-11-01T00:00:00.000Z' }) chargePeriodStart: string;
  @ApiProperty({ format: 'date-time', example: '2026-12-01T00:00:00.000Z' }) chargePeriodEnd: string;
  @ApiProperty({ example: '133.92', description: '2 places, rounded half away from zero from the exact seconds' }) billedCost: string;
  @ApiProperty({ example: '142.85' }) listCost: string;
  @ApiProperty({ nullable: true, type: String, example: 'EUR' }) currency: string | null;
}

export class StatementTotals {
  @ApiProperty({ example: '208.32', description: 'Sum of the lines, corrections included' }) billedCost: string;
  @ApiProperty({ example: '217.25' }) listCost: string;
  @ApiProperty({ example: '0.00', description: 'Sum of the correction lines (billed)' }) corrections: string;
}

export class StatementResponse {
  @ApiProperty({ example: 'demo' }) organisation: string;
  @ApiProperty({ example: '2026-11', pattern: '^[0-9]{4}-(0[1-9]|1[0-2])$' }) period: string;
  @ApiProperty({ example: 'UTC', description: 'Periods are calendar months in UTC' }) timeZone: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-01T00:00:00.000Z' }) periodStart: string;
  @ApiProperty({ format: 'date-time', example: '2026-12-01T00:00:00.000Z' }) periodEnd: string;
  @ApiProperty({ enum: STATEMENT_STATUSES, example: 'CLOSED', description: 'OPEN: still computed from the ledger; CLOSED: written, never changes (corrections are new lines)' })
  status: (typeof STATEMENT_STATUSES)[number];
  @ApiProperty({ nullable: true, type: String, format: 'date-time', example: '2026-12-01T01:00:00.000Z' }) closedAt: string | null;
  @ApiProperty({ format: 'date-time', example: '2026-12-01T00:00:00.000Z', description: 'Usage counted up to here' }) asOf: string;
  @ApiProperty({ example: 'BUSINESS', description: 'The organisation type the period is priced with' }) organisationType: string;
  @ApiProperty({ nullable: true, type: String, example: 'EUR' }) currency: string | null;
  @ApiProperty({ example: 5, minimum: 0, description: 'Lines of the whole statement (`lines` holds one page of them)' }) lineCount: number;
  @ApiProperty({ example: 0, minimum: 0, description: 'Zero-based index of the page of lines in `lines`' }) page: number;
  @ApiProperty({ example: 500, minimum: 1, maximum: 500, description: 'Lines per page (`size`; default and maximum 500)' }) size: number;
  @ApiProperty({ type: [StatementLine], description: 'One page of the lines, in line-number order' }) lines: StatementLine[];
  @ApiProperty({ type: StatementTotals, description: 'Of the whole statement, whatever the page' }) totals: StatementTotals;
}

/** The page of a statement's lines (`size` defaults to the largest page, 500, so smaller statements come whole). */
export class StatementQuery extends PickType(PageQueryDto, ['page'] as const) {
  @ApiPropertyOptional({
    description: `Lines per page; values above ${MAX_PAGE_SIZE} are clamped to ${MAX_PAGE_SIZE}, below 1 or not a number mean ${MAX_PAGE_SIZE}`,
    minimum: 1,
    maximum: MAX_PAGE_SIZE,
    default: MAX_PAGE_SIZE,
    type: 'integer',
    format: 'int32',
  })
  @IsOptional()
  @Transform(toPageSize)
  @IsInt()
  size?: number;
}

export class StatementSummary {
  @ApiProperty({ example: '2026-11' }) period: string;
  @ApiProperty({ enum: STATEMENT_STATUSES, example: 'CLOSED' }) status: (typeof STATEMENT_STATUSES)[number];
  @ApiProperty({ nullable: true, type: String, format: 'date-time', example: '2026-12-01T01:00:00.000Z' }) closedAt: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'EUR' }) currency: string | null;
  @ApiProperty({ example: '208.32' }) billedCost: string;
  @ApiProperty({ example: '217.25' }) listCost: string;
}

export class StatementListQuery extends PageQueryDto {}
