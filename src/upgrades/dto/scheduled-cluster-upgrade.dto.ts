import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ApiPartialUpdate } from '../../common/api-docs';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsDateString, IsIn, IsOptional, IsString, IsUUID, Length, Matches, MaxLength } from 'class-validator';
import { PageQueryDto } from '../../common/paging';
import { SCHEDULED_UPGRADE_STATUSES, ScheduledUpgradeStatus } from '../scheduled-cluster-upgrade.entity';

/** Repeatable and comma-separated: ?x=a&x=b,c -> [a, b, c]. */
const toList = ({ value }: { value: unknown }) => {
  if (value === undefined) return undefined;
  const raw = Array.isArray(value) ? value : [value];
  return raw
    .flatMap((v) => (typeof v === 'string' ? v.split(',') : [v]))
    .map((v) => (typeof v === 'string' ? v.trim() : v))
    .filter((v) => v !== '');
};

/**
 * The original Go client's status constants that this service names differently, read as their counterparts in a
 * `statuses` filter: `REQUESTED` (asked for, not yet started: here an upgrade is `SCHEDULED` when it is created) and
 * `IN_PROGRESS` (started: here `UPDATED`, the version requested from the cluster).
 */
export const ORIGINAL_UPGRADE_STATUS_ALIASES: Readonly<Record<string, ScheduledUpgradeStatus>> = Object.freeze({ REQUESTED: 'SCHEDULED', IN_PROGRESS: 'UPDATED' });

const toStatusList = (arg: { value: unknown }) =>
  toList(arg)?.map((v) => (typeof v === 'string' && Object.hasOwn(ORIGINAL_UPGRADE_STATUS_ALIASES, v) ? ORIGINAL_UPGRADE_STATUS_ALIASES[v] : v));

const VERSION_PATTERN = /^[0-9]+\.[0-9]+\.[0-9]+([-+].+)?$/;

export class ScheduledClusterUpgradeQuery extends PageQueryDto {
  @ApiPropertyOptional({
    type: [String],
    format: 'uuid',
    maxItems: 100,
    description: 'Only upgrades of these clusters (at most 100); repeatable or comma-separated. Left out: every cluster',
  })
  @IsOptional() @Transform(toList) @IsArray() @ArrayMaxSize(100)
  @IsUUID('all', { each: true, message: 'clusterIdentities must hold cluster identities (UUIDs)' })
  clusterIdentities?: string[];

  @ApiPropertyOptional({
    enum: [...SCHEDULED_UPGRADE_STATUSES, ...Object.keys(ORIGINAL_UPGRADE_STATUS_ALIASES)],
    isArray: true,
    maxItems: SCHEDULED_UPGRADE_STATUSES.length,
    description:
      'Only upgrades in these statuses; repeatable or comma-separated. Left out: every status. The original Go ' +
      "client's `REQUESTED` and `IN_PROGRESS` are accepted as aliases of `SCHEDULED` and `UPDATED` (answers carry the " +
      "service's names)",
  })
  @IsOptional() @Transform(toStatusList) @IsArray() @ArrayMaxSize(SCHEDULED_UPGRADE_STATUSES.length)
  @IsIn(SCHEDULED_UPGRADE_STATUSES as unknown as string[], {
    each: true,
    message: `statuses must hold values of ${SCHEDULED_UPGRADE_STATUSES.join(', ')} (or the original clients' REQUESTED and IN_PROGRESS, read as SCHEDULED and UPDATED)`,
  })
  statuses?: string[];
}

export class ScheduledClusterUpgradeResponse {
  @ApiProperty({ format: 'uuid' }) clusterIdentity: string;
  @ApiProperty({ example: 'web' }) clusterSlug: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) modifiedAt: string;
  @ApiProperty({ example: 'production' }) environmentSlug: string;
  @ApiProperty({ example: '1.31.5' }) fromClusterVersion: string;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty({ example: 'acme' }) organisationSlug: string;
  @ApiProperty({ nullable: true, type: String, example: 'update channel stable moved to 1.31.6' }) reason: string | null;
  @ApiProperty({ enum: SCHEDULED_UPGRADE_STATUSES }) status: string;
  @ApiProperty({ example: '1.31.6' }) toClusterVersion: string;
  @ApiProperty({ format: 'date-time' }) windowEnd: string;
  @ApiProperty({ format: 'date-time' }) windowStart: string;
  @ApiProperty({ format: 'date-time', description: 'When the upgrade was requested (planned by the scheduler or created by an administrator)' })
  scheduleRequestDate: string;
  @ApiProperty({ description: "True when an administrator placed it outside the cluster's maintenance windows on purpose" })
  ignoreMaintenanceSchedule: boolean;
  @ApiProperty({
    nullable: true,
    type: String,
    example: 'upstream cluster production/staging failed its upgrade to 1.31.6 (upgrade 3f0c9a52-1b2e-4c8e-9d7a-6a1f0e2b4c11)',
    description:
      'Why the scheduler holds this upgrade. Rollout sequencing (its status stays SCHEDULED; it neither starts nor misses its ' +
      'window while held): the upstream cluster has not yet run the target version for the soak time, or its upgrade to it ' +
      'failed. A cluster policy (`policy <name>: <message>`, or `platform policy ...`): a Deny policy refused the upgrade when ' +
      'its window opened; it is evaluated again on each pass of the window and starts once no policy denies it, else the ' +
      'window ends in MISSED. null when not held. Kept on an upgrade that was closed (superseded, cancelled, missed) while held.',
  })
  blockedReason: string | null;
}

