import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsEmail, IsOptional, IsString, IsUUID, Length, Matches } from 'class-validator';
import { PageQueryDto } from '../../common/paging';

export class AddUserRequest {
  @ApiProperty({ example: 'alice@example.com', maxLength: 254 })
  @IsEmail({}, { message: 'email must be a valid email address' }) @Length(3, 254)
  email: string;

  @ApiProperty({ example: 'alice', minLength: 3, maxLength: 64, pattern: '^[A-Za-z0-9._-]+$' })
  @IsString() @Length(3, 64) @Matches(/^[A-Za-z0-9._-]+$/, { message: 'username may contain letters, digits, dot, dash and underscore only' })
  username: string;

  @ApiPropertyOptional({ format: 'uuid', description: "The user's OIDC identity: the subject (a UUID) at the OIDC issuer. Left out: none (null); the user signs in with personal access tokens" })
  @IsOptional() @IsUUID('all', { message: 'oidcId must be a UUID (the subject at the OIDC issuer)' })
  oidcId?: string;

  @ApiPropertyOptional({ default: false }) @IsOptional() @IsBoolean()
  canCreateOrganisations?: boolean;

  @ApiPropertyOptional({ default: false }) @IsOptional() @IsBoolean()
  platformAdmin?: boolean;
}

export class UserResponse {
  @ApiProperty() canCreateOrganisations: boolean;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty() email: string;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty({ nullable: true, type: String, format: 'uuid', description: "The user's OIDC identity (null until known)" }) oidcId: string | null;
  @ApiProperty() username: string;
}

export class UserSearchQuery extends PageQueryDto {
  @ApiProperty({ minLength: 3, maxLength: 64, example: 'adm', description: 'Username prefix, at least 3 characters' })
  @IsString() @Length(3, 64, { message: 'username must be at least 3 characters (a prefix of the username)' })
  username: string;
}

export class UserSearchResult {
  @ApiProperty() email: string;
  @ApiProperty() username: string;
}
