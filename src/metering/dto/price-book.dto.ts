import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsBoolean, IsIn, IsISO8601, IsOptional, IsString, Length, Matches, ValidateIf, ValidateNested } from 'class-validator';
import { ApiPartialUpdate } from '../../common/api-docs';
import { ORGANISATION_TYPES } from '../../identity/organisation.entity';

export const PRICE_KINDS = ['CONTROL_PLANE', 'NODE'] as const;
export type PriceKind = (typeof PRICE_KINDS)[number];

/** A price per hour: a decimal with up to 9 integer and 10 fractional digits, as a string (never a float). */
export const PRICE_PATTERN = /^(0|[1-9][0-9]{0,8})(\.[0-9]{1,10})?$/;
const PRICE_MESSAGE = 'must be a decimal string such as "0.095" (up to 9 integer and 10 fractional digits, no sign, no exponent)';
const CURRENCY_PATTERN = /^[A-Z]{3}$/;

/** The price per hour each organisation type pays; a type left out pays the list price. */
export class OrganisationTypePrices {
  @ApiPropertyOptional({ example: '0.09', pattern: PRICE_PATTERN.source, maxLength: 20, description: 'Price per hour for BUSINESS organisations; left out: they pay the list price' })
  @IsOptional() @IsString() @Matches(PRICE_PATTERN, { message: `BUSINESS ${PRICE_MESSAGE}` })
  BUSINESS?: string;

  @ApiPropertyOptional({ example: '0.08', pattern: PRICE_PATTERN.source, maxLength: 20, description: 'Price per hour for ENTERPRISE organisations; left out: they pay the list price' })
  @IsOptional() @IsString() @Matches(PRICE_PATTERN, { message: `ENTERPRISE ${PRICE_MESSAGE}` })
  ENTERPRISE?: string;

  @ApiPropertyOptional({ example: '0.1', pattern: PRICE_PATTERN.source, maxLength: 20, description: 'Price per hour for INDIVIDUAL organisations; left out: they pay the list price' })
  @IsOptional() @IsString() @Matches(PRICE_PATTERN, { message: `INDIVIDUAL ${PRICE_MESSAGE}` })
  INDIVIDUAL?: string;

  @ApiPropertyOptional({ example: '0', pattern: PRICE_PATTERN.source, maxLength: 20, description: 'Price per hour for TRIAL organisations; left out: they pay the list price' })
  @IsOptional() @IsString() @Matches(PRICE_PATTERN, { message: `TRIAL ${PRICE_MESSAGE}` })
  TRIAL?: string;
}
export const PRICED_ORGANISATION_TYPES = ORGANISATION_TYPES;

export class CreatePriceBookEntryRequest {
  @ApiProperty({ enum: PRICE_KINDS, example: 'NODE', description: 'CONTROL_PLANE: an hour of a cluster\'s control plane; NODE: an hour of one node' })
  @IsIn(PRICE_KINDS as unknown as string[], { message: `kind must be one of ${PRICE_KINDS.join(', ')}` })
  kind: PriceKind;

  @ApiProperty({ example: 'platform_1', maxLength: 64, description: 'A cloud provider type of the catalog' })
  @IsString() @Length(1, 64)
  cloudProvider: string;

  @ApiProperty({ example: 'eu-central-1', maxLength: 128, description: "A region (slug) of that provider" })
  @IsString() @Length(1, 128)
  region: string;

  @ApiPropertyOptional({
    example: 'm5.large',
    maxLength: 128,
    description: 'A node type of that provider; required for NODE, refused for CONTROL_PLANE (left out there)',
  })
  @ValidateIf((o) => o.nodeType !== undefined && o.nodeType !== null) @IsString() @Length(1, 128)
  nodeType?: string;

  @ApiPropertyOptional({
    example: null,
    type: Boolean,
    nullable: true,
    description: 'Whether this is the price of a highly available control plane; required for CONTROL_PLANE, refused for NODE (left out there)',
  })
  @ValidateIf((o) => o.highlyAvailable !== undefined && o.highlyAvailable !== null) @IsBoolean()
  highlyAvailable?: boolean;

  @ApiProperty({ example: 'EUR', pattern: CURRENCY_PATTERN.source, minLength: 3, maxLength: 3, description: 'ISO 4217 code; the whole price book uses one currency' })
  @IsString() @Matches(CURRENCY_PATTERN, { message: 'currency must be an ISO 4217 code such as EUR' })
  currency: string;

