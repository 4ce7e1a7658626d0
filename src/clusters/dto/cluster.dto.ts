import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  IsUUID,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
  ValidateBy,
} from 'class-validator';
import { PageQueryDto } from '../../common/paging';
import {
  CLUSTER_DESIRED_STATUSES,
  CLUSTER_STATUSES,
  CNI_TYPES,
  POD_SECURITY_STANDARDS_PROFILES,
  PROVISION_STATUSES,
  AUTO_UPGRADE_POLICIES,
  AutoUpgradePolicy,
} from '../cluster.entity';
import {
  ExclusionsField,
  ExclusionsResponseField,
  MaintenanceExclusionRequest,
  MaintenanceExclusionResponse,
} from '../../maintenance/dto/maintenance-exclusion.dto';
import { ConditionDto, CreateClusterNodePoolDto } from './node-pool.dto';
import { IsAddonMap, IsCidr, QueryBoolean } from './validators';
import { IsPlainText } from '../../common/names';
import { ApiPartialUpdate } from '../../common/api-docs';

const DURATION = /^[0-9]+(\.[0-9]+)?(ms|s|m|h)$/;
const DURATION_MSG = 'must be a duration such as 10m, 30s or 1h';


/** `""` is `null`: the original Terraform provider sends an empty string for a reference it does not set. */
function EmptyStringIsNull() {
  return Transform(({ value }) => (value === '' ? null : value));
}

/**
 * One of the interface's profiles; any letter case is accepted (the original Terraform provider sends
 * `PRIVILEGED`) and stored and answered in the interface's lower case.
 */
function PodSecurityStandardsProfileField(whenLeftOut: string) {
  return applyDecorators(
    ApiPropertyOptional({ enum: POD_SECURITY_STANDARDS_PROFILES, description: `Any letter case is accepted; answered in lower case. ${whenLeftOut}` }),
    IsOptional(),
    Transform(({ value }) => (typeof value === 'string' ? value.toLowerCase() : value)),
    IsIn(POD_SECURITY_STANDARDS_PROFILES),
  );
}

export class IpRangeDto {
  @ApiPropertyOptional({
    example: '10.244.0.0/16',
    maxLength: 43,
    description:
      'A CIDR (IPv4 or IPv6). As a subnet, an IPRange without it is the same as no IPRange (the default subnet); ' +
      'as the `cidr` of an ipWhitelist entry it has no default and leaving it out is 400 naming it.',
  })
  @IsOptional() @IsString() @MaxLength(43) @IsCidr()
  ipRange: string;
}

/** A subnet IPRange without `ipRange` (`{}`) is no subnet: the service's default one. */
const EmptyIpRangeIsAbsent = () =>
  Transform(({ value }) => (value && typeof value === 'object' && !Array.isArray(value) && (value as IpRangeDto).ipRange === undefined ? undefined : value));

/** The `cidr` of an ipWhitelist entry must name its range. */
function HasIpRange() {
  return ValidateBy({
    name: 'hasIpRange',
    validator: {
      validate: (v: unknown) => !!v && typeof v === 'object' && typeof (v as IpRangeDto).ipRange === 'string',
      defaultMessage: () => 'cidr.ipRange is required: the CIDR the entry allows',
    },
  });
}

export class IpWhitelistRequestDto {
  @ApiProperty({ type: IpRangeDto, description: 'An IPRange; the CIDR string itself (as answered in ClusterResponse) is accepted too' })
  @Transform(({ value }) => (typeof value === 'string' ? Object.assign(new IpRangeDto(), { ipRange: value }) : value))
  @HasIpRange() @ValidateNested() @Type(() => IpRangeDto)
  cidr: IpRangeDto;

  @ApiProperty({ example: 'office', maxLength: 255 })
  @IsString() @MaxLength(255)
  description: string;
}

