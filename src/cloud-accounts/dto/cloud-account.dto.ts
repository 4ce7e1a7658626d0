import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsOptional, IsString, IsUUID, Length, MaxLength, ValidateIf } from 'class-validator';
import { CloudProfileResponse } from '../../catalog/dto/catalog.dto';
import { PageQueryDto } from '../../common/paging';
import { IsStringMap, REQUEST_STRING_MAP_SCHEMA, STRING_MAP_SCHEMA } from './string-map';
import { ApiPartialUpdate } from '../../common/api-docs';
import { IsPlainText } from '../../common/names';

export class CreateCloudAccountRequest {
  @ApiProperty({
    maxLength: 64,
    example: 'platform-1-default',
    description: 'Identity (uuid) or slug of an enabled cloud profile from the catalog; the account platform is the profile type',
  })
  @IsString() @Length(1, 64)
  cloudProfile: string;

  @ApiProperty({ minLength: 1, maxLength: 64, example: 'Production account' })
  @IsString() @Length(1, 64)
  @IsPlainText()
  displayName: string;

  @ApiPropertyOptional(REQUEST_STRING_MAP_SCHEMA())
  @IsOptional() @IsStringMap()
  metadata?: Record<string, string>;
}

@ApiPartialUpdate()
export class UpdateCloudAccountRequest {
  @ApiPropertyOptional({ minLength: 3, maxLength: 64, example: 'Production account (EU)' })
  @ValidateIf((o: UpdateCloudAccountRequest) => o.displayName !== undefined) @IsString() @Length(3, 64)
  @IsPlainText()
  displayName?: string;

  @ApiPropertyOptional({ example: true })
  @ValidateIf((o: UpdateCloudAccountRequest) => o.enabled !== undefined) @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({
    type: String,
    maxLength: 36,
    description:
      "Identity of one of this account's credentials, which becomes primary. An empty string leaves the primary " +
      'credentials unchanged (the original Terraform provider sends `""` on every update).',
    // The example is the demo account's credentials (src/common/openapi-polish.ts fills registered identities in).
  })
  @ValidateIf((o: UpdateCloudAccountRequest) => o.primaryCloudCredentials !== undefined && o.primaryCloudCredentials !== '')
  @IsUUID('all', { message: 'primaryCloudCredentials must be a UUID (or "" to leave it unchanged)' })
  primaryCloudCredentials?: string;
}

export class CloudAccountListQuery extends PageQueryDto {
  @ApiPropertyOptional({ name: 'display-name', description: 'Case-insensitive part of the display name. Left out: every account', maxLength: 64 })
  @IsOptional() @IsString() @MaxLength(64)
  'display-name'?: string;

  @ApiPropertyOptional({ name: 'cloud-provider-slug', description: 'Slug (or type value) of the cloud provider. Left out: every provider', example: 'platform_1', maxLength: 64 })
  @IsOptional() @IsString() @MaxLength(64)
  'cloud-provider-slug'?: string;
}

export class CloudAccountResponse {
  @ApiProperty({ type: CloudProfileResponse }) cloudProfile: CloudProfileResponse;
  @ApiProperty({ example: 'Production account' }) displayName: string;
  @ApiProperty() enabled: boolean;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty(STRING_MAP_SCHEMA) metadata: Record<string, string>;
  @ApiProperty({ format: 'uuid', nullable: true, type: String, description: 'null until the account has credentials' })
  primaryCloudCredentialsIdentity: string | null;
}