  @ApiProperty({ example: '0.096', pattern: PRICE_PATTERN.source, maxLength: 20, description: 'List price per hour (per node for NODE)' })
  @IsString() @Matches(PRICE_PATTERN, { message: `listPricePerHour ${PRICE_MESSAGE}` })
  listPricePerHour: string;

  @ApiPropertyOptional({ type: OrganisationTypePrices, description: 'Price per hour by organisation type; a type left out pays the list price' })
  @IsOptional() @ValidateNested() @Type(() => OrganisationTypePrices)
  organisationTypePrices?: OrganisationTypePrices;

  @ApiPropertyOptional({
    example: '2026-12-01T00:00:00Z',
    format: 'date-time',
    maxLength: 40,
    description: 'When the price starts to apply; now or later (a price never changes the past). Left out: now.',
  })
  @IsOptional() @IsISO8601({ strict: true }, { message: 'effectiveFrom must be an ISO 8601 date-time' })
  effectiveFrom?: string;

  @ApiPropertyOptional({
    example: null,
    type: String,
    format: 'date-time',
    maxLength: 40,
    nullable: true,
    description: 'When the price stops applying (after effectiveFrom); left out or null: until a later entry of the same key begins',
  })
  @IsOptional() @IsISO8601({ strict: true }, { message: 'effectiveTo must be an ISO 8601 date-time' })
  effectiveTo?: string | null;
}

@ApiPartialUpdate(
  'An entry in effect (or ended) accepts only effectiveTo, now or later, to close it; an entry that has not begun accepts every field.',
)
export class UpdatePriceBookEntryRequest {
  @ApiPropertyOptional({ example: '0.092', pattern: PRICE_PATTERN.source, maxLength: 20 })
  @IsOptional() @IsString() @Matches(PRICE_PATTERN, { message: `listPricePerHour ${PRICE_MESSAGE}` })
  listPricePerHour?: string;

  @ApiPropertyOptional({ type: OrganisationTypePrices, description: 'Replaces the prices by organisation type' })
  @IsOptional() @ValidateNested() @Type(() => OrganisationTypePrices)
  organisationTypePrices?: OrganisationTypePrices;

  @ApiPropertyOptional({ example: '2026-12-01T00:00:00Z', format: 'date-time', maxLength: 40, description: 'Now or later' })
  @IsOptional() @IsISO8601({ strict: true }, { message: 'effectiveFrom must be an ISO 8601 date-time' })
  effectiveFrom?: string;

  @ApiPropertyOptional({
    example: '2027-01-01T00:00:00Z',
    type: String,
    format: 'date-time',
    maxLength: 40,
    nullable: true,
    description: 'Now or later, after effectiveFrom; null reopens an entry whose end has not come yet',
  })
  @IsOptional() @IsISO8601({ strict: true }, { message: 'effectiveTo must be an ISO 8601 date-time' })
  effectiveTo?: string | null;
}

export const PRICE_BOOK_ENTRY_STATES = ['SCHEDULED', 'IN_EFFECT', 'ENDED'] as const;

export class PriceBookEntryResponse {
  @ApiProperty({ format: 'uuid', example: '6f1c7a2e-4b0d-4f7e-9d3a-2c5b8e1f0a47' }) identity: string;
  @ApiProperty({ enum: PRICE_KINDS, example: 'NODE' }) kind: PriceKind;
  @ApiProperty({ example: 'platform_1' }) cloudProvider: string;
  @ApiProperty({ example: 'eu-central-1' }) region: string;
  @ApiProperty({ example: 'm5.large', nullable: true, type: String }) nodeType: string | null;
  @ApiProperty({ example: null, nullable: true, type: Boolean }) highlyAvailable: boolean | null;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ example: '0.096', description: 'Decimal string' }) listPricePerHour: string;
  @ApiProperty({ type: OrganisationTypePrices }) organisationTypePrices: OrganisationTypePrices;
  @ApiProperty({ format: 'date-time', example: '2026-12-01T00:00:00.000Z' }) effectiveFrom: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String, example: null }) effectiveTo: string | null;
  @ApiProperty({
    format: 'date-time',
    nullable: true,
    type: String,
    example: null,
    description: 'When the entry stops applying: its effectiveTo or the start of the next entry of the same key, whichever is first; null: open',
  })
  appliesUntil: string | null;
  @ApiProperty({ enum: PRICE_BOOK_ENTRY_STATES, example: 'SCHEDULED', description: 'Compared with now' })
  state: (typeof PRICE_BOOK_ENTRY_STATES)[number];
  @ApiProperty({ format: 'date-time', example: '2026-11-27T10:00:00.000Z' }) createdAt: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-27T10:00:00.000Z' }) modifiedAt: string;
}
