import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ApiPartialUpdate } from '../../common/api-docs';
import { IsBoolean, IsOptional, IsString, Length, Matches, MaxLength } from 'class-validator';

export const VERSION_PATTERN = /^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;
export const CHANNEL_NAME_PATTERN = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

export class CreateClusterVersionRequest {
  @ApiProperty({ example: '1.33.0', maxLength: 64, pattern: VERSION_PATTERN.source, description: 'Semver without a `v` prefix' })
  @IsString() @Length(5, 64) @Matches(VERSION_PATTERN, { message: 'version must be a semantic version such as 1.33.0' })
  version: string;

  @ApiPropertyOptional({ example: 'v1.33.0', maxLength: 64, description: 'Defaults to `v` + version' })
  @IsOptional() @IsString() @Length(1, 64)
  kubernetesVersion?: string;

  @ApiPropertyOptional({ default: true, description: 'Whether clusters may be created with, upgraded to or downgraded to it' })
  @IsOptional() @IsBoolean()
  available?: boolean;

  @ApiPropertyOptional({ example: 'Rapid channel', maxLength: 500, default: '' })
  @IsOptional() @IsString() @MaxLength(500)
  note?: string;
}

@ApiPartialUpdate()
export class UpdateClusterVersionRequest {
  @ApiPropertyOptional({ description: 'false withdraws the version (refused with 409 while an update channel points to it)' })
  @IsOptional() @IsBoolean()
  available?: boolean;

  @ApiPropertyOptional({ example: 'Withdrawn: known security issue', maxLength: 500 })
  @IsOptional() @IsString() @MaxLength(500)
  note?: string;
}

export class CreateUpdateChannelRequest {
  @ApiProperty({ example: 'lts', minLength: 1, maxLength: 63, pattern: CHANNEL_NAME_PATTERN.source })
  @IsString() @Length(1, 63) @Matches(CHANNEL_NAME_PATTERN, { message: 'name may contain lowercase letters, digits and inner dashes only' })
  name: string;

  @ApiProperty({ example: '1.31.6', maxLength: 64, description: 'An existing, available cluster version' })
  @IsString() @Length(1, 64)
  kubernetesClusterVersion: string;

  @ApiPropertyOptional({ default: true })
  @IsOptional() @IsBoolean()
  available?: boolean;
}

@ApiPartialUpdate()
export class UpdateUpdateChannelRequest {
  @ApiPropertyOptional({ example: '1.31.6', maxLength: 64, description: 'An existing, available cluster version' })
  @IsOptional() @IsString() @Length(1, 64)
  kubernetesClusterVersion?: string;

  @ApiPropertyOptional()
  @IsOptional() @IsBoolean()
  available?: boolean;
}
