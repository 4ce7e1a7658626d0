import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsDefined, IsObject, IsOptional, IsString, IsUUID, Length, ValidateBy, ValidateNested } from 'class-validator';
import { CLOUD_PROVIDER_TYPES, CloudProviderType } from '../../catalog/cloud-provider.entity';
import { PageQueryDto } from '../../common/paging';
import { Secret } from '../../common/secret-fields';
import { IsStringMap, REQUEST_STRING_MAP_SCHEMA, STRING_MAP_SCHEMA } from './string-map';
import { IsPlainText } from '../../common/names';

/**
 * Create-credentials bodies, one per platform type (docs/conventions.md, "Cloud accounts and credentials").
 * Every body is `{credentials: {...platform fields}, displayName?, metadata?}`; the `credentials`
 * object is write-only: it is encrypted at rest and never returned, logged or audited.
 * byon, none and empty take no secret: `{displayName?, metadata?}`.
 */
class CredentialsRequestBase {
  @ApiPropertyOptional({ minLength: 1, maxLength: 64, example: 'ci deployer', description: "Defaults to '<platform> credentials'" })
  @IsOptional() @IsString() @Length(1, 64)
  @IsPlainText()
  displayName?: string;

  @ApiPropertyOptional(REQUEST_STRING_MAP_SCHEMA())
  @IsOptional() @IsStringMap()
  metadata?: Record<string, string>;
}

/** A platform secret field: write-only (declared with @Secret), sealed with the rest of `credentials`. */
const secret = (max: number, example: string, description?: string) =>
  applyDecorators(ApiProperty({ minLength: 1, maxLength: max, example, description }), Secret());
/** The same, documented as optional (the interface does not mark it Required); the validator still refuses it missing. */
const optionalSecret = (max: number, example: string, description?: string) =>
  applyDecorators(ApiPropertyOptional({ minLength: 1, maxLength: max, example, description }), Secret());

// ---------------------------------------------------------------------------------- platform_1
/**
 * platform_1's key pair. The interface marks neither the pair nor its fields Required, so the document does not
 * either; but credentials without a key cannot be defaulted: leaving one out is 400 naming it.
 */
