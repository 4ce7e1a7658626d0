import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Length, Matches, MaxLength } from 'class-validator';
import { DASHBOARD_INTEGRATION_STATUSES } from '../dashboard-integration.entity';
import { OUTBOUND_MAX_URL_LENGTH } from '../../common/outbound-policy';
import { Secret } from '../../common/secret-fields';
import { IsPlainText } from '../../common/names';

export class CreateDashboardIntegrationRequest {
  @ApiProperty({ minLength: 1, maxLength: 4096, description: 'API token of the dashboard' })
  @Secret()
  @IsString() @Length(1, 4096)
  apiToken: string;

  @ApiPropertyOptional({ maxLength: 63, example: 'acme-', description: 'Prefix of the data sources the service manages' })
  @IsOptional() @IsString() @MaxLength(63) @Matches(/^[A-Za-z0-9._-]*$/, { message: 'datasourcePrefix may hold letters, digits, ".", "_" and "-" only' })
  datasourcePrefix?: string;

  @ApiProperty({ minLength: 1, maxLength: 255, example: 'Team dashboards', description: 'Its slug (unique in the organisation) is derived from it' })
  @IsString() @Length(1, 255)
  @IsPlainText()
  name: string;

  @ApiProperty({
    maxLength: OUTBOUND_MAX_URL_LENGTH,
    format: 'uri',
    example: 'https://dashboards.example.com',
    description: 'http(s) URL without credentials, resolving to public addresses only (outbound policy)',
  })
  @IsString() @Length(1, OUTBOUND_MAX_URL_LENGTH)
  url: string;
}

export class DashboardIntegrationResponse {
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) modifiedAt: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) deletedAt: string | null;
  @ApiProperty({ description: 'Slug of the owning organisation' }) customer: string;
  @ApiProperty({ nullable: true, type: String }) datasourcePrefix: string | null;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty() manageDatasources: boolean;
  @ApiProperty() name: string;
  @ApiProperty() provisionUsers: boolean;
  @ApiProperty() slug: string;
  @ApiProperty({ enum: DASHBOARD_INTEGRATION_STATUSES, description: 'PENDING until the first health check, then CONNECTED or ERROR' })
  status: string;
  @ApiProperty({ nullable: true, type: String, description: 'Why the status is what it is' }) statusMessage: string | null;
  @ApiProperty() url: string;
}
