import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Length, MaxLength, ValidateIf } from 'class-validator';
import { BooleanQueryParam } from '../../common/query-boolean';
import { PageQueryDto } from '../../common/paging';
import { KUBERNETES_ROLES, KubernetesRole } from '../../identity/organisation-member.entity';
import { ENVIRONMENT_TYPES, EnvironmentType } from '../../catalog/environment-types';
import { IsPlainText } from '../../common/names';
import { ApiPartialUpdate } from '../../common/api-docs';

const TYPE_MESSAGE = `type must be one of: ${ENVIRONMENT_TYPES.join(', ')}`;
const K8S_ROLE_MESSAGE = `kubernetesRole must be one of: ${KUBERNETES_ROLES.join(', ')}`;

export class CreateEnvironmentRequest {
  // Not the demo environment's name (production), which a fresh install already has.
  @ApiProperty({ minLength: 3, maxLength: 25, example: 'staging', description: 'The slug is derived from it once, at creation' })
  @IsString() @Length(3, 25)
  @IsPlainText()
  name: string;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 500, example: 'Customer-facing workloads', description: 'Default: none (null)' })
  @IsOptional() @IsString() @MaxLength(500)
  description?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 255, example: 'Runs the web shop', description: 'Default: none (null)' })
  @IsOptional() @IsString() @MaxLength(255)
  purpose?: string | null;

  @ApiPropertyOptional({ enum: ENVIRONMENT_TYPES, example: 'production', description: 'Default: none (null): the environment has no type' })
  @IsOptional() @IsIn(ENVIRONMENT_TYPES as unknown as string[], { message: TYPE_MESSAGE })
  type?: EnvironmentType | null;
}

/** Same fields and bounds, none required; renaming keeps the slug. `null` clears description, purpose or type. */
@ApiPartialUpdate('null clears description, purpose and type.')
export class UpdateEnvironmentRequest {
  @ApiPropertyOptional({ minLength: 3, maxLength: 25, example: 'production-eu', description: 'Renaming does not change the slug' })
  @ValidateIf((o: UpdateEnvironmentRequest) => o.name !== undefined) @IsString() @Length(3, 25)
  @IsPlainText()
  name?: string;

  @ApiPropertyOptional({ maxLength: 500, nullable: true, type: String })
  @IsOptional() @IsString() @MaxLength(500)
  description?: string | null;

  @ApiPropertyOptional({ maxLength: 255, nullable: true, type: String })
  @IsOptional() @IsString() @MaxLength(255)
  purpose?: string | null;

  @ApiPropertyOptional({ enum: ENVIRONMENT_TYPES, nullable: true })
  @IsOptional() @IsIn(ENVIRONMENT_TYPES as unknown as string[], { message: TYPE_MESSAGE })
  type?: EnvironmentType | null;
}

export class ShowComputeQuery {
  @BooleanQueryParam('show-compute', 'true fills totalClusters, totalCpu (cores) and totalMemory (MiB); otherwise they are null')
  'show-compute'?: boolean;
}

export class EnvironmentListQuery extends PageQueryDto {
  @BooleanQueryParam('show-compute', 'true fills totalClusters, totalCpu (cores) and totalMemory (MiB); otherwise they are null')
  'show-compute'?: boolean;
}

export class SlugValueDto {
  @ApiProperty({ example: 'production' }) slugValue: string;
}

export class EnvironmentResponse {
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) deletedAt: string | null;
  @ApiProperty({ nullable: true, type: String }) description: string | null;
  @ApiProperty({ type: 'integer', format: 'int64' }) id: number;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty({ format: 'date-time' }) modifiedAt: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: SlugValueDto }) organisationSlug: SlugValueDto;
  @ApiProperty({ nullable: true, type: String }) purpose: string | null;
  @ApiProperty({ type: SlugValueDto }) slug: SlugValueDto;
  @ApiProperty({ type: 'integer', format: 'int64', nullable: true, description: 'Non-deleted clusters; null unless show-compute=true' })
  totalClusters: number | null;
  @ApiProperty({ type: 'integer', format: 'int64', nullable: true, description: 'CPU cores; null unless show-compute=true' })
  totalCpu: number | null;
  @ApiProperty({ type: 'integer', format: 'int64', nullable: true, description: 'Memory in MiB; null unless show-compute=true' })
  totalMemory: number | null;
  @ApiProperty({ enum: ENVIRONMENT_TYPES, nullable: true }) type: EnvironmentType | null;
}

export class CountResponse {
  @ApiProperty({ type: 'integer', format: 'int64', example: 3 }) count: number;
}

export class SetEnvironmentMemberRequest {
  @ApiProperty({ enum: KUBERNETES_ROLES, example: 'EDIT', description: "Overrides the organisation member's kubernetesRole in this environment" })
  @IsIn(KUBERNETES_ROLES as unknown as string[], { message: K8S_ROLE_MESSAGE })
  kubernetesRole: KubernetesRole;
}

export class EnvironmentMemberResponse {
  @ApiProperty({ format: 'date-time', description: "When the environment override was made, else when the member joined the organisation" })
  createdAt: string;
  @ApiProperty({ example: 'alice@example.com' }) email: string;
  @ApiProperty({ enum: KUBERNETES_ROLES, description: "Effective role: the environment override, else the organisation member's kubernetesRole" })
  kubernetesRole: KubernetesRole;
  @ApiProperty({ format: 'uuid', description: 'Identity of the organisation membership' }) memberIdentity: string;
}