/** The optional `autoUpgradePolicy` of cluster create and update. */
const AutoUpgradePolicyField = () =>
  applyDecorators(
    ApiPropertyOptional({
      enum: AUTO_UPGRADE_POLICIES,
      default: 'PATCH_AND_MINOR',
      description: 'PATCH_ONLY limits auto-upgrades to patch versions of the minor the cluster runs',
    }),
    IsOptional(),
    IsIn(AUTO_UPGRADE_POLICIES, { message: `autoUpgradePolicy must be one of: ${AUTO_UPGRADE_POLICIES.join(', ')}` }),
  );

/** ipWhitelist items: {cidr, description}, or the CIDR string alone (description empty). */
const LenientIpWhitelist = () =>
  Transform(({ value }) =>
    Array.isArray(value)
      ? value.map((item) =>
          typeof item === 'string'
            ? Object.assign(new IpWhitelistRequestDto(), { cidr: Object.assign(new IpRangeDto(), { ipRange: item }), description: '' })
            : item,
        )
      : value,
  );

/** What leaving out one cluster autoscaler setting means (the settings are replaced as a whole). */
const AUTOSCALER_DEFAULT = "Left out: not set, so the cluster autoscaler's own default applies";

export class ClusterAutoscalerSettingsDto {
  @ApiPropertyOptional({ minimum: 0, maximum: 1, example: 0.5, description: AUTOSCALER_DEFAULT })
  @IsOptional() @IsNumber() @Min(0) @Max(1)
  'scale-down-utilization-threshold'?: number;

  @ApiPropertyOptional({ minimum: 0, maximum: 1, example: 0.5, description: AUTOSCALER_DEFAULT })
  @IsOptional() @IsNumber() @Min(0) @Max(1)
  'scale-down-gpu-utilization-threshold'?: number;

  @ApiPropertyOptional({ example: '10m', maxLength: 20, description: AUTOSCALER_DEFAULT }) @IsOptional() @IsString() @MaxLength(20) @Matches(DURATION, { message: `scale-down-delay-after-add ${DURATION_MSG}` })
  'scale-down-delay-after-add'?: string;

  @ApiPropertyOptional({ example: '10m', maxLength: 20, description: AUTOSCALER_DEFAULT }) @IsOptional() @IsString() @MaxLength(20) @Matches(DURATION, { message: `scale-down-unneeded-time ${DURATION_MSG}` })
  'scale-down-unneeded-time'?: string;

  @ApiPropertyOptional({ example: '20m', maxLength: 20, description: AUTOSCALER_DEFAULT }) @IsOptional() @IsString() @MaxLength(20) @Matches(DURATION, { message: `scale-down-unready-time ${DURATION_MSG}` })
  'scale-down-unready-time'?: string;

  @ApiPropertyOptional({ example: '15m', maxLength: 20, description: AUTOSCALER_DEFAULT }) @IsOptional() @IsString() @MaxLength(20) @Matches(DURATION, { message: `max-node-provision-time ${DURATION_MSG}` })
  'max-node-provision-time'?: string;

  @ApiPropertyOptional({ example: '5m', maxLength: 20, description: AUTOSCALER_DEFAULT }) @IsOptional() @IsString() @MaxLength(20) @Matches(DURATION, { message: `unremovable-node-recheck-timeout ${DURATION_MSG}` })
  'unremovable-node-recheck-timeout'?: string;
}

const ADDONS_SCHEMA = {
  type: 'object',
  maxProperties: 100,
  additionalProperties: {
    type: 'object',
    required: ['enabled'] as string[],
    properties: {
      enabled: { type: 'boolean' },
      customValues: { type: 'object', maxProperties: 100, additionalProperties: { type: 'string', maxLength: 4096 }, default: {} },
    },
  },
  example: { 'metrics-server': { enabled: true, customValues: {} } },
  description: 'Add-on name (see the catalog) to its setting',
} as const;

export class CreateClusterRequest {
  @ApiProperty({ example: 'web', minLength: 1, maxLength: 63, description: 'The slug is derived from it, unique per environment' })
  @IsString() @Length(1, 63)
  @IsPlainText()
  name: string;

