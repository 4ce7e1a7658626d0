import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsOptional, IsString, Length, ValidateNested } from 'class-validator';
import { KUBERNETES_ROLES, KubernetesRole } from '../../identity/organisation-member.entity';
import { ORGANISATION_ROLES, OrganisationRole } from '../../common/organisation-roles';
import { EmailDto, LenientEmail, SlugDto } from './organisation.dto';
import { IsPlainText } from '../../common/names';
import { ApiPartialUpdate } from '../../common/api-docs';

const ROLE_MESSAGE = `role must be one of: ${ORGANISATION_ROLES.join(', ')}`;
const K8S_ROLE_MESSAGE = `kubernetesRole must be one of: ${KUBERNETES_ROLES.join(', ')}`;

export class AddMemberRequest {
  @ApiPropertyOptional({ type: EmailDto, description: 'The user to add, by email (or give username). Left out: username names the user; without either the request is 400' })
  @IsOptional() @LenientEmail() @ValidateNested() @Type(() => EmailDto)
  email?: EmailDto;

  @ApiPropertyOptional({ enum: KUBERNETES_ROLES, default: 'VIEW' })
  @IsOptional() @IsIn(KUBERNETES_ROLES as unknown as string[], { message: K8S_ROLE_MESSAGE })
  kubernetesRole?: KubernetesRole;

  @ApiPropertyOptional({ enum: ORGANISATION_ROLES, default: 'VIEWER', description: 'Only an OWNER may grant OWNER' })
  @IsOptional() @IsIn(ORGANISATION_ROLES as unknown as string[], { message: ROLE_MESSAGE })
  role?: OrganisationRole;

  @ApiPropertyOptional({ minLength: 1, maxLength: 64, description: 'The user to add, by username (or give email). Left out: email names the user; without either the request is 400' })
  @IsOptional() @IsString() @Length(1, 64)
  @IsPlainText()
  username?: string;
}

@ApiPartialUpdate()
export class UpdateMemberRequest {
  @ApiPropertyOptional({ enum: KUBERNETES_ROLES })
  @IsOptional() @IsIn(KUBERNETES_ROLES as unknown as string[], { message: K8S_ROLE_MESSAGE })
  kubernetesRole?: KubernetesRole;

  @ApiPropertyOptional({ enum: ORGANISATION_ROLES, description: 'Only an OWNER may grant OWNER or change an OWNER; the last OWNER cannot be demoted' })
  @IsOptional() @IsIn(ORGANISATION_ROLES as unknown as string[], { message: ROLE_MESSAGE })
  role?: OrganisationRole;
}

export class EmailResponse {
  @ApiProperty({ example: 'alice@example.com' }) email: string;
}

export class OrganisationMemberResponse {
  @ApiProperty({ type: EmailResponse }) email: EmailResponse;
  @ApiProperty({ format: 'uuid', description: 'Identity of the membership' }) identity: string;
  @ApiProperty({ format: 'date-time' }) joinedAt: string;
  @ApiProperty({ enum: KUBERNETES_ROLES }) kubernetesRole: KubernetesRole;
  @ApiProperty({ enum: ORGANISATION_ROLES }) role: OrganisationRole;
  @ApiProperty({ format: 'uuid', description: 'Identity of the user' }) subject: string;
  @ApiProperty() username: string;
}

export class OrganisationMembershipResponse {
  @ApiProperty({ type: EmailResponse }) email: EmailResponse;
  @ApiProperty({ format: 'uuid', description: 'Identity of the calling user' }) identity: string;
  @ApiProperty({ enum: KUBERNETES_ROLES }) kubernetesRole: KubernetesRole;
  @ApiProperty({ format: 'uuid', description: 'Identity of the membership' }) memberIdentity: string;
  @ApiProperty({ description: 'Organisation name' }) name: string;
  @ApiProperty({ format: 'uuid' }) organisationIdentity: string;
  @ApiProperty({ enum: ORGANISATION_ROLES }) role: OrganisationRole;
  @ApiProperty({ type: SlugDto, description: 'Organisation slug' }) slug: SlugDto;
}
