import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsDefined,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { PROVISION_STATUSES } from '../cluster.entity';
import { NODE_POOL_UPGRADE_STRATEGIES, TAINT_EFFECTS } from '../cluster-node-pool.entity';
import { IsStringMap } from './validators';
import { CONDITION_STATUSES, CONDITION_TYPES } from '../cluster-conditions';

/** Upper bound of a node pool's size (nodes). */
export const MAX_POOL_SIZE = 1000;

export class NodeTaintDto {
  @ApiProperty({ example: 'dedicated', minLength: 1, maxLength: 253 })
  @IsString() @Length(1, 253)
  key: string;

  @ApiProperty({ example: 'gpu', maxLength: 63 })
  @IsString() @MaxLength(63)
  value: string;

  @ApiProperty({ enum: TAINT_EFFECTS, example: 'NoSchedule' })
  @IsIn(TAINT_EFFECTS)
  effect: string;
}

/** A pool's minSize when the request leaves it out. */
export const DEFAULT_MIN_POOL_SIZE = 1;

/**
 * The defaults of a node pool request (the interface marks none of its fields Required): `name` the first free
 * `pool-1`, `pool-2`, ... of the cluster, `minSize` 1 (0 when maxSize is 0), `maxSize` minSize. `nodeSize` has no
 * default (the machines a cluster runs on, and what they cost, are the user's choice): it is 400 naming it.
 * Applied in place before the pool is checked.
 */
export function applyPoolDefaults(pool: CreateClusterNodePoolDto, takenNames: Set<string>): void {
  if (pool.name === undefined || pool.name === null) {
    let n = 1;
    while (takenNames.has(`pool-${n}`)) n++;
    pool.name = `pool-${n}`;
  }
  pool.minSize ??= Math.min(DEFAULT_MIN_POOL_SIZE, pool.maxSize ?? DEFAULT_MIN_POOL_SIZE);
  pool.maxSize ??= pool.minSize;
}

/** CreateClusterNodePool of the interface; also the body of node pool create and update (PUT). */
export class CreateClusterNodePoolDto {
  @ApiPropertyOptional({
    // Not a name the demo cluster's pools have (system, workers), so POST .../pools works as it is.
    example: 'batch',
    pattern: '^[a-z0-9-]+$',
    minLength: 1,
    maxLength: 25,
    description: 'Default: the first free of pool-1, pool-2, ... in the cluster',
  })
  @IsOptional()
  @IsString() @Length(1, 25) @Matches(/^[a-z0-9-]+$/, { message: 'name must match ^[a-z0-9-]+$ (lowercase letters, digits and dashes)' })
  name: string;

  @ApiPropertyOptional({
    example: 'm5.large',
    description:
      "A node type of the cluster's cloud provider. No default (the machines, and what they cost, are your choice): " +
      'leaving it out is refused with 400 naming it.',
  })
  @IsDefined({ message: 'nodeSize is required: a node type of the cluster\'s cloud provider' })
  @IsString() @Length(1, 100)
  nodeSize: string;

  @ApiPropertyOptional({
    type: 'integer',
    format: 'int64',
    minimum: 0,
    maximum: MAX_POOL_SIZE,
    example: 3,
    description: `Default: ${DEFAULT_MIN_POOL_SIZE} (0 when maxSize is 0)`,
  })
  @IsOptional() @IsInt() @Min(0) @Max(MAX_POOL_SIZE)
  minSize: number;

  @ApiPropertyOptional({ type: 'integer', format: 'int64', minimum: 0, maximum: MAX_POOL_SIZE, example: 5, description: 'At least minSize. Default: minSize (a pool of fixed size)' })
  @IsOptional() @IsInt() @Min(0) @Max(MAX_POOL_SIZE)
  maxSize: number;

  @ApiPropertyOptional({ example: 'eu-central-1a', description: "An availability zone of the cluster's region. Default: none (null)" })
  @IsOptional() @IsString() @Length(1, 100)
  availabilityZone?: string;

  @ApiPropertyOptional({ default: false }) @IsOptional() @IsBoolean()
  autoScaling?: boolean;

  @ApiPropertyOptional({ default: true }) @IsOptional() @IsBoolean()
  enableNodeAutoReplacement?: boolean;

  @ApiPropertyOptional({ default: false }) @IsOptional() @IsBoolean()
  enableNodeReboots?: boolean;

  @ApiPropertyOptional({ enum: NODE_POOL_UPGRADE_STRATEGIES, default: 'REPLACE', description: 'Left out or "" takes the default' })
  // The original Go client sends a cluster's inline pools with `upgradeStrategy: ""` (Go's zero value) when unset.
  @Transform(({ value }) => (value === '' ? undefined : value))
  @IsOptional() @IsIn(NODE_POOL_UPGRADE_STRATEGIES)
  upgradeStrategy?: string;

  @ApiPropertyOptional({ type: 'object', maxProperties: 100, additionalProperties: { type: 'string', maxLength: 4096 }, example: { team: 'web' }, default: {} })
  @IsOptional() @IsStringMap()
  annotations?: Record<string, string>;