  @ApiProperty({ format: 'uuid', description: 'A cloud account of the organisation (enabled)' })
  @IsUUID('all', { message: 'cloudAccountIdentity must be a UUID' })
  cloudAccountIdentity: string;

  @ApiProperty({ example: 'eu-central-1', description: "A region of the cloud account's provider" })
  @IsString() @Length(1, 100)
  region: string;

  @ApiProperty({ example: '1.31.6', description: 'An available cluster version' })
  @IsString() @Length(1, 50)
  version: string;

  @ApiProperty({
    type: [CreateClusterNodePoolDto],
    minItems: 0,
    maxItems: 50,
    description: 'May be empty: node pools can be added afterwards (POST .../pools)',
  })
  @IsArray() @ArrayMaxSize(50)
  @ValidateNested({ each: true }) @Type(() => CreateClusterNodePoolDto)
  nodePools: CreateClusterNodePoolDto[];

  @ApiPropertyOptional({
    ...ADDONS_SCHEMA,
    description: `${ADDONS_SCHEMA.description}. Default: the catalog's default add-ons; an add-on named here replaces its default setting`,
  })
  @IsOptional() @IsAddonMap()
  addons?: Record<string, { enabled: boolean; customValues?: Record<string, string> }>;

  @ApiPropertyOptional({ type: IpRangeDto, description: 'Left out (or {}): the default pod subnet (answered as null)' })
  @EmptyIpRangeIsAbsent() @IsOptional() @ValidateNested() @Type(() => IpRangeDto)
  clusterPodSubnet?: IpRangeDto;

  @ApiPropertyOptional({ type: IpRangeDto, description: 'Left out (or {}): the default service subnet (answered as null)' })
  @EmptyIpRangeIsAbsent() @IsOptional() @ValidateNested() @Type(() => IpRangeDto)
  serviceSubnet?: IpRangeDto;

  @ApiPropertyOptional({ enum: CNI_TYPES, default: 'cilium' }) @IsOptional() @IsIn(CNI_TYPES)
  cni?: string;

  @ApiPropertyOptional({ maxLength: 500, description: 'Default: none (null)' }) @IsOptional() @IsString() @MaxLength(500)
  description?: string;

  @ApiPropertyOptional({ default: false }) @IsOptional() @IsBoolean()
  enableAutoUpgrade?: boolean;

  @AutoUpgradePolicyField()
  autoUpgradePolicy?: AutoUpgradePolicy;

  @ApiPropertyOptional({ default: false, description: 'Same as enableHighAvailability' }) @IsOptional() @IsBoolean()
  enableHA?: boolean;

  @ApiPropertyOptional({ default: false }) @IsOptional() @IsBoolean()
  enableHighAvailability?: boolean;

  @ApiPropertyOptional({ default: false }) @IsOptional() @IsBoolean()
  enableMultiAvailabilityZones?: boolean;

  @ApiPropertyOptional({ default: false }) @IsOptional() @IsBoolean()
  enableNATGateway?: boolean;

  @ApiPropertyOptional({ default: false }) @IsOptional() @IsBoolean()
  enableNetworkEncryption?: boolean;

  @ApiPropertyOptional({ deprecated: true, default: false, description: 'Use podSecurityStandardsProfile; true means baseline when no profile is given' })
  @IsOptional() @IsBoolean()
  enablePodSecurityStandards?: boolean;

  @ApiPropertyOptional({ type: [IpWhitelistRequestDto], default: [] })
  @IsOptional() @LenientIpWhitelist() @IsArray() @ArrayMaxSize(100) @ValidateNested({ each: true }) @Type(() => IpWhitelistRequestDto)
  ipWhitelist?: IpWhitelistRequestDto[];

  @ApiPropertyOptional({
    format: 'uuid',
    description: 'Left out: no maintenance schedule (an upgrade window opens 24 h after planning and lasts 24 h)',
  })
  @IsOptional() @IsUUID('all', { message: 'maintenanceScheduleIdentity must be a UUID' })
  maintenanceScheduleIdentity?: string;

