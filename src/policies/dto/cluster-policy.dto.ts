import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayUnique, IsArray, IsBoolean, IsIn, IsOptional, IsString, Length, Matches, MaxLength, ValidateIf } from 'class-validator';
import { ENVIRONMENT_TYPES } from '../../catalog/environment-types';
import { PolicyAction, POLICY_ACTIONS } from '../cluster-policy.entity';
import { FailurePolicy, FAILURE_POLICIES, MAX_ESTIMATED_COST, MAX_EXPRESSION_LENGTH, MAX_VALUE_SIZE } from '../policy-limits';
import { ApiPartialUpdate } from '../../common/api-docs';
import { POLICY_OPERATIONS } from '../policy-variables';

export const MAX_POLICIES_PER_ORGANISATION = 50;
export const MAX_PLATFORM_POLICIES = 50;
export const POLICY_SCOPES = ['ORGANISATION', 'PLATFORM'] as const;
const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const NAME_MESSAGE = 'name must be slug-like: lowercase letters, digits and hyphens, starting and ending with a letter or digit, at most 63 characters';
const ENV_SLUG = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const MAX_SCOPE_ITEMS = 50;

const EXPRESSION_DOC =
  'CEL expression that must evaluate to true for the change to pass. Variables: `object` (the cluster as it will be, in the ' +
  'cluster response\'s field names, with `nodePools`), `oldObject` (the cluster before the change; null on CREATE), `environment`, ' +
  '`organisation`, `request` (`operation` CREATE | UPDATE | DELETE, `resource`, `user`). Type-checked when written (400 naming the ' +
  `position); at most ${MAX_EXPRESSION_LENGTH} characters, no value larger than ${MAX_VALUE_SIZE} characters or elements and an estimated worst-case ` +
  `cost of at most ${MAX_ESTIMATED_COST} units (400 naming the sub-expression and its estimate); each evaluation is metered at run time ` +
  '(docs/policies.md, "Limits").';
const FAILURE_POLICY_DOC =
  'What a change does when the expression cannot be evaluated (an evaluation error, a result that is not a bool, its run-time budget spent, ' +
  'or the evaluation stopped for its time or memory): Fail counts it as a violation under `action` (a Deny policy refuses the change, naming ' +
  'the policy and the error); Ignore lets the change pass this policy and records CLUSTER_POLICY_EVALUATION_FAILED (audit, activity, webhook event).';

export class CreateClusterPolicyRequest {
  @ApiProperty({ example: 'production-highly-available', pattern: NAME.source, minLength: 1, maxLength: 63, description: 'Unique per organisation (409 when taken)' })
  @IsString() @Matches(NAME, { message: NAME_MESSAGE })
  name: string;

  @ApiPropertyOptional({ example: 'Production clusters run a highly available control plane', maxLength: 500, default: '' })
  @IsOptional() @IsString() @MaxLength(500)
  description?: string;

  @ApiProperty({ example: 'object.highlyAvailable', minLength: 1, maxLength: MAX_EXPRESSION_LENGTH, description: EXPRESSION_DOC })
  @IsString() @Length(1, MAX_EXPRESSION_LENGTH)
  expression: string;

