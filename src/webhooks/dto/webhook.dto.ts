import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, IsBoolean, IsOptional, IsString, MaxLength, ValidateBy } from 'class-validator';
import { OUTBOUND_MAX_URL_LENGTH } from '../../common/outbound-policy';
import { Secret, SecretOptions } from '../../common/secret-fields';
import { WEBHOOK_EVENT_TYPES } from '../webhook-outbox';
import { ApiPartialUpdate } from '../../common/api-docs';

/** A receiver URL may carry a token in its query string: that part is sealed, and shown to ADMIN and above only. */
export const WEBHOOK_URL_SECRET: SecretOptions = { kind: 'url', readableFrom: 'ADMIN' };

export const MAX_WEBHOOK_EVENT_TYPES = 50;
export const MAX_WEBHOOKS_PER_ORGANISATION = 25;
/** Pings one subscription may be sent within PING_WINDOW_SECONDS (over all replicas: counted in the database). */
export const MAX_PINGS_PER_SUBSCRIPTION = 5;
export const PING_WINDOW_SECONDS = 60;
export const WEBHOOK_DELIVERY_STATUSES = ['PENDING', 'DELIVERED', 'FAILED'] as const;

/** `eventTypes` holds `*` or known event types only (a misspelt type would never deliver). */
function IsKnownEventTypes() {
  const known = new Set(['*', ...WEBHOOK_EVENT_TYPES]);
  return ValidateBy({
    name: 'isKnownEventTypes',
    validator: {
      validate: (value: unknown) => Array.isArray(value) && value.every((v) => typeof v === 'string' && known.has(v)),
      defaultMessage: (args) => {
        const unknown = Array.isArray(args?.value) ? args.value.filter((v) => typeof v !== 'string' || !known.has(v)).map(String).slice(0, 5) : [];
        return `eventTypes holds unknown event types (${unknown.join(', ')}); use "*" or any of: ${WEBHOOK_EVENT_TYPES.join(', ')}`;
      },
    },
  });
}
const EVENT_TYPE_ITEMS = { type: 'string', enum: ['*', ...WEBHOOK_EVENT_TYPES] };

const EVENT_TYPES_DOC =
  'Event types to deliver, or ["*"] for all (an unknown type is 400 listing the known ones). Every audit event type of the organisation (e.g. CLUSTER_CREATED, ' +
  'CLUSTER_UPDATED, MAINTENANCE_SCHEDULE_UPDATED, SCHEDULED_CLUSTER_UPGRADE_FAILED), plus SCHEDULED_CLUSTER_UPGRADE_ANNOUNCED ' +
  '(an upgrade announced ahead of its window), CLUSTER_STATUS_CHANGED (any status change, with data.details.status {old, new}), ' +
  'ALERT_FIRING and ALERT_RESOLVED (one per alert that changed, from the alert webhook), and CLUSTER_POLICY_VIOLATED (a change that violated a cluster policy in Audit mode).';

export class CreateWebhookRequest {
  @ApiProperty({
    example: 'https://hooks.example.com/cluster-events',
    maxLength: OUTBOUND_MAX_URL_LENGTH,
    description: 'http or https; must not point to an internal address (checked now and again at every delivery)',
  })
  @Secret(WEBHOOK_URL_SECRET)
  @IsString() @MaxLength(OUTBOUND_MAX_URL_LENGTH)
  url: string;

  @ApiPropertyOptional({ example: 'Upgrade announcements to the platform channel', maxLength: 255, default: '' })
  @IsOptional() @IsString() @MaxLength(255)
  description?: string;

  @ApiProperty({
    description: EVENT_TYPES_DOC,
    example: ['SCHEDULED_CLUSTER_UPGRADE_ANNOUNCED', 'CLUSTER_STATUS_CHANGED'],
    type: [String],
    minItems: 1,
    maxItems: MAX_WEBHOOK_EVENT_TYPES,
    uniqueItems: true,
    items: EVENT_TYPE_ITEMS,
  })
  @IsArray() @ArrayMinSize(1) @ArrayMaxSize(MAX_WEBHOOK_EVENT_TYPES) @ArrayUnique()
  @IsString({ each: true }) @IsKnownEventTypes()
  eventTypes: string[];

  @ApiPropertyOptional({ default: true, description: 'false keeps the subscription but delivers nothing (events are not recorded for it)' })
  @IsOptional() @IsBoolean()
  enabled?: boolean;
}

@ApiPartialUpdate()
export class UpdateWebhookRequest {
  @ApiPropertyOptional({ example: 'https://hooks.example.com/cluster-events', maxLength: OUTBOUND_MAX_URL_LENGTH })
  @Secret(WEBHOOK_URL_SECRET)
  @IsOptional() @IsString() @MaxLength(OUTBOUND_MAX_URL_LENGTH)
  url?: string;

  @ApiPropertyOptional({ maxLength: 255 })
  @IsOptional() @IsString() @MaxLength(255)
  description?: string;

  @ApiPropertyOptional({
    description: EVENT_TYPES_DOC,
    type: [String],
    minItems: 1,
    maxItems: MAX_WEBHOOK_EVENT_TYPES,
    uniqueItems: true,
    items: EVENT_TYPE_ITEMS,
  })
  @IsOptional() @IsArray() @ArrayMinSize(1) @ArrayMaxSize(MAX_WEBHOOK_EVENT_TYPES) @ArrayUnique()
  @IsString({ each: true }) @IsKnownEventTypes()
  eventTypes?: string[];

  @ApiPropertyOptional({ description: 'true re-enables a subscription the service disabled after 3 days of failures' })
  @IsOptional() @IsBoolean()
  enabled?: boolean;
}

export class WebhookResponse {
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty({ example: 'https://hooks.example.com/cluster-events' })
  @Secret(WEBHOOK_URL_SECRET)
  url: string;
  @ApiProperty({ example: 'Upgrade announcements to the platform channel' }) description: string;
  @ApiProperty({ type: [String], example: ['SCHEDULED_CLUSTER_UPGRADE_ANNOUNCED'] }) eventTypes: string[];
  @ApiProperty() enabled: boolean;
  @ApiProperty({ type: 'string', nullable: true, description: 'Why the service disabled the subscription, if it did' })
  disabledReason: string | null;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, description: 'Start of the current run of failed deliveries' })
  failingSince: string | null;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true }) secretRotatedAt: string | null;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, description: 'Until then the previous secret also signs' })
  previousSecretExpiresAt: string | null;
  @ApiProperty({ example: 'alice' }) createdBy: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) modifiedAt: string;
}

export class WebhookWithSecretResponse extends WebhookResponse {
  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'The signing secret (Standard Webhooks format). Store it now.',
  })
  @Secret({ shownOnce: true })
  secret: string;
}

export class WebhookDeliveryResponse {
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty({ format: 'uuid', description: 'The event id: the `webhook-id` header and the CloudEvents `id` (the same on every retry)' })
  eventId: string;
  @ApiProperty({ example: 'CLUSTER_STATUS_CHANGED' }) eventType: string;
  @ApiProperty({ enum: WEBHOOK_DELIVERY_STATUSES }) status: string;
  @ApiProperty({ type: 'integer', minimum: 0 }) attempts: number;
  @ApiProperty({ type: 'integer', nullable: true, example: 200 }) lastResponseCode: number | null;
  @ApiProperty({ type: 'string', nullable: true }) lastError: string | null;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true }) lastAttemptAt: string | null;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, description: 'When the next attempt is due (PENDING only)' })
  nextAttemptAt: string | null;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true }) deliveredAt: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}
