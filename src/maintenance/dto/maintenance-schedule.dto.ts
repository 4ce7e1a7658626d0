import { applyDecorators } from '@nestjs/common';
import { ApiPartialUpdate } from '../../common/api-docs';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsDefined,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  Min,
  ValidateNested,
  MaxLength,
  ValidateBy,
} from 'class-validator';
import { IANAZone } from 'luxon';

/** The optional `timeZone` of schedule requests: documented, bounded and checked against the IANA names. */
const TimeZoneField = () =>
  applyDecorators(
    ApiPropertyOptional({
      example: 'Europe/Amsterdam',
      default: 'UTC',
      maxLength: 64,
      description:
        "IANA time zone the windows' start times are local to. On the night clocks jump forward, a window starting in the " +
        'skipped hour starts that much later (02:30 becomes 03:30); its duration stays the same.',
    }),
    IsOptional(),
    IsString(),
    MaxLength(64),
    IsIanaTimeZone(),
  );

/** An IANA time zone name Luxon (the ICU data of Node) knows, e.g. Europe/Amsterdam or UTC. */
function IsIanaTimeZone() {
  return ValidateBy({
    name: 'isIanaTimeZone',
    validator: {
      validate: (v: unknown) => typeof v === 'string' && IANAZone.isValidZone(v),
      defaultMessage: (args) => `timeZone '${String(args?.value)}' is not a known IANA time zone (e.g. Europe/Amsterdam, UTC)`,
    },
  });
}
import { DEFAULT_WINDOW_DURATION, MAX_WINDOW_DURATION, MIN_WINDOW_DURATION, parseDay, START_TIME_PATTERN, WEEKDAYS } from '../maintenance-window';
import { ExclusionsField, ExclusionsResponseField, MaintenanceExclusionRequest, MaintenanceExclusionResponse } from './maintenance-exclusion.dto';
import { IsPlainText } from '../../common/names';

export const MAX_WINDOWS_PER_SCHEDULE = 50;
const DAY_INPUTS = [...WEEKDAYS, 'mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

export class MaintenanceWindowRequest {
  @ApiPropertyOptional({
    enum: DAY_INPUTS,
    example: 'TUESDAY',
    description:
      'MONDAY..SUNDAY or mon..sun, in any case; answered as the upper-case full name. ' +
      'No default: a window without its day is refused with 400 naming it.',
  })
  @Transform(({ value }) => parseDay(value) ?? value)
  @IsDefined({ message: 'day is required: the day the window starts (MONDAY..SUNDAY)' })
  @IsIn(WEEKDAYS as unknown as string[], { message: 'day must be one of MONDAY..SUNDAY or mon..sun (any case)' })
  day: string;

  @ApiPropertyOptional({
    example: '02:00',
    pattern: START_TIME_PATTERN.source,
    maxLength: 5,
    description: "HH:mm in the schedule's time zone. No default: a window without its start is refused with 400 naming it.",
  })
  @IsDefined({ message: 'startTime is required: when the window starts (HH:mm)' })
  @IsString() @MaxLength(5) @Matches(START_TIME_PATTERN, { message: 'startTime must be HH:mm (00:00 to 23:59, UTC)' })
  startTime: string;

  @ApiPropertyOptional({
    type: 'integer',
    format: 'int32',
    minimum: MIN_WINDOW_DURATION,
    maximum: MAX_WINDOW_DURATION,
    default: DEFAULT_WINDOW_DURATION,
    description: 'Minutes',
  })
  @IsOptional()
  @IsInt({ message: 'duration must be a whole number of minutes' })
  @Min(MIN_WINDOW_DURATION, { message: `duration must be at least ${MIN_WINDOW_DURATION} minutes` })
  @Max(MAX_WINDOW_DURATION, { message: `duration must be at most ${MAX_WINDOW_DURATION} minutes` })
  duration?: number;
}

export class CreateMaintenanceScheduleRequest {
  @ApiPropertyOptional({
    minLength: 1,
    maxLength: 100,
    example: 'Weekly Tuesday night',
    description: 'Default: the windows in words, e.g. "TUESDAY 02:00 (120 min)"',
  })
  @IsOptional()
  @IsString() @Length(1, 100, { message: 'name must be 1 to 100 characters' })
  @Matches(/\S/, { message: 'name must not be blank' })
  @IsPlainText()
  name?: string;

  @ApiPropertyOptional({
    type: [MaintenanceWindowRequest],
    minItems: 1,
    maxItems: MAX_WINDOWS_PER_SCHEDULE,
    description:
      'Windows must not overlap (including the wrap from Sunday into Monday). No default: a schedule without windows ' +
      'would never let maintenance run, so leaving them out is refused with 400 naming `windows`.',
  })
  @IsDefined({ message: 'windows is required: a schedule needs at least one window' })
  @IsArray() @ArrayMinSize(1, { message: 'windows must hold at least one window' })
  @ArrayMaxSize(MAX_WINDOWS_PER_SCHEDULE, { message: `windows may hold at most ${MAX_WINDOWS_PER_SCHEDULE} windows` })
  @ValidateNested({ each: true }) @Type(() => MaintenanceWindowRequest)
  windows: MaintenanceWindowRequest[];

  @TimeZoneField()
  timeZone?: string;

  @ExclusionsField('exclusions', ' They apply to every cluster using the schedule.')
  exclusions?: MaintenanceExclusionRequest[];
}

/** PATCH: the same fields and bounds, each optional. */
@ApiPartialUpdate()
export class UpdateMaintenanceScheduleRequest {
  @ApiPropertyOptional({ minLength: 1, maxLength: 100, example: 'Weekly Tuesday night' })
  @IsOptional() @IsString() @Length(1, 100, { message: 'name must be 1 to 100 characters' })
  @Matches(/\S/, { message: 'name must not be blank' })
  @IsPlainText()
  name?: string;

  @ApiPropertyOptional({ type: [MaintenanceWindowRequest], minItems: 1, maxItems: MAX_WINDOWS_PER_SCHEDULE, description: 'Replaces every window' })
  @IsOptional() @IsArray() @ArrayMinSize(1, { message: 'windows must hold at least one window' })
  @ArrayMaxSize(MAX_WINDOWS_PER_SCHEDULE, { message: `windows may hold at most ${MAX_WINDOWS_PER_SCHEDULE} windows` })
  @ValidateNested({ each: true }) @Type(() => MaintenanceWindowRequest)
  windows?: MaintenanceWindowRequest[];

  @TimeZoneField()
  timeZone?: string;

  @ExclusionsField('exclusions', ' They apply to every cluster using the schedule.')
  exclusions?: MaintenanceExclusionRequest[];
}

export class MaintenanceWindowResponse {
  @ApiProperty({ enum: WEEKDAYS, example: 'TUESDAY' }) day: string;
  @ApiProperty({ type: 'integer', format: 'int32', example: 120 }) duration: number;
  @ApiProperty({ example: '02:00' }) startTime: string;
}

export class MaintenanceScheduleResponse {
  @ApiProperty({ type: 'integer', format: 'int64', description: 'Non-deleted clusters using the schedule' }) clusterCount: number;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: [MaintenanceWindowResponse] }) windows: MaintenanceWindowResponse[];
  @ApiProperty({ example: 'Europe/Amsterdam', description: "IANA time zone of the windows' start times" }) timeZone: string;
  @ExclusionsResponseField(', for every cluster using the schedule') exclusions: MaintenanceExclusionResponse[];
}