  @PodSecurityStandardsProfileField('Default: none (null), or baseline when enablePodSecurityStandards is true')
  podSecurityStandardsProfile?: string;

  @ApiPropertyOptional({ example: 'stable', description: 'An update channel name. Left out: no update channel (null)' })
  @IsOptional() @IsString() @Length(1, 100)
  updateChannel?: string;
}

export class ClusterReferenceRequest {
  @ApiProperty({ format: 'uuid' }) @IsUUID('all', { message: 'upstreamCluster.identity must be a UUID' })
  identity: string;
}

/** The cluster update (all optional, docs/conventions.md "Clusters and node pools"). `status` records the intent in `desiredStatus`. */
@ApiPartialUpdate('addons merges into the current add-ons; ipWhitelist and clusterAutoscalerSettings replace theirs.')
export class UpdateClusterRequest {
  @ApiPropertyOptional({ minLength: 1, maxLength: 63, description: 'Display name; the slug (and the URL) stay as created' })
  @IsOptional() @IsString() @Length(1, 63)
  @IsPlainText()
  name?: string;

  @ApiPropertyOptional({ type: String, maxLength: 500, nullable: true }) @IsOptional() @IsString() @MaxLength(500)
  description?: string | null;

  @ApiPropertyOptional({ enum: CLUSTER_DESIRED_STATUSES, description: 'Requests a transition; 409 when the current status does not allow it' })
  @IsOptional() @IsIn(CLUSTER_DESIRED_STATUSES)
  status?: string;

  @ApiPropertyOptional({ example: '1.31.6', description: 'An available upgrade or downgrade target of the current version; only while started or stopped' })
  @IsOptional() @IsString() @Length(1, 50)
  version?: string;

  @ApiPropertyOptional({
    type: String,
    maxLength: 100,
    example: 'stable',
    nullable: true,
    description: 'null (or "", which the original Terraform provider sends for no channel) detaches the channel',
  })
  @EmptyStringIsNull() @IsOptional() @IsString() @Length(1, 100)
  updateChannel?: string | null;

  @ApiPropertyOptional() @IsOptional() @IsBoolean() enableAutoUpgrade?: boolean;

  @AutoUpgradePolicyField()
  autoUpgradePolicy?: AutoUpgradePolicy;
  @ApiPropertyOptional() @IsOptional() @IsBoolean() enableHighAvailability?: boolean;
  @ApiPropertyOptional() @IsOptional() @IsBoolean() enableNetworkEncryption?: boolean;

  @PodSecurityStandardsProfileField('Left out: unchanged')
  podSecurityStandardsProfile?: string;

  // false in the example: Swagger UI would otherwise fill true and the cluster could not be deleted afterwards.
  @ApiPropertyOptional({ example: false, description: 'true: the cluster cannot be deleted until it is set to false again' }) @IsOptional() @IsBoolean() deleteProtection?: boolean;

  @ApiPropertyOptional({
    type: 'array',
    maxItems: 100,
    items: { oneOf: [{ $ref: '#/components/schemas/IpWhitelistRequestDto' }, { type: 'string', maxLength: 43, example: '203.0.113.0/24' }] },
    description: 'Replaces the whole list; an item may also be the CIDR string alone',
  })
  @IsOptional() @LenientIpWhitelist() @IsArray() @ArrayMaxSize(100) @ValidateNested({ each: true }) @Type(() => IpWhitelistRequestDto)
  ipWhitelist?: IpWhitelistRequestDto[];

  @ApiPropertyOptional(ADDONS_SCHEMA) @IsOptional() @IsAddonMap()
  addons?: Record<string, { enabled: boolean; customValues?: Record<string, string> }>;

  @ApiPropertyOptional({ type: ClusterAutoscalerSettingsDto })
  @IsOptional() @ValidateNested() @Type(() => ClusterAutoscalerSettingsDto)
  clusterAutoscalerSettings?: ClusterAutoscalerSettingsDto;

