import { ApiProperty } from '@nestjs/swagger';
import { Secret } from '../../common/secret-fields';

export class ObservabilityTenantClusterRef {
  @ApiProperty({ example: 'production' }) environmentSlug: string;
  @ApiProperty({ type: 'integer', format: 'int64' }) id: number;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty({ example: 'web' }) name: string;
  @ApiProperty({ example: 'web' }) slug: string;
  @ApiProperty({ example: '1.30.2' }) version: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) deletedAt: string | null;
}

export class ObservabilityTenantEnvironmentRef {
  @ApiProperty({ type: 'integer', format: 'int64' }) id: number;
  @ApiProperty({ example: 'Production' }) name: string;
  @ApiProperty({ example: 'production' }) slug: string;
}

export class ObservabilityTenant {
  @ApiProperty() available: boolean;
  @ApiProperty({ type: ObservabilityTenantClusterRef, nullable: true }) cluster: ObservabilityTenantClusterRef | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) modifiedAt: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) deletedAt: string | null;
  @ApiProperty({ description: 'Slug of the owning organisation', example: 'acme' }) customer: string;
  @ApiProperty({ type: ObservabilityTenantEnvironmentRef, nullable: true }) environment: ObservabilityTenantEnvironmentRef | null;
  @ApiProperty({ type: 'integer', format: 'int64' }) id: number;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty({ nullable: true, type: String, example: '203.0.113.0/24' }) ipWhiteList: string | null;
  @ApiProperty({ example: 'production-web' }) name: string;
  @ApiProperty({ example: 'production-web', description: '`{environmentSlug}-{clusterSlug}`' }) slug: string;
}

export class ObservabilityTenantWithPushUrls extends ObservabilityTenant {
  @ApiProperty({
    example: 'https://observability.example.com/metrics/v1/acme/production-web/push',
    description: '`${OBSERVABILITY_PUSH_BASE_URL}/metrics/v1/{organisationSlug}/{tenantSlug}/push`',
  })
  monitoringPushUrl: string;
  @ApiProperty({
    example: 'https://observability.example.com/logs/v1/acme/production-web/push',
    description: '`${OBSERVABILITY_PUSH_BASE_URL}/logs/v1/{organisationSlug}/{tenantSlug}/push`',
  })
  loggingPushUrl: string;
}

export class CountResponse {
  @ApiProperty({ type: 'integer', format: 'int64', example: 3 }) count: number;
}

export class AlertWebhookTokenResponse {
  @ApiProperty({ description: 'The tenant webhook token; only its SHA-256 is stored. A new call replaces it.' })
  @Secret({ shownOnce: true })
  token: string;
  @ApiProperty({
    example: '/api/v1/observability/production-web/alerts/webhook',
    description: 'Path of the webhook on this service; send `Authorization: Bearer <token>` (or `X-Alert-Token: <token>`)',
  })
  url: string;
}
