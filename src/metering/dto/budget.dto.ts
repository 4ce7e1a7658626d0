import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsInt, IsOptional, IsString, Length, Matches, Max, Min, ValidateNested } from 'class-validator';
import { ApiPartialUpdate } from '../../common/api-docs';
import { IsPlainText } from '../../common/names';

export const BUDGET_BASES = ['ACTUAL', 'FORECAST'] as const;
export type BudgetBasis = (typeof BUDGET_BASES)[number];
const AMOUNT_PATTERN = /^(0|[1-9][0-9]{0,14})(\.[0-9]{1,2})?$/;

export class BudgetThreshold {
  @ApiProperty({ example: 90, minimum: 1, maximum: 1000, type: 'integer', description: 'Percent of the amount' })
  @IsInt() @Min(1) @Max(1000)
  percent: number;

  @ApiProperty({ enum: BUDGET_BASES, example: 'ACTUAL', description: 'ACTUAL: the cost so far this month; FORECAST: the cost the month is heading for' })
  @IsIn(BUDGET_BASES as unknown as string[], { message: `basis must be one of ${BUDGET_BASES.join(', ')}` })
  basis: BudgetBasis;
}

export const DEFAULT_THRESHOLDS: BudgetThreshold[] = [
  { percent: 50, basis: 'ACTUAL' },
  { percent: 90, basis: 'ACTUAL' },
  { percent: 100, basis: 'ACTUAL' },
  { percent: 100, basis: 'FORECAST' },
];

export class CreateBudgetRequest {
  @ApiProperty({ example: 'Production monthly', minLength: 1, maxLength: 100 })
  @IsString() @Length(1, 100) @IsPlainText()
  name: string;

  @ApiPropertyOptional({ example: 'production', maxLength: 63, description: 'The environment the budget covers; left out: the whole organisation' })
  @IsOptional() @IsString() @Length(1, 63)
  environmentSlug?: string;

  @ApiProperty({ example: '1000.00', pattern: AMOUNT_PATTERN.source, maxLength: 18, description: 'Monthly amount (decimal string, at most 2 places)' })
  @IsString() @Matches(AMOUNT_PATTERN, { message: 'amount must be a decimal string such as "1000.00" (at most 2 places, no sign)' })
  amount: string;

  @ApiProperty({ example: 'EUR', pattern: '^[A-Z]{3}$', minLength: 3, maxLength: 3, description: "The price book's currency" })
  @IsString() @Matches(/^[A-Z]{3}$/, { message: 'currency must be an ISO 4217 code such as EUR' })
  currency: string;

  @ApiPropertyOptional({
    type: [BudgetThreshold],
    maxItems: 10,
    description: 'Left out: 50 %, 90 % and 100 % of the actual cost and 100 % of the forecast',
  })
  @IsOptional() @IsArray() @ArrayMinSize(1) @ArrayMaxSize(10) @ValidateNested({ each: true }) @Type(() => BudgetThreshold)
  thresholds?: BudgetThreshold[];
}

@ApiPartialUpdate()
export class UpdateBudgetRequest {
  @ApiPropertyOptional({ example: 'Production monthly (raised)', minLength: 1, maxLength: 100 })
  @IsOptional() @IsString() @Length(1, 100) @IsPlainText()
  name?: string;

  @ApiPropertyOptional({ example: '1200.00', pattern: AMOUNT_PATTERN.source, maxLength: 18 })
  @IsOptional() @IsString() @Matches(AMOUNT_PATTERN, { message: 'amount must be a decimal string such as "1000.00" (at most 2 places, no sign)' })
  amount?: string;

  @ApiPropertyOptional({ type: [BudgetThreshold], maxItems: 10 })
  @IsOptional() @IsArray() @ArrayMinSize(1) @ArrayMaxSize(10) @ValidateNested({ each: true }) @Type(() => BudgetThreshold)
  thresholds?: BudgetThreshold[];
}

export class CrossedThreshold extends BudgetThreshold {
  @ApiProperty({ example: '912.40', description: 'The actual or forecast cost when it crossed' }) cost: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-24T09:00:00.000Z' }) crossedAt: string;
}

export class BudgetResponse {
  @ApiProperty({ format: 'uuid', example: '1c9e4b7a-3f2d-4a6b-8e5c-7d0f2a1b3c4d' }) identity: string;
  @ApiProperty({ example: 'Production monthly' }) name: string;
  @ApiProperty({ nullable: true, type: String, example: 'production', description: 'null: the whole organisation' }) environmentSlug: string | null;
  @ApiProperty({ example: '1000.00' }) amount: string;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ type: [BudgetThreshold] }) thresholds: BudgetThreshold[];
  @ApiProperty({ example: '2026-11', description: 'The current period (a calendar month in UTC)' }) period: string;
  @ApiProperty({ example: '612.40', description: 'Billed cost so far this period' }) actualCost: string;
  @ApiProperty({
    example: '708.90',
    description: 'The actual cost extrapolated linearly to the whole month (actual x month length / time elapsed)',
  })
  forecastCost: string;
  @ApiProperty({ type: [CrossedThreshold], description: 'Thresholds crossed this period (each reported once)' }) crossed: CrossedThreshold[];
  @ApiProperty({ format: 'date-time', example: '2026-11-02T10:00:00.000Z' }) createdAt: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-02T10:00:00.000Z' }) modifiedAt: string;
}
