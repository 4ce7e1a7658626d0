import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { boundedStringMapSchema, IsBoundedStringMap } from '../../common/bounds';
import { TENANT_ALERT_STATUSES } from '../tenant-alert.entity';

export const WEBHOOK_MAX_ALERTS = 1000;

const stringMap = {
  type: 'object',
  additionalProperties: { type: 'string' },
} as const;

/** Labels and annotations as the alert manager sends them: bounded, far above what real alerts carry. */
export const ALERT_MAP_MAX_ENTRIES = 128;
export const ALERT_MAP_MAX_KEY = 256;
export const ALERT_MAP_MAX_VALUE = 16384;
const alertMap = boundedStringMapSchema(ALERT_MAP_MAX_ENTRIES, ALERT_MAP_MAX_VALUE);
const IsAlertMap = () => IsBoundedStringMap(ALERT_MAP_MAX_ENTRIES, ALERT_MAP_MAX_KEY, ALERT_MAP_MAX_VALUE);

/** An alert-manager field the service accepts and does not use. */
const UNUSED = "Alertmanager's field; the service does not use it, so it may be left out";

/** One alert of the alert-manager webhook payload. */
export class WebhookAlertDto {
  @ApiProperty({ enum: TENANT_ALERT_STATUSES }) @IsIn(TENANT_ALERT_STATUSES as unknown as string[])
  status: 'firing' | 'resolved';

  @ApiProperty({ ...alertMap, example: { alertname: 'NodeDown', severity: 'critical' } }) @IsObject() @IsAlertMap()
  labels: Record<string, string>;

  @ApiPropertyOptional({ ...alertMap, example: { summary: 'Node is down' }, default: {} }) @IsOptional() @IsObject() @IsAlertMap()
  annotations?: Record<string, string>;

  @ApiProperty({ format: 'date-time', maxLength: 64 }) @IsString() @MaxLength(64)
  startsAt: string;

  @ApiPropertyOptional({ format: 'date-time', description: '0001-01-01T00:00:00Z (the zero time) means not ended. Left out: not ended while firing, the time of the call when resolved' })
  @IsOptional() @IsString() @MaxLength(64)
  endsAt?: string;

  @ApiPropertyOptional({ description: 'Identifies the alert; derived from the labels when absent', maxLength: 128 })
  @IsOptional() @IsString() @Length(1, 128)
  fingerprint?: string;

  @ApiPropertyOptional({ maxLength: 4096, description: UNUSED }) @IsOptional() @IsString() @MaxLength(4096)
  generatorURL?: string;
}

/** The common alert-manager webhook JSON (version 4). */
export class AlertManagerWebhookDto {
  @ApiProperty({ example: '4' }) @IsString() @MaxLength(16)
  version: string;
  @ApiPropertyOptional({ description: UNUSED }) @IsOptional() @IsString() @MaxLength(4096)
  groupKey?: string;
  @ApiPropertyOptional({ type: 'integer', format: 'int32', minimum: 0, maximum: 2147483647, description: UNUSED }) @IsOptional() @IsInt() @Min(0) @Max(2147483647)
  truncatedAlerts?: number;
  @ApiProperty({ enum: TENANT_ALERT_STATUSES }) @IsIn(TENANT_ALERT_STATUSES as unknown as string[])
  status: 'firing' | 'resolved';
  @ApiProperty() @IsString() @MaxLength(255)
  receiver: string;
  @ApiPropertyOptional({ ...alertMap, description: UNUSED }) @IsOptional() @IsObject() @IsAlertMap()
  groupLabels?: Record<string, string>;
  @ApiPropertyOptional({ ...alertMap, description: UNUSED }) @IsOptional() @IsObject() @IsAlertMap()
  commonLabels?: Record<string, string>;
  @ApiPropertyOptional({ ...alertMap, description: UNUSED }) @IsOptional() @IsObject() @IsAlertMap()
  commonAnnotations?: Record<string, string>;
  @ApiPropertyOptional({ description: UNUSED }) @IsOptional() @IsString() @MaxLength(4096)
  externalURL?: string;
  @ApiProperty({ type: [WebhookAlertDto], maxItems: WEBHOOK_MAX_ALERTS })
  @IsArray() @ArrayMaxSize(WEBHOOK_MAX_ALERTS) @ValidateNested({ each: true }) @Type(() => WebhookAlertDto)
  alerts: WebhookAlertDto[];
}

export class WebhookReceivedResponse {
  @ApiProperty({ example: 'Received 2 alerts' }) message: string;
  @ApiProperty({ type: 'integer' }) firing: number;
  @ApiProperty({ type: 'integer' }) resolved: number;
}

export class TenantAlert {
  @ApiProperty({ example: '5f1c2a9e0b7d3c41' }) fingerprint: string;
  @ApiProperty({ enum: TENANT_ALERT_STATUSES, description: 'As the alert manager reported it' }) status: string;
  @ApiProperty({ enum: ['firing', 'suppressed', 'resolved'], description: 'firing, suppressed by an active silence, or resolved' })
  state: string;
  @ApiProperty({ type: [String], description: 'Identities of the active silences that mute this alert' }) silencedBy: string[];
  @ApiProperty(stringMap) labels: Record<string, string>;
  @ApiProperty(stringMap) annotations: Record<string, string>;
  @ApiProperty({ format: 'date-time' }) startsAt: string;
  @ApiProperty({ format: 'date-time', description: 'When the alert became active (same as startsAt)' }) activeAt: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) endsAt: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'The `value` annotation, when the rule sets one' }) value: string | null;
}

/**
 * One item of the organisation's alert list (the interface's `Alerts`, whose fields it leaves open): one alert in
 * the shape the original client's `ObservabilityAlert` decodes (labels, annotations, state, activeAt, value),
 * with the tenant, cluster and environment it belongs to.
 */
export class Alerts extends TenantAlert {
  @ApiProperty({ example: 'production-web' }) tenantSlug: string;
  @ApiProperty({ nullable: true, type: String, example: 'web' }) clusterSlug: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'production' }) environmentSlug: string | null;
}

/** How many alerts of one monitoring tenant are in each state (every tenant, also those without alerts). */
export class TenantAlertCounts {
  @ApiProperty({ example: 'production-web' }) tenantSlug: string;
  @ApiProperty({ nullable: true, type: String, example: 'web' }) clusterSlug: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'production' }) environmentSlug: string | null;
  @ApiProperty({ type: 'integer', description: 'Alerts firing and not muted by an active silence' }) firing: number;
  @ApiProperty({ type: 'integer', description: 'Firing alerts muted by an active silence' }) suppressed: number;
  @ApiProperty({ type: 'integer', description: 'Resolved alerts still kept' }) resolved: number;
}
