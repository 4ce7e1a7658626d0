import { ApiProperty } from '@nestjs/swagger';
import { CLOUD_PROVIDER_TYPES, PRIVATE_CLUSTER_SETTINGS } from '../cloud-provider.entity';

const STRING_MAP = { type: 'object', additionalProperties: { type: 'string' } } as const;

export class CloudProviderResponse {
  @ApiProperty() available: boolean;
  @ApiProperty() byon: boolean;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) modifiedAt: string;
  @ApiProperty({ type: 'integer', format: 'int64' }) id: number;
  @ApiProperty({ example: 'https://static.example.com/logos/platform-1.svg' }) logo: string;
  @ApiProperty({ ...STRING_MAP, example: { tier: 'hyperscaler' } }) metadata: Record<string, string>;
  @ApiProperty({ example: 'Platform 1' }) name: string;
  @ApiProperty({ enum: PRIVATE_CLUSTER_SETTINGS }) privateClusterSetting: string;
  @ApiProperty({ example: 'platform_1' }) slug: string;
  @ApiProperty({ enum: CLOUD_PROVIDER_TYPES, description: 'Provider type value' }) type: string;
}

export class CloudProviderNodeTypeResponse {
  @ApiProperty({ type: 'integer', format: 'int64', description: 'Cores', example: 4 }) cpu: number;
  @ApiProperty({ type: 'integer', format: 'int64', description: 'MiB', example: 16384 }) memory: number;
  @ApiProperty({ example: 'm5.xlarge' }) type: string;
}

export class CloudProviderRegionResponse {
  @ApiProperty({ description: 'False when the region takes no new clusters' }) available: boolean;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) modifiedAt: string;
  @ApiProperty({ type: 'integer', format: 'int64' }) id: number;
  @ApiProperty({ example: 'Frankfurt (EU Central 1)' }) name: string;
  @ApiProperty({ enum: CLOUD_PROVIDER_TYPES, description: 'Type value of the region\'s provider' }) provider: string;
  @ApiProperty({ description: 'Hidden from organisations restricted to available cloud providers' }) restricted: boolean;
  @ApiProperty({ example: 'eu-central-1' }) slug: string;
}

export class CloudProviderRegionAvailabilityZoneResponse {
  @ApiProperty({ enum: CLOUD_PROVIDER_TYPES, description: 'Type value of the zone\'s provider' }) cloudProviderValue: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) modifiedAt: string;
  @ApiProperty({ type: 'integer', format: 'int64' }) id: number;
  @ApiProperty({ example: 'eu-central-1a' }) name: string;
  @ApiProperty({ example: 'eu-central-1a' }) slug: string;
}

export class CloudProfileResponse {
  @ApiProperty({ enum: CLOUD_PROVIDER_TYPES, description: 'Type value of the profile\'s provider' }) cloudProvider: string;
  @ApiProperty({ type: [CloudProviderRegionResponse] }) cloudProviderRegionResponses: CloudProviderRegionResponse[];
  @ApiProperty({ type: CloudProviderResponse }) cloudProviderResponse: CloudProviderResponse;
  @ApiProperty({ example: 'Platform 1 (public)' }) displayName: string;
  @ApiProperty() enabled: boolean;
  @ApiProperty({ example: '2b7e1f0a-5c3d-4e8f-a1b2-6d9c4e7f8a10' }) identity: string;
  @ApiProperty(STRING_MAP) metadata: Record<string, string>;
  @ApiProperty() public: boolean;
  @ApiProperty({ type: [String], description: 'Region slugs offered by the profile', example: ['eu-central-1', 'eu-west-1'] }) regions: string[];
  @ApiProperty({ enum: CLOUD_PROVIDER_TYPES }) type: string;
}

/** PlatformKubernetesVersionResponse (docs/conventions.md, "Catalog"). */
export class PlatformKubernetesVersionResponse {
  @ApiProperty({ example: '1.31.6', description: 'Semver of the platform version' }) version: string;
  @ApiProperty({ example: 'v1.31.6' }) kubernetesVersion: string;
  @ApiProperty({ description: 'False when new clusters, upgrades and downgrades may not use it' }) available: boolean;
  @ApiProperty({ example: 'Stable channel' }) note: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) modifiedAt: string;
}

/** A cluster version as platform administrators see it. */
export class AdminClusterVersionResponse extends PlatformKubernetesVersionResponse {
  @ApiProperty({ type: 'integer', format: 'int64', description: 'Non-deleted clusters running or wanting this version' })
  clusterCount: number;
}

export class UpdateChannelResponse {
  @ApiProperty() available: boolean;
  @ApiProperty({ example: '1.31.6' }) kubernetesClusterVersion: string;
  @ApiProperty({ example: 'stable' }) name: string;
}
