import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDefined, IsOptional, IsString, Length, Matches, MaxLength } from 'class-validator';
import { DASHBOARD_INTEGRATION_STATUSES } from '../dashboard-integration.entity';
import { OUTBOUND_MAX_URL_LENGTH } from '../../common/outbound-policy';
import { Secret } from '../../common/secret-fields';
import { IsPlainText } from '../../common/names';

export class CreateDashboardIntegrationRequest {
  @ApiPropertyOptional({
    minLength: 1,
    maxLength: 4096,
    description: 'API token of the dashboard. No default: the service signs in to the dashboard with it, so leaving it out is refused with 400 naming it.',
  })
  @Secret()
  @IsDefined({ message: 'apiToken is required: the service signs in to the dashboard with it' })
  @IsString() @Length(1, 4096)
  apiToken: string;

  @ApiPropertyOptional({ maxLength: 63, example: 'acme-', description: 'Prefix of the data sources the service manages. Default: none (null)' })
  @IsOptional() @IsString() @MaxLength(63) @Matches(/^[A-Za-z0-9._-]*$/, { message: 'datasourcePrefix may hold letters, digits, ".", "_" and "-" only' })
  datasourcePrefix?: string;

  @ApiPropertyOptional({
    minLength: 1,
    maxLength: 255,
    example: 'Team dashboards',
    description: "Its slug (unique in the organisation) is derived from it. Default: the host name of `url` (e.g. dashboards.acme.example)",
  })
  @IsOptional() @IsString() @Length(1, 255)
  @IsPlainText()
  name?: string;

  @ApiPropertyOptional({
    maxLength: OUTBOUND_MAX_URL_LENGTH,
    format: 'uri',
    example: 'https://dashboards.example.com',
    description:
      'http(s) URL without credentials, resolving to public addresses only (outbound policy). No default: the dashboard ' +
      'to connect to; leaving it out is refused with 400 naming it.',
  })
  @IsDefined({ message: 'url is required: the address of the dashboard' })
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
