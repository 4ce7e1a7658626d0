import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsIn, IsOptional, IsString, Length, Matches, MaxLength, ValidateBy, ValidateNested, ValidationArguments } from 'class-validator';
import { MAX_DATE_TIME_LENGTH } from '../../common/bounds';
import {
  EXCLUSION_HORIZON_DAYS,
  EXCLUSION_SCOPES,
  MAX_EXCLUSION_DAYS,
  MAX_EXCLUSION_NAME_LENGTH,
  MAX_EXCLUSIONS,
} from '../maintenance-exclusion';
import { IsPlainText } from '../../common/names';

/** A date, `T`, a time (seconds and fractions optional) and `Z` or an offset; the calendar date must exist. */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):([0-5]\d)(:[0-5]\d(\.\d{1,9})?)?(Z|[+-]([01]\d|2[0-3]):?[0-5]\d)$/i;
const DAY_MS = 24 * 60 * 60 * 1000;

function parseDateTime(v: unknown): number | null {
  if (typeof v !== 'string') return null;
  const m = DATE_TIME.exec(v);
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const day = new Date(Date.UTC(y, mo - 1, d));
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== mo - 1 || day.getUTCDate() !== d) return null; // e.g. 2026-02-30
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : t;
}

/** An ISO 8601 date-time with a time zone (Z or an offset). */
function IsDateTime() {
  return ValidateBy({
    name: 'isDateTime',
    validator: {
      validate: (v: unknown) => parseDateTime(v) !== null,
      defaultMessage: (args?: ValidationArguments) =>
        `${args?.property} must be an ISO 8601 date-time with a time zone, e.g. 2026-12-20T00:00:00Z`,
    },
  });
}

/** endsAt after startsAt, and the exclusion at most MAX_EXCLUSION_DAYS long (only checked when both parse). */
function IsExclusionEnd() {
  return ValidateBy({
    name: 'isExclusionEnd',
    validator: {
      validate: (v: unknown, args?: ValidationArguments) => {
        const end = parseDateTime(v);
        const start = parseDateTime((args?.object as { startsAt?: unknown })?.startsAt);
        if (end === null || start === null) return true; // the format rule reports it
        return end > start && end - start <= MAX_EXCLUSION_DAYS * DAY_MS;
      },
      defaultMessage: (args?: ValidationArguments) => {
        const end = parseDateTime(args?.value) ?? 0;
        const start = parseDateTime((args?.object as { startsAt?: unknown })?.startsAt) ?? 0;
        return end <= start
          ? 'endsAt must be after startsAt'
          : `endsAt must be at most ${MAX_EXCLUSION_DAYS} days after startsAt (an exclusion lasts at most ${MAX_EXCLUSION_DAYS} days)`;
      },
    },
  });
}

export class MaintenanceExclusionRequest {
  @ApiProperty({ minLength: 1, maxLength: MAX_EXCLUSION_NAME_LENGTH, example: 'Year-end freeze', description: 'Named in the activity when an upgrade moves because of it' })
  @IsString() @Length(1, MAX_EXCLUSION_NAME_LENGTH, { message: `name must be 1 to ${MAX_EXCLUSION_NAME_LENGTH} characters` })
  @Matches(/\S/, { message: 'name must not be blank' })
  @IsPlainText()
  name: string;

  @ApiProperty({
    format: 'date-time',
    maxLength: MAX_DATE_TIME_LENGTH,
    example: '2026-12-20T00:00:00Z',
    description: 'ISO 8601 date-time with a time zone; the exclusion starts here (inclusive)',
  })
  @MaxLength(MAX_DATE_TIME_LENGTH) @IsDateTime()
  startsAt: string;

  @ApiProperty({
    format: 'date-time',
    maxLength: MAX_DATE_TIME_LENGTH,
    example: '2027-01-04T00:00:00Z',
    description:
      `ISO 8601 date-time with a time zone; the exclusion ends here (exclusive). After startsAt, at most ${MAX_EXCLUSION_DAYS} days ` +
      `after it, in the future and at most ${EXCLUSION_HORIZON_DAYS} days from now`,
  })
  @MaxLength(MAX_DATE_TIME_LENGTH) @IsDateTime() @IsExclusionEnd()
  endsAt: string;

  @ApiProperty({
    enum: EXCLUSION_SCOPES,
    example: 'NO_MINOR_UPGRADES',
    description:
      'NO_UPGRADES: the scheduler plans and starts no upgrade overlapping the exclusion. NO_MINOR_UPGRADES: only upgrades to another ' +
      'major.minor are held back; patch upgrades (same major.minor) still go ahead',
  })
  @IsIn(EXCLUSION_SCOPES, { message: `scope must be one of: ${EXCLUSION_SCOPES.join(', ')}` })
  scope: string;
}

export class MaintenanceExclusionResponse {
  @ApiProperty({ example: 'Year-end freeze' }) name: string;
  @ApiProperty({ format: 'date-time', example: '2026-12-20T00:00:00.000Z', description: 'UTC' }) startsAt: string;
  @ApiProperty({ format: 'date-time', example: '2027-01-04T00:00:00.000Z', description: 'UTC, exclusive' }) endsAt: string;
  @ApiProperty({ enum: EXCLUSION_SCOPES }) scope: string;
}

const EXCLUSIONS_DESCRIPTION =
  'Periods in which the upgrade scheduler plans and starts no upgrade of the scope: a maintenance window overlapping one is skipped, ' +
  'and an upgrade it already planned into such a window moves to the first allowed window after it. Upgrades created by a platform ' +
  `administrator are not held back. Replaces the whole list; at most ${MAX_EXCLUSIONS}.`;

/**
 * The optional exclusions list of a request (`exclusions` of a schedule, `maintenanceExclusions` of a cluster).
 * The clock-dependent bound (endsAt within EXCLUSION_HORIZON_DAYS) is checked by the services.
 */
export const ExclusionsField = (field: string, extra = '') =>
  applyDecorators(
    ApiPropertyOptional({
      type: [MaintenanceExclusionRequest],
      maxItems: MAX_EXCLUSIONS,
      default: [],
      description: EXCLUSIONS_DESCRIPTION + extra,
    }),
    IsOptional(),
    IsArray({ message: `${field} must be an array` }),
    ArrayMaxSize(MAX_EXCLUSIONS, { message: `${field} may hold at most ${MAX_EXCLUSIONS} exclusions` }),
    ValidateNested({ each: true }),
    Type(() => MaintenanceExclusionRequest),
  );

export const ExclusionsResponseField = (extra = '') =>
  ApiProperty({ type: [MaintenanceExclusionResponse], maxItems: MAX_EXCLUSIONS, description: 'Maintenance exclusions (empty when none)' + extra });
