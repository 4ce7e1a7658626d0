import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsISO8601, IsOptional, IsString, Length, MaxLength, ValidateNested } from 'class-validator';
import { MAX_DATE_TIME_LENGTH } from '../../common/bounds';
import { MAX_MATCHER_VALUE_LENGTH, SILENCE_STATES } from '../silence-matchers';
import { IsPlainText } from '../../common/names';

export const MAX_SILENCE_MATCHERS = 20;

export class SilenceMatcherDto {
  @ApiProperty({ example: 'alertname', minLength: 1, maxLength: 100 })
  @IsString() @Length(1, 100) @IsPlainText()
  name: string;

  @ApiProperty({
    example: 'NodeDown',
    maxLength: MAX_MATCHER_VALUE_LENGTH,
    description:
      'A literal value, or (isRegex) a regular expression in RE2 syntax, as Alertmanager reads it, matching the whole label value ' +
      '(anchored as ^(?:value)$; no lookaround or backreferences). At least one matcher of a silence must not match the empty string.',
  })
  @IsString() @MaxLength(MAX_MATCHER_VALUE_LENGTH)
  value: string;

  @ApiPropertyOptional({ default: false }) @IsOptional() @IsBoolean()
  isRegex?: boolean;

  @ApiPropertyOptional({ default: true, description: 'false matches alerts whose label does NOT equal (or match) the value' })
  @IsOptional() @IsBoolean()
  isEqual?: boolean;
}

export class CreateSilenceRequest {
  @ApiProperty({ type: [SilenceMatcherDto], minItems: 1, maxItems: MAX_SILENCE_MATCHERS })
  @IsArray() @ArrayMinSize(1, { message: 'matchers must hold at least one matcher' }) @ArrayMaxSize(MAX_SILENCE_MATCHERS)
  @ValidateNested({ each: true }) @Type(() => SilenceMatcherDto)
  matchers: SilenceMatcherDto[];

  @ApiProperty({ format: 'date-time', maxLength: MAX_DATE_TIME_LENGTH, example: '2026-11-23T10:00:00Z' })
  @MaxLength(MAX_DATE_TIME_LENGTH) @IsISO8601({ strict: true }, { message: 'startsAt must be an ISO 8601 date-time' })
  startsAt: string;

  @ApiProperty({ format: 'date-time', maxLength: MAX_DATE_TIME_LENGTH, example: '2026-11-23T12:00:00Z', description: 'After startsAt and in the future' })
  @MaxLength(MAX_DATE_TIME_LENGTH) @IsISO8601({ strict: true }, { message: 'endsAt must be an ISO 8601 date-time' })
  endsAt: string;

  @ApiProperty({ example: 'Planned maintenance of the storage nodes', minLength: 1, maxLength: 1000 })
  @IsString() @Length(1, 1000)
  comment: string;
}

export class SilenceStatusDto {
  @ApiProperty({ enum: SILENCE_STATES }) state: string;
}

export class SilenceResponse {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ type: [SilenceMatcherDto] }) matchers: SilenceMatcherDto[];
  @ApiProperty({ format: 'date-time' }) startsAt: string;
  @ApiProperty({ format: 'date-time' }) endsAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
  @ApiProperty({ example: 'alice' }) createdBy: string;
  @ApiProperty() comment: string;
  @ApiProperty({ type: SilenceStatusDto }) status: SilenceStatusDto;
}