  @ApiPropertyOptional({
    type: String,
    format: 'uuid',
    nullable: true,
    description: 'null (or "", which the original Terraform provider sends for no schedule) detaches the schedule',
  })
  @EmptyStringIsNull() @IsOptional() @IsUUID('all', { message: 'maintenanceScheduleIdentity must be a UUID' })
  maintenanceScheduleIdentity?: string | null;

  @ExclusionsField(
    'maintenanceExclusions',
    " They apply to this cluster only, on top of its maintenance schedule's exclusions (a cluster without a schedule keeps the default window and still honours them).",
  )
  maintenanceExclusions?: MaintenanceExclusionRequest[];

  @ApiPropertyOptional({ type: ClusterReferenceRequest, nullable: true, description: 'null detaches the upstream cluster' })
  @IsOptional() @ValidateNested() @Type(() => ClusterReferenceRequest)
  upstreamCluster?: ClusterReferenceRequest | null;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 720,
    nullable: true,
    example: 48,
    description:
      "Hours the upstream cluster must have run a version before the scheduler plans this cluster's upgrade to it " +
      "(rollout sequencing); null uses the organisation's upgradeSoakHours",
  })
  @IsOptional()
  @IsInt({ message: 'upgradeSoakHours must be a whole number of hours' })
  @Min(0, { message: 'upgradeSoakHours must be between 0 and 720' })
  @Max(720, { message: 'upgradeSoakHours must be between 0 and 720' })
  upgradeSoakHours?: number | null;
}

// ------------------------------------------------------------------------------------ queries

export class ClusterOrgListQuery extends PageQueryDto {
  @ApiPropertyOptional({ format: 'uuid', description: 'Only clusters using this maintenance schedule (its identity). Left out: clusters with any schedule or none' })
  @IsOptional() @IsUUID('all', { message: 'maintenanceSchedule must be a maintenance schedule identity (UUID)' })
  maintenanceSchedule?: string;

  @ApiPropertyOptional({ default: false, description: 'true adds actualState' })
  @IsOptional() @QueryBoolean() @IsBoolean({ message: 'includeDetails must be true or false' })
  includeDetails?: boolean;

  @ApiPropertyOptional({
    name: 'show-compute',
    default: true,
    description: 'false leaves cpu and memory of each cluster empty (the original clients send true)',
  })
  @IsOptional() @QueryBoolean() @IsBoolean({ message: 'show-compute must be true or false' })
  'show-compute'?: boolean;
}

export class ClusterDetailQuery {
  @ApiPropertyOptional({ name: 'show-compute', default: false, description: 'true fills cpu and memory' })
  @IsOptional() @QueryBoolean() @IsBoolean({ message: 'show-compute must be true or false' })
  'show-compute'?: boolean;

  @ApiPropertyOptional({ default: false, description: 'true adds actualState' })
  @IsOptional() @QueryBoolean() @IsBoolean({ message: 'includeDetails must be true or false' })
  includeDetails?: boolean;
}

export class ClusterEnvListQuery extends PageQueryDto {
  @ApiPropertyOptional({ name: 'show-compute', default: false, description: 'true fills cpu and memory of each cluster' })
  @IsOptional() @QueryBoolean() @IsBoolean({ message: 'show-compute must be true or false' })
  'show-compute'?: boolean;

  @ApiPropertyOptional({ default: false, description: 'true adds actualState' })
  @IsOptional() @QueryBoolean() @IsBoolean({ message: 'includeDetails must be true or false' })
  includeDetails?: boolean;
}

// ------------------------------------------------------------------------------------ responses

export class SlugDto {
  @ApiProperty({ example: 'web' }) slugValue: string;
}

export class CloudCredentialsReferenceDto {
  @ApiProperty() displayName: string;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty() isPrimary: boolean;
}

export class CloudAccountReferenceDto {
  @ApiProperty() displayName: string;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty({ type: CloudCredentialsReferenceDto, nullable: true }) primaryCloudCredentials: CloudCredentialsReferenceDto | null;
}

export class UpdateChannelDto {
  @ApiProperty() available: boolean;
  @ApiProperty({ example: '1.31.6' }) kubernetesClusterVersion: string;
  @ApiProperty({ example: 'stable' }) name: string;
}