const NO_DEFAULT = 'No default: leaving it out is refused with 400 naming it.';
export class Platform1Secret {
  @optionalSecret(128, 'AKIAIOSFODNN7EXAMPLE', `Access key id. ${NO_DEFAULT}`)
  @IsDefined({ message: 'credentials.accessKeyId is required: the access key id of the key pair' })
  @IsString() @Length(1, 128) accessKeyId: string;
  @optionalSecret(256, 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', `Secret access key. ${NO_DEFAULT}`)
  @IsDefined({ message: 'credentials.accessKeySecret is required: the secret of the key pair' })
  @IsString() @Length(1, 256) accessKeySecret: string;
}
export class Platform1CredentialsRequest extends CredentialsRequestBase {
  @ApiPropertyOptional({ type: Platform1Secret, description: `Access key pair (write-only). ${NO_DEFAULT}` })
  @Secret()
  @IsDefined({ message: 'credentials is required: the access key pair' }) @IsObject() @ValidateNested() @Type(() => Platform1Secret)
  credentials: Platform1Secret;
}

// ---------------------------------------------------------------------------------- platform_2
export class Platform2Secret {
  @ApiProperty({ format: 'uuid', description: 'Application (client) id of the service principal' })
  @IsUUID('all', { message: 'credentials.clientId must be a UUID' }) clientId: string;
  @secret(256, 'xYz~secret', 'Client secret of the service principal') @IsString() @Length(1, 256) clientSecret: string;
  @ApiProperty({ format: 'uuid', description: 'Directory (tenant) id' })
  @IsUUID('all', { message: 'credentials.tenantId must be a UUID' }) tenantId: string;
  @ApiProperty({ format: 'uuid', description: 'Subscription id' })
  @IsUUID('all', { message: 'credentials.subscriptionId must be a UUID' }) subscriptionId: string;
}
export class Platform2CredentialsRequest extends CredentialsRequestBase {
  @ApiProperty({ type: Platform2Secret, description: 'Service principal: client id/secret, tenant and subscription (write-only)' })
  @Secret()
  @IsDefined() @IsObject() @ValidateNested() @Type(() => Platform2Secret)
  credentials: Platform2Secret;
}

// ------------------------------------------------------------------------- platform_3, platform_6
export class ApiTokenSecret {
  @secret(512, 'dop_v1_0123456789abcdef', 'API token') @IsString() @Length(1, 512) apiToken: string;
}
export class Platform3CredentialsRequest extends CredentialsRequestBase {
  @ApiProperty({ type: ApiTokenSecret, description: 'API token (write-only)' })
  @Secret()
  @IsDefined() @IsObject() @ValidateNested() @Type(() => ApiTokenSecret)
  credentials: ApiTokenSecret;
}
export class Platform6CredentialsRequest extends CredentialsRequestBase {
  @ApiProperty({ type: ApiTokenSecret, description: 'API token (write-only)' })
  @Secret()
  @IsDefined() @IsObject() @ValidateNested() @Type(() => ApiTokenSecret)
  credentials: ApiTokenSecret;
}

// ---------------------------------------------------------------------------------- platform_4
export class Platform4Secret {
  @secret(256, 'EXO0123456789abcdef') @IsString() @Length(1, 256) apiKey: string;
  @secret(256, 'secret') @IsString() @Length(1, 256) apiSecret: string;
}
export class Platform4CredentialsRequest extends CredentialsRequestBase {
  @ApiProperty({ type: Platform4Secret, description: 'API key and secret (write-only)' })
  @Secret()
  @IsDefined() @IsObject() @ValidateNested() @Type(() => Platform4Secret)
  credentials: Platform4Secret;
}

// ---------------------------------------------------------------------------------- platform_5
/** A service account key file: JSON with at least client_email and private_key. The value is never echoed. */
function IsServiceAccountKey() {
  return ValidateBy({
    name: 'isServiceAccountKey',
    validator: {
      validate(value: unknown): boolean {
        if (typeof value !== 'string') return false;
        try {
          const parsed = JSON.parse(value) as Record<string, unknown>;
          return (
            !!parsed &&
            typeof parsed === 'object' &&
            !Array.isArray(parsed) &&
            typeof parsed.client_email === 'string' &&
            parsed.client_email.length > 0 &&
            typeof parsed.private_key === 'string' &&
            parsed.private_key.length > 0
          );
        } catch {
          return false;
        }
      },
      defaultMessage: () =>
        'credentials.serviceAccountKey must be the service account key file as a JSON string with client_email and private_key',
    },
  });
}
export class Platform5Secret {
  @secret(16384, '{"type":"service_account","client_email":"deployer@project.iam.example","private_key":"-----BEGIN PRIVATE KEY-----..."}',
    'The service account key file (JSON) as a string; must contain client_email and private_key')
  @IsString() @Length(1, 16384) @IsServiceAccountKey()
  serviceAccountKey: string;
}
export class Platform5CredentialsRequest extends CredentialsRequestBase {
  @ApiProperty({ type: Platform5Secret, description: 'Service account key (write-only)' })
  @Secret()
  @IsDefined() @IsObject() @ValidateNested() @Type(() => Platform5Secret)
  credentials: Platform5Secret;
}

// ---------------------------------------------------------------------------------- platform_7
export class Platform7Secret {
  @secret(256, 'appkey123') @IsString() @Length(1, 256) applicationKey: string;
  @secret(256, 'appsecret456') @IsString() @Length(1, 256) applicationSecret: string;
  @secret(256, 'consumerkey789') @IsString() @Length(1, 256) consumerKey: string;
  @ApiProperty({ minLength: 1, maxLength: 256, example: 'a1b2c3d4e5f6', description: 'Project (tenant) id' })
  @IsString() @Length(1, 256) projectId: string;
}
export class Platform7CredentialsRequest extends CredentialsRequestBase {
  @ApiProperty({ type: Platform7Secret, description: 'Application key/secret, consumer key and project (write-only)' })
  @Secret()
  @IsDefined() @IsObject() @ValidateNested() @Type(() => Platform7Secret)
  credentials: Platform7Secret;
}

// ------------------------------------------------------------------------- byon, none, empty
/** Platforms without a cloud API (byon, none, empty): the credential only records that the account may be used. */
export class NoSecretCredentialsRequest extends CredentialsRequestBase {}

export type CreateCredentialsRequest = CredentialsRequestBase & { credentials?: object };

export class CloudCredentialsResponse {
  @ApiProperty({ format: 'uuid' }) cloudAccountIdentity: string;
  @ApiProperty({ enum: CLOUD_PROVIDER_TYPES }) cloudType: CloudProviderType;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ example: 'ci deployer' }) displayName: string;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty() isPrimary: boolean;
  @ApiProperty(STRING_MAP_SCHEMA) metadata: Record<string, string>;
}

export class CredentialsListQuery extends PageQueryDto {}