  @ApiProperty({ example: 'production clusters must be highly available', minLength: 1, maxLength: 500, description: 'Shown when the expression is false' })
  @IsString() @Length(1, 500)
  message: string;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    maxLength: MAX_EXPRESSION_LENGTH,
    example: "'cluster ' + object.name + ' must be highly available'",
    description: 'CEL expression evaluating to a string, used instead of `message` when the expression is false (falls back to `message` if it fails). Left out: `message` is used',
  })
  @IsOptional() @IsString() @Length(1, MAX_EXPRESSION_LENGTH)
  messageExpression?: string | null;

  @ApiProperty({ enum: POLICY_ACTIONS, description: 'Deny: refuse the change (400); Warn: allow it with a Warning header; Audit: allow it and record CLUSTER_POLICY_VIOLATED' })
  @IsIn(POLICY_ACTIONS, { message: `action must be one of: ${POLICY_ACTIONS.join(', ')}` })
  action: PolicyAction;

  @ApiPropertyOptional({ enum: FAILURE_POLICIES, default: 'Fail', description: FAILURE_POLICY_DOC })
  @IsOptional() @IsIn(FAILURE_POLICIES, { message: `failurePolicy must be one of: ${FAILURE_POLICIES.join(', ')}` })
  failurePolicy?: FailurePolicy;

  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', maxLength: 63, pattern: ENV_SLUG.source },
    maxItems: MAX_SCOPE_ITEMS,
    example: ['production'],
    nullable: true,
    description: 'Only clusters in these environments (slugs of the organisation). Not together with environmentTypes; neither means every environment, so left out (with environmentTypes left out too) the policy applies everywhere',
  })
  @IsOptional() @IsArray() @ArrayMaxSize(MAX_SCOPE_ITEMS) @ArrayUnique() @IsString({ each: true })
  @Matches(ENV_SLUG, { each: true, message: 'environments entries must be environment slugs' })
  environments?: string[] | null;

  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', enum: [...ENVIRONMENT_TYPES] },
    nullable: true,
    example: ['production'],
    description: 'Only clusters in environments of these types. Not together with environments. Left out (with environments left out too): every environment',
  })
  @IsOptional() @IsArray() @ArrayMaxSize(ENVIRONMENT_TYPES.length) @ArrayUnique()
  @IsIn(ENVIRONMENT_TYPES, { each: true, message: `environmentTypes entries must be one of: ${ENVIRONMENT_TYPES.join(', ')}` })
  environmentTypes?: string[] | null;

  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', enum: [...POLICY_OPERATIONS] },
    nullable: true,
    example: ['CREATE', 'UPDATE'],
    description: 'Only these operations (`request.operation`): CREATE a cluster, UPDATE it (settings, status, version, node pools, scheduled upgrades), DELETE it. Left out, null or []: every operation',
  })
  @IsOptional() @IsArray() @ArrayMaxSize(POLICY_OPERATIONS.length) @ArrayUnique()
  @IsIn(POLICY_OPERATIONS, { each: true, message: `operations entries must be one of: ${POLICY_OPERATIONS.join(', ')}` })
  operations?: string[] | null;

  @ApiPropertyOptional({ default: true, description: 'A disabled policy is kept but not enforced' })
  @IsOptional() @IsBoolean()
  enabled?: boolean;
}

@ApiPartialUpdate('Giving environments or environmentTypes clears the other.')
export class UpdateClusterPolicyRequest {
  @ApiPropertyOptional({ pattern: NAME.source, maxLength: 63 }) @IsOptional() @IsString() @Matches(NAME, { message: NAME_MESSAGE })
  name?: string;

  @ApiPropertyOptional({ maxLength: 500 }) @IsOptional() @IsString() @MaxLength(500)
  description?: string;

  @ApiPropertyOptional({ maxLength: MAX_EXPRESSION_LENGTH, description: EXPRESSION_DOC }) @IsOptional() @IsString() @Length(1, MAX_EXPRESSION_LENGTH)
  expression?: string;