export class MaintenanceWindowDto {
  @ApiProperty({ enum: ['MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY', 'SUNDAY'] }) day: string;
  @ApiProperty({ type: 'integer', format: 'int32' }) duration: number;
  @ApiProperty({ example: '02:00' }) startTime: string;
}

export class MaintenanceScheduleRefDto {
  @ApiProperty({ type: 'integer', format: 'int64' }) clusterCount: number;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: [MaintenanceWindowDto] }) windows: MaintenanceWindowDto[];
  @ApiProperty({ example: 'Europe/Amsterdam', description: "IANA time zone of the windows' start times" }) timeZone: string;
}

export class TenantClusterRefDto {
  @ApiProperty() environmentSlug: string;
  @ApiProperty({ type: 'integer', format: 'int64' }) id: number;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty() name: string;
  @ApiProperty() slug: string;
  @ApiProperty() version: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) deletedAt: string | null;
}

export class TenantEnvironmentRefDto {
  @ApiProperty({ type: 'integer', format: 'int64' }) id: number;
  @ApiProperty() name: string;
  @ApiProperty() slug: string;
}

export class ObservabilityTenantDto {
  @ApiProperty() available: boolean;
  @ApiProperty({ type: TenantClusterRefDto, nullable: true }) cluster: TenantClusterRefDto | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) modifiedAt: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) deletedAt: string | null;
  @ApiProperty({ description: 'Organisation slug' }) customer: string;
  @ApiProperty({ type: TenantEnvironmentRefDto, nullable: true }) environment: TenantEnvironmentRefDto | null;
  @ApiProperty({ type: 'integer', format: 'int64' }) id: number;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty({ nullable: true, type: String }) ipWhiteList: string | null;
  @ApiProperty() name: string;
  @ApiProperty() slug: string;
}

export class ActualClusterStateDto {
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) collectedAt: string | null;
  @ApiProperty({ enum: CLUSTER_STATUSES, nullable: true, type: String }) status: string | null;
  @ApiProperty({ nullable: true, type: String }) version: string | null;
}

export class IpWhitelistDto {
  @ApiProperty({ example: '203.0.113.0/24' }) cidr: string;
  @ApiProperty() description: string;
}

export class ClusterReferenceDto {
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty({ type: SlugDto }) slug: SlugDto;
  @ApiProperty({ type: SlugDto }) environmentSlug: SlugDto;
  @ApiProperty() version: string;
}

