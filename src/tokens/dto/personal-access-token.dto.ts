import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsDateString, IsIn, IsOptional, IsString, Length, MaxLength, ValidateNested } from 'class-validator';
import { MAX_DATE_TIME_LENGTH } from '../../common/bounds';
import { Secret } from '../../common/secret-fields';
import { PAT_TYPES, PatType } from '../../identity/personal-access-token.entity';
import { IsPlainText } from '../../common/names';

export class PersonalAccessTokenTypeDto {
  @ApiProperty({ enum: PAT_TYPES, example: 'FULL_ACCESS', description: 'FULL_ACCESS, or READ_ONLY (GET requests only)' })
  @IsIn(PAT_TYPES as unknown as string[])
  name: PatType;
}

export class ProvisionPersonalAccessTokenRequest {
  @ApiPropertyOptional({ minLength: 1, maxLength: 100, example: 'ci-pipeline', default: 'Personal access token' })
  @IsOptional() @IsString() @Length(1, 100)
  @IsPlainText()
  name?: string;

  @ApiPropertyOptional({ type: PersonalAccessTokenTypeDto, description: 'Defaults to {"name":"FULL_ACCESS"}' })
  @IsOptional() @ValidateNested() @Type(() => PersonalAccessTokenTypeDto)
  type?: PersonalAccessTokenTypeDto;

  @ApiPropertyOptional({
    example: '203.0.113.7, 10.0.0.0/8',
    maxLength: 2000,
    description: 'Comma-separated IP addresses or CIDR ranges the token may be used from. Left out (or blank): from any address',
  })
  @IsOptional() @IsString() @Length(0, 2000)
  ipRestriction?: string;

  @ApiPropertyOptional({
    format: 'date-time',
    maxLength: MAX_DATE_TIME_LENGTH,
    // A month after EXAMPLE_TIME_BASE (src/common/openapi-examples.ts): Swagger UI shows it a month after it is opened.
    example: '2026-12-23T10:00:00Z',
    description: 'Expiry, in the future and at most one year ahead; defaults to PAT_DEFAULT_TTL_DAYS (90) days',
  })
  @IsOptional() @MaxLength(MAX_DATE_TIME_LENGTH) @IsDateString({ strict: true })
  expireAt?: string;
}

export class PersonalAccessTokenResponse {
  @ApiProperty() active: boolean;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) expireAt: string;
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ nullable: true, type: String }) ipRestriction: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) lastUsedAt: string | null;
  @ApiProperty() name: string;
  @ApiProperty({ format: 'uuid', description: 'Identity of the owning user' }) subject: string;
  @ApiProperty({ nullable: true, type: String, description: 'The token value: only in the provision response, null afterwards' })
  @Secret({ shownOnce: true })
  token: string | null;
  @ApiProperty({ type: PersonalAccessTokenTypeDto }) type: PersonalAccessTokenTypeDto;
}

export class MessageStatusResponse {
  @ApiProperty({ example: 'Personal access token revoked' }) message: string;
  @ApiProperty({ type: 'integer', format: 'int32', minimum: 100, maximum: 599, example: 200 }) status: number;
}
