import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsObject, IsOptional, IsString, IsUUID, Length } from 'class-validator';
import { ORGANISATION_INTEGRATION_TYPES } from '../organisation-integration.entity';

export const INTEGRATION_CONFIG_MAX_KEYS = 50;
export const INTEGRATION_CONFIG_MAX_KEY = 128;
export const INTEGRATION_CONFIG_MAX_VALUE = 4096;

export class UpdateOrganisationIntegrationRequest {
  @ApiProperty({ format: 'uuid', description: 'Must equal the identity in the path' })
  @IsUUID()
  organisationIntegrationIdentity: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 255, example: 'Alerting' })
  @IsOptional() @IsString() @Length(1, 255)
  displayName?: string;

  @ApiPropertyOptional() @IsOptional() @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string', maxLength: INTEGRATION_CONFIG_MAX_VALUE },
    maxProperties: INTEGRATION_CONFIG_MAX_KEYS,
    description: `String map replacing the configuration; at most ${INTEGRATION_CONFIG_MAX_KEYS} keys of up to ${INTEGRATION_CONFIG_MAX_KEY} characters, values up to ${INTEGRATION_CONFIG_MAX_VALUE}`,
  })
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
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) config: Record<string, string>;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) modifiedAt: string;
  @ApiProperty({ type: [ClusterUsingIntegration] }) clustersUsingIntegration: ClusterUsingIntegration[];
}