  @ApiPropertyOptional({ maxLength: 500 }) @IsOptional() @IsString() @Length(1, 500)
  message?: string;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: MAX_EXPRESSION_LENGTH, description: 'null removes it' })
  @ValidateIf((o: UpdateClusterPolicyRequest) => o.messageExpression !== null && o.messageExpression !== undefined)
  @IsString() @Length(1, MAX_EXPRESSION_LENGTH)
  messageExpression?: string | null;

  @ApiPropertyOptional({ enum: POLICY_ACTIONS }) @IsOptional() @IsIn(POLICY_ACTIONS, { message: `action must be one of: ${POLICY_ACTIONS.join(', ')}` })
  action?: PolicyAction;

  @ApiPropertyOptional({ enum: FAILURE_POLICIES, description: FAILURE_POLICY_DOC })
  @IsOptional() @IsIn(FAILURE_POLICIES, { message: `failurePolicy must be one of: ${FAILURE_POLICIES.join(', ')}` })
  failurePolicy?: FailurePolicy;

  @ApiPropertyOptional({ type: 'array', items: { type: 'string', maxLength: 63, pattern: ENV_SLUG.source }, nullable: true, maxItems: MAX_SCOPE_ITEMS, description: 'null or [] removes the scope' })
  @ValidateIf((o: UpdateClusterPolicyRequest) => o.environments !== null && o.environments !== undefined)
  @IsArray() @ArrayMaxSize(MAX_SCOPE_ITEMS) @ArrayUnique() @IsString({ each: true })
  @Matches(ENV_SLUG, { each: true, message: 'environments entries must be environment slugs' })
  environments?: string[] | null;

  @ApiPropertyOptional({ type: 'array', items: { type: 'string', enum: [...ENVIRONMENT_TYPES] }, nullable: true, description: 'null or [] removes the scope' })
  @ValidateIf((o: UpdateClusterPolicyRequest) => o.environmentTypes !== null && o.environmentTypes !== undefined)
  @IsArray() @ArrayMaxSize(ENVIRONMENT_TYPES.length) @ArrayUnique()
  @IsIn(ENVIRONMENT_TYPES, { each: true, message: `environmentTypes entries must be one of: ${ENVIRONMENT_TYPES.join(', ')}` })
  environmentTypes?: string[] | null;

  @ApiPropertyOptional({ type: 'array', items: { type: 'string', enum: [...POLICY_OPERATIONS] }, nullable: true, description: 'null or [] applies the policy to every operation' })
  @ValidateIf((o: UpdateClusterPolicyRequest) => o.operations !== null && o.operations !== undefined)
  @IsArray() @ArrayMaxSize(POLICY_OPERATIONS.length) @ArrayUnique()
  @IsIn(POLICY_OPERATIONS, { each: true, message: `operations entries must be one of: ${POLICY_OPERATIONS.join(', ')}` })
  operations?: string[] | null;

  @ApiPropertyOptional() @IsOptional() @IsBoolean()
  enabled?: boolean;
}

export class ClusterPolicyResponse {
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty({ enum: POLICY_SCOPES, description: 'PLATFORM policies are set by platform administrators, apply to every organisation and are evaluated first' })
  scope: (typeof POLICY_SCOPES)[number];
  @ApiProperty({ example: 'production-highly-available' }) name: string;
  @ApiProperty() description: string;
  @ApiProperty({ example: 'object.highlyAvailable' }) expression: string;
  @ApiProperty() message: string;
  @ApiProperty({ type: String, nullable: true }) messageExpression: string | null;
  @ApiProperty({ enum: POLICY_ACTIONS }) action: PolicyAction;
  @ApiProperty({ enum: FAILURE_POLICIES, description: FAILURE_POLICY_DOC }) failurePolicy: FailurePolicy;
  @ApiProperty({ type: [String], nullable: true }) environments: string[] | null;
  @ApiProperty({ type: 'array', items: { type: 'string', enum: [...ENVIRONMENT_TYPES] }, nullable: true }) environmentTypes: string[] | null;
  @ApiProperty({ type: 'array', items: { type: 'string', enum: [...POLICY_OPERATIONS] }, nullable: true, description: 'The operations it applies to; null: every operation' })
  operations: string[] | null;
  @ApiProperty() enabled: boolean;
  @ApiProperty({ example: 'alice' }) createdBy: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) modifiedAt: string;
}

export class PolicyEvaluationResult {
  @ApiProperty({ format: 'uuid' }) clusterIdentity: string;
  @ApiProperty({ example: 'web' }) clusterSlug: string;
  @ApiProperty({ example: 'production' }) environmentSlug: string;
  @ApiProperty({ description: 'true when the expression is true for the cluster as it is now' }) passed: boolean;
  @ApiProperty({ type: String, nullable: true, description: 'The message when it does not pass' }) message: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: "Why the expression could not be evaluated (an error, not a bool, its run-time budget spent); the policy's failurePolicy decides what a change does then",
  })
  evaluationError: string | null;
}

export class PolicyViolation {
  @ApiProperty({ format: 'uuid' }) clusterIdentity: string;
  @ApiProperty({ example: 'web' }) clusterSlug: string;
  @ApiProperty({ example: 'production' }) environmentSlug: string;
  @ApiProperty({ example: 'production clusters must be highly available' }) message: string;
}
