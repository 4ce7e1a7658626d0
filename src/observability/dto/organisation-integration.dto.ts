import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ApiPartialUpdate } from '../../common/api-docs';
import { IsBoolean, IsObject, IsOptional, IsString, IsUUID, Length } from 'class-validator';
import { Secret, SecretOptions } from '../../common/secret-fields';
import { ORGANISATION_INTEGRATION_TYPES } from '../organisation-integration.entity';
import { IsPlainText } from '../../common/names';

export const INTEGRATION_CONFIG_MAX_KEYS = 50;
export const INTEGRATION_CONFIG_MAX_KEY = 128;
export const INTEGRATION_CONFIG_MAX_VALUE = 4096;

/**
 * Keys of an integration's `config` whose values are settings, not credentials. Every other key is secret (an
 * allow-list: the product's credential names are not known in advance, these settings are few).
 */
export const INTEGRATION_CONFIG_PUBLIC_KEYS = ['channel', 'region', 'site', 'team', 'environment', 'priority', 'tags'] as const;

/** `config` values are credentials of the alerting product (API keys, tokens): ADMIN and above read them. */
export const INTEGRATION_CONFIG_SECRET: SecretOptions = { kind: 'map', readableFrom: 'ADMIN', publicKeys: INTEGRATION_CONFIG_PUBLIC_KEYS };

@ApiPartialUpdate()
export class UpdateOrganisationIntegrationRequest {
  @ApiProperty({ format: 'uuid', description: 'Must equal the identity in the path' })
  @IsUUID()
  organisationIntegrationIdentity: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 255, example: 'Alerting' })
  @IsOptional() @IsString() @Length(1, 255)
  @IsPlainText()
  displayName?: string;

  @ApiPropertyOptional() @IsOptional() @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string', maxLength: INTEGRATION_CONFIG_MAX_VALUE },
    maxProperties: INTEGRATION_CONFIG_MAX_KEYS,
    description: `String map replacing the configuration; at most ${INTEGRATION_CONFIG_MAX_KEYS} keys of up to ${INTEGRATION_CONFIG_MAX_KEY} characters, values up to ${INTEGRATION_CONFIG_MAX_VALUE}`,
  })
  @Secret(INTEGRATION_CONFIG_SECRET)
  @IsOptional() @IsObject()
  config?: Record<string, string>;
}

export class ClusterUsingIntegration {
  @ApiProperty({ format: 'uuid' }) clusterIdentity: string;
  @ApiProperty() enabled: boolean;
  @ApiProperty() environmentSlug: string;
  @ApiProperty() clusterSlug: string;
  @ApiProperty() clusterName: string;
}

export class OrganisationIntegrationResponse {
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty({ enum: ORGANISATION_INTEGRATION_TYPES }) type: string;
  @ApiProperty() displayName: string;
  @ApiProperty() enabled: boolean;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } })
  @Secret(INTEGRATION_CONFIG_SECRET)
  config: Record<string, string>;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) modifiedAt: string;
  @ApiProperty({ type: [ClusterUsingIntegration] }) clustersUsingIntegration: ClusterUsingIntegration[];
}