  @ApiPropertyOptional({ type: 'object', maxProperties: 100, additionalProperties: { type: 'string', maxLength: 4096 }, example: { tier: 'frontend' }, default: {} })
  @IsOptional() @IsStringMap()
  labels?: Record<string, string>;

  @ApiPropertyOptional({ type: [NodeTaintDto], default: [] })
  @IsOptional() @IsArray() @ArrayMaxSize(50) @ValidateNested({ each: true }) @Type(() => NodeTaintDto)
  taints?: NodeTaintDto[];
}

/**
 * Body of node pool update (PUT): the whole definition, except that `name` may be left out or sent as ""
 * to keep the pool's name (the original clients send the pool without it).
 */
export class UpdateNodePoolDto extends OmitType(CreateClusterNodePoolDto, ['name'] as const) {
  @ApiPropertyOptional({
    // The demo pool the path's example addresses keeps its name.
    example: 'system',
    pattern: '^[a-z0-9-]+$',
    minLength: 1,
    maxLength: 25,
    description: 'Left out or "" keeps the current name',
  })
  @Transform(({ value }) => (value === '' || value === null ? undefined : value))
  @IsOptional() @IsString() @Length(1, 25) @Matches(/^[a-z0-9-]+$/, { message: 'name must match ^[a-z0-9-]+$ (lowercase letters, digits and dashes)' })
  name?: string;
}

/** A machine registered into a bring-your-own-node pool. */
export class NodePoolNodeResponse {
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty({ example: 'worker-01' }) name: string;
  @ApiProperty({ example: '10.20.0.11', description: 'The address the node registered with' }) address: string;
  @ApiProperty({ example: 'v1.31.5' }) kubeletVersion: string;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Cores the node reported (null when it did not)' }) cpu: number | null;
  @ApiProperty({ type: 'integer', format: 'int64', nullable: true, description: 'Memory in MiB the node reported (null when it did not)' })
  memory: number | null;
  @ApiProperty({ format: 'date-time', description: 'First registration' }) joinedAt: string;
  @ApiProperty({ format: 'date-time', description: 'Latest registration (re-registering the same name updates the node)' })
  lastRegisteredAt: string;
}

/** A Kubernetes-style condition of a cluster or node pool (docs/architecture.md, "Generations and conditions"). */
export class ConditionDto {
  @ApiProperty({ enum: CONDITION_TYPES, description: 'Ready: the newest generation is applied and running; Reconciling: a newer generation is being applied; Degraded: the driver reported an error it cannot get past by retrying' })
  type: string;
  @ApiProperty({ enum: CONDITION_STATUSES }) status: string;
  @ApiProperty({ example: 'Applied', description: 'Machine-readable reason in CamelCase (e.g. Applied, SpecChanged, Progressing, DriverRetrying, a driver error code)' })
  reason: string;
  @ApiProperty({ example: 'Generation 3 is applied', description: "For people; for Degraded the driver's message" }) message: string;
  @ApiProperty({ format: 'date-time', description: 'When status last changed' }) lastTransitionTime: string;
  @ApiProperty({ type: 'integer', format: 'int64', example: 3, description: 'The generation the condition was set for' }) observedGeneration: number;
}

export class NodePoolResponse {
  @ApiProperty({ type: 'integer', format: 'int64' }) id: number;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty() name: string;
  @ApiProperty({ nullable: true, type: String }) availabilityZone: string | null;
  @ApiProperty() nodeSize: string;
  @ApiProperty() autoScaling: boolean;
  @ApiProperty({ type: 'integer', format: 'int64' }) minSize: number;
  @ApiProperty({ type: 'integer', format: 'int64' }) maxSize: number;
  @ApiProperty() enableNodeAutoReplacement: boolean;
  @ApiProperty() enableNodeReboots: boolean;
  @ApiProperty({ enum: NODE_POOL_UPGRADE_STRATEGIES }) upgradeStrategy: string;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) annotations: Record<string, string>;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) labels: Record<string, string>;
  @ApiProperty({ type: [NodeTaintDto] }) taints: NodeTaintDto[];
  @ApiProperty({ enum: PROVISION_STATUSES }) provisionStatus: string;
  @ApiProperty({
    type: 'integer',
    description:
      'Nodes of the pool: for a bring-your-own-node pool the nodes registered with a join token; for a cloud pool its minSize (the size the platform runs until autoscaling is modelled)',
  })
  nodeCount: number;
  @ApiProperty({ type: [NodePoolNodeResponse], description: 'Registered nodes of a bring-your-own-node pool (always empty for cloud pools)' })
  nodes: NodePoolNodeResponse[];
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) modifiedAt: string;
  @ApiProperty({ type: 'integer', format: 'int64', example: 3, description: "The cluster generation of the pool's last change (create or update)" })
  generation: number;
  @ApiProperty({
    type: 'integer',
    format: 'int64',
    nullable: true,
    example: 3,
    description: 'The cluster generation at which the cluster driver reported the pool applied; null until it did. The pool is up to date when it is at least generation',
  })
  observedGeneration: number | null;
  @ApiProperty({ type: [ConditionDto], description: 'Ready, Reconciling and Degraded, in that order' }) conditions: ConditionDto[];
}