export class CreateScheduledClusterUpgradeRequest {
  @ApiProperty({ format: 'uuid' })
  @IsUUID('all', { message: 'clusterIdentity must be a UUID' })
  clusterIdentity: string;

  @ApiProperty({ example: '1.31.6', description: 'A cluster version of the catalog, newer than the cluster runs' })
  @IsString() @MaxLength(32) @Matches(VERSION_PATTERN, { message: 'toClusterVersion must look like 1.31.6' })
  toClusterVersion: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-24T02:00:00Z' })
  @MaxLength(64) @IsDateString({ strict: true }, { message: 'windowStart must be an ISO 8601 date-time' })
  windowStart: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-24T04:00:00Z', description: 'After windowStart, and in the future' })
  @MaxLength(64) @IsDateString({ strict: true }, { message: 'windowEnd must be an ISO 8601 date-time' })
  windowEnd: string;

  @ApiPropertyOptional({ maxLength: 500, example: 'security patch', description: 'Default: "scheduled by platform administrator <username>"' })
  @IsOptional() @IsString() @Length(1, 500, { message: 'reason must be 1 to 500 characters' })
  reason?: string;

  @ApiPropertyOptional({ example: '1.31.5', description: 'When given (the original admin client sends it), the version the cluster must run; 409 otherwise. Left out: not checked' })
  @IsOptional() @IsString() @MaxLength(32) @Matches(VERSION_PATTERN, { message: 'fromClusterVersion must look like 1.31.5' })
  fromClusterVersion?: string;

  @ApiPropertyOptional({
    default: false,
    description:
      "false: when the cluster has a maintenance schedule, the upgrade goes into its first window starting at or after windowStart; " +
      'true: it starts at windowStart regardless of the windows',
  })
  @IsOptional() @IsBoolean()
  ignoreMaintenanceSchedule?: boolean;
}

/** PUT of the original admin client: `{identity, status, reason}`. */
@ApiPartialUpdate()
export class AdminPutScheduledClusterUpgradeRequest {
  @ApiPropertyOptional({ format: 'uuid', description: 'When given, must be the identity in the path (400 otherwise)' })
  @IsOptional() @IsUUID('all', { message: 'identity must be a UUID' })
  identity?: string;

  @ApiPropertyOptional({
    enum: SCHEDULED_UPGRADE_STATUSES,
    description: 'Only CANCELLED may be set by hand (from SCHEDULED or SCHEDULED_NOTIFIED); the current status changes nothing; any other is 400',
  })
  @IsOptional() @IsIn(SCHEDULED_UPGRADE_STATUSES, { message: `status must be one of: ${SCHEDULED_UPGRADE_STATUSES.join(', ')}` })
  status?: ScheduledUpgradeStatus;

  @ApiPropertyOptional({ maxLength: 500, description: 'Replaces the reason; with status CANCELLED it is the reason of the cancellation' })
  @IsOptional() @IsString() @Length(1, 500, { message: 'reason must be 1 to 500 characters' })
  reason?: string;
}

/**
 * PATCH: the window and target of an upgrade that has not started, and everything the original admin client's
 * `UpdateScheduledClusterUpgradeRequest` sends (`identity`, `status`, `reason`, `version`). Every field either takes
 * effect or is refused; none is ignored.
 */
@ApiPartialUpdate()
export class UpdateScheduledClusterUpgradeRequest extends AdminPutScheduledClusterUpgradeRequest {
  @ApiPropertyOptional({ format: 'date-time', example: '2026-11-24T02:00:00Z' })
  @IsOptional() @MaxLength(64) @IsDateString({ strict: true }, { message: 'windowStart must be an ISO 8601 date-time' })
  windowStart?: string;

  @ApiPropertyOptional({ format: 'date-time', example: '2026-11-24T04:00:00Z', description: 'After windowStart' })
  @IsOptional() @MaxLength(64) @IsDateString({ strict: true }, { message: 'windowEnd must be an ISO 8601 date-time' })
  windowEnd?: string;

  // The demo upgrade's target (its cluster runs 1.31.6), so PUT and PATCH work on a fresh install as they are.
  @ApiPropertyOptional({ example: '1.32.1', maxLength: 32 })
  @IsOptional() @IsString() @MaxLength(32) @Matches(VERSION_PATTERN, { message: 'toClusterVersion must look like 1.31.6' })
  toClusterVersion?: string;

  @ApiPropertyOptional({
    example: '1.32.1',
    maxLength: 32,
    description: "The original admin client's name for toClusterVersion; when both are given they must be equal (400 otherwise)",
  })
  @IsOptional() @IsString() @MaxLength(32) @Matches(VERSION_PATTERN, { message: 'version must look like 1.31.6' })
  version?: string;
}