export class ClusterResponse {
  @ApiPropertyOptional({ type: ActualClusterStateDto, description: 'Only with includeDetails=true' }) actualState?: ActualClusterStateDto;
  @ApiProperty(ADDONS_SCHEMA) addons: Record<string, { enabled: boolean; customValues: Record<string, string> }>;
  @ApiProperty() platformOIDC: boolean;
  @ApiProperty() autoUpgrade: boolean;
  @ApiProperty({ enum: AUTO_UPGRADE_POLICIES }) autoUpgradePolicy: string;
  @ApiProperty({ nullable: true, type: String, example: '1.32.1', description: "The update channel's version when it is newer than the cluster's" })
  upgradeAvailable: string | null;
  @ApiProperty({ type: CloudAccountReferenceDto }) cloudAccount: CloudAccountReferenceDto;
  @ApiProperty({ type: CloudCredentialsReferenceDto, nullable: true }) cloudCredentials: CloudCredentialsReferenceDto | null;
  @ApiProperty({ example: 'platform_1' }) cloudProvider: string;
  @ApiProperty({ nullable: true, type: String, example: '10.244.0.0/16' }) clusterPodSubnet: string | null;
  @ApiProperty({ nullable: true, type: String, example: '10.96.0.0/12' }) serviceSubnet: string | null;
  @ApiProperty({ enum: CNI_TYPES }) cni: string;
  @ApiProperty({ type: 'integer', format: 'int64', nullable: true, description: 'Cores; filled with show-compute=true' }) cpu: number | null;
  @ApiProperty({ type: 'integer', format: 'int64', nullable: true, description: 'MiB; filled with show-compute=true' }) memory: number | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) modifiedAt: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) deletedAt: string | null;
  @ApiProperty({ format: 'uuid' }) customerIdentity: string;
  @ApiProperty({ type: SlugDto }) customerSlug: SlugDto;
  @ApiProperty() deleteProtection: boolean;
  @ApiProperty({ nullable: true, type: String }) description: string | null;
  @ApiProperty({ enum: CLUSTER_DESIRED_STATUSES, nullable: true, type: String }) desiredStatus: string | null;
  @ApiProperty() enableMultiAvailabilityZones: boolean;
  @ApiProperty() enableNATGateway: boolean;
  @ApiProperty() enableNetworkEncryption: boolean;
  @ApiProperty({ format: 'uuid' }) environmentIdentity: string;
  @ApiProperty() environmentMetricsRules: boolean;
  @ApiProperty({ type: SlugDto }) environmentSlug: SlugDto;
  @ApiProperty() highlyAvailable: boolean;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty({ type: [IpWhitelistDto] }) ipWhitelist: IpWhitelistDto[];
  @ApiProperty({ type: MaintenanceScheduleRefDto, nullable: true }) maintenanceSchedule: MaintenanceScheduleRefDto | null;
  @ExclusionsResponseField(" of this cluster alone (its schedule's apply as well)") maintenanceExclusions: MaintenanceExclusionResponse[];
  @ApiProperty() name: string;
  @ApiProperty({ type: ObservabilityTenantDto, nullable: true }) observabilityTenant: ObservabilityTenantDto | null;
  @ApiProperty({ enum: POD_SECURITY_STANDARDS_PROFILES, nullable: true, type: String }) podSecurityStandardsProfile: string | null;
  @ApiProperty({ type: 'integer', format: 'int64', nullable: true, description: 'Id of the first node pool' }) poolID: number | null;
  @ApiProperty({ nullable: true, type: String, description: 'Name of the first node pool' }) poolName: string | null;
  @ApiProperty({ enum: PROVISION_STATUSES }) provisionStatus: string;
  @ApiProperty() region: string;
  @ApiProperty({ type: SlugDto }) slug: SlugDto;
  @ApiProperty({ enum: CLUSTER_STATUSES }) status: string;
  @ApiProperty({ type: UpdateChannelDto, nullable: true }) updateChannel: UpdateChannelDto | null;
  @ApiProperty({ example: '1.31.6' }) version: string;
  @ApiPropertyOptional({ type: ClusterAutoscalerSettingsDto, description: 'Returned by the update operation' })
  clusterAutoscalerSettings?: ClusterAutoscalerSettingsDto;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    example: null,
    description: "This cluster's own soak time in hours for rollout sequencing; null when it uses the organisation's upgradeSoakHours",
  })
  upgradeSoakHours: number | null;
  @ApiPropertyOptional({ type: ClusterReferenceDto, nullable: true, description: 'Returned by the update operation' })
  upstreamCluster?: ClusterReferenceDto | null;
  @ApiPropertyOptional({ type: [ClusterReferenceDto], description: 'Returned by the update operation' })
  downstreamClusters?: ClusterReferenceDto[];
  @ApiProperty({
    type: 'integer',
    format: 'int64',
    example: 3,
    description:
      'Counts the changes of what the cluster should look like (from 1): version, high availability, network settings, IP allow-list, pod security profile, autoscaler settings, add-ons, OIDC, a start or stop request, and every node pool create, update and delete',
  })
  generation: number;
  @ApiProperty({
    type: 'integer',
    format: 'int64',
    nullable: true,
    example: 3,
    description: 'The newest generation the cluster driver reported applied; null until the first one is. The cluster is up to date when it equals generation',
  })
  observedGeneration: number | null;
  @ApiProperty({ type: [ConditionDto], description: 'Ready, Reconciling and Degraded, in that order' }) conditions: ConditionDto[];
}
