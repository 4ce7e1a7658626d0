import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsDefined,
  IsEmail,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { ORGANISATION_TYPES, OrganisationType } from '../../identity/organisation.entity';
import { IsPlainText } from '../../common/names';
import { ApiPartialUpdate } from '../../common/api-docs';

/** The spec's Email object. */
export class EmailDto {
  @ApiProperty({ example: 'ops@acme.example', maxLength: 254 })
  @IsString() @Length(3, 254) @IsEmail({}, { message: 'email must be a valid email address' })
  email: string;
}

/** Email fields of requests take the spec's {email} object or, leniently, the address as a plain string. */
export const LenientEmail = () =>
  Transform(({ value }) => (typeof value === 'string' ? Object.assign(new EmailDto(), { email: value }) : value));

export class AgreementDto {
  @ApiPropertyOptional({
    example: 'terms-of-service',
    maxLength: 100,
    pattern: '^[a-z0-9-]+$',
    description: 'The agreement accepted. No default: an acceptance that names no agreement is refused with 400 naming it.',
  })
  @IsDefined({ message: 'agreementSlug is required: the slug of the agreement accepted' })
  @IsString() @Length(1, 100) @Matches(/^[a-z0-9-]+$/, { message: 'agreementSlug must be a slug (a-z, 0-9, -)' })
  agreementSlug: string;
}

export class SlugDto {
  @ApiProperty({ example: 'acme' }) slugValue: string;
}

export class CreateOrganisationRequest {
  @ApiProperty({
    type: [AgreementDto],
    description: 'Must include every agreement the service requires (by default terms-of-service and data-processing-agreement)',
    example: [{ agreementSlug: 'terms-of-service' }, { agreementSlug: 'data-processing-agreement' }],
    maxItems: 20,
  })
  @IsArray() @ArrayMaxSize(20) @ValidateNested({ each: true }) @Type(() => AgreementDto)
  acceptedAgreements: AgreementDto[];

  @ApiPropertyOptional({ maxLength: 1000, example: 'Main Street 1, 1000 AA Amsterdam', description: 'Default: none (null)' })
  @IsOptional() @IsString() @Length(0, 1000)
  companyAddress?: string;

  @ApiPropertyOptional({ maxLength: 255, example: 'Acme B.V.', description: 'Default: none (null)' })
  @IsOptional() @IsString() @Length(0, 255)
  @IsPlainText()
  companyName?: string;

  @ApiProperty({ type: EmailDto })
  @IsDefined({ message: 'contactEmail is required' }) @LenientEmail() @ValidateNested() @Type(() => EmailDto)
  contactEmail: EmailDto;

  // Not the demo organisation's name (Acme), which a fresh install already has.
  @ApiProperty({ minLength: 2, maxLength: 100, example: 'Globex', description: 'The slug is derived from it and never changes' })
  @IsString() @Length(2, 100)
  @IsPlainText()
  organisationName: string;

  @ApiProperty({ enum: ORGANISATION_TYPES, example: 'BUSINESS' })
  @IsIn(ORGANISATION_TYPES as unknown as string[], { message: `organisationType must be one of: ${ORGANISATION_TYPES.join(', ')}` })
  organisationType: OrganisationType;

  @ApiPropertyOptional({ maxLength: 32, example: 'NL004495445B01', description: 'Checked for format and check digits. Default: none (null)' })
  @IsOptional() @IsString() @Length(1, 32)
  vatNumber?: string;
}

@ApiPartialUpdate()
export class UpdateOrganisationRequest {
  @ApiPropertyOptional({ type: EmailDto, nullable: true, description: 'null removes it' })
  @IsOptional() @LenientEmail() @ValidateNested() @Type(() => EmailDto)
  billingEmail?: EmailDto | null;

  @ApiPropertyOptional({ type: EmailDto })
  @ValidateIf((o: UpdateOrganisationRequest) => o.contactEmail !== undefined)
  @LenientEmail() @ValidateNested() @Type(() => EmailDto)
  contactEmail?: EmailDto;

  @ApiPropertyOptional({ minLength: 2, maxLength: 100, description: 'Renames the organisation; the slug stays' })
  @ValidateIf((o: UpdateOrganisationRequest) => o.organisationName !== undefined)
  @IsString() @Length(2, 100)
  @IsPlainText()
  organisationName?: string;

  @ApiPropertyOptional({ enum: ORGANISATION_TYPES })
  @ValidateIf((o: UpdateOrganisationRequest) => o.organisationType !== undefined)
  @IsIn(ORGANISATION_TYPES as unknown as string[], { message: `organisationType must be one of: ${ORGANISATION_TYPES.join(', ')}` })
  organisationType?: OrganisationType;

  @ApiPropertyOptional({ type: String, maxLength: 32, nullable: true, example: 'NL004495445B01', description: 'null or "" removes it' })
  @IsOptional() @IsString() @Length(0, 32)
  vatNumber?: string | null;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 720,
    example: 24,
    description:
      'Rollout sequencing: hours an upstream cluster must have run a version before the scheduler plans the upgrade of its ' +
      'downstream clusters to it (a cluster may override it)',
  })
  @ValidateIf((o: UpdateOrganisationRequest) => o.upgradeSoakHours !== undefined)
  @IsInt({ message: 'upgradeSoakHours must be a whole number of hours' })
  @Min(0, { message: 'upgradeSoakHours must be between 0 and 720' })
  @Max(720, { message: 'upgradeSoakHours must be between 0 and 720' })
  upgradeSoakHours?: number;
}

/** What a platform administrator changes of any organisation: its type, which sets the quota. */
export class AdminUpdateOrganisationRequest {
  @ApiProperty({ enum: ORGANISATION_TYPES, example: 'ENTERPRISE', description: "The quota follows the type while it holds the old type's default" })
  @IsIn(ORGANISATION_TYPES as unknown as string[], { message: `organisationType must be one of: ${ORGANISATION_TYPES.join(', ')}` })
  organisationType: OrganisationType;
}

export class OrganisationResponse {
  @ApiProperty() acceptedTerms: boolean;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) acceptedTermsAt: string | null;
  @ApiProperty({ nullable: true, type: String }) billingEmail: string | null;
  @ApiProperty({ nullable: true, type: String }) companyAddress: string | null;
  @ApiProperty({ nullable: true, type: String }) companyName: string | null;
  @ApiProperty({ nullable: true, type: String }) contactEmail: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'uuid', deprecated: true, description: 'Same as identity' }) id: string;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty() name: string;
  @ApiProperty({ nullable: true, type: String }) phoneNumber: string | null;
  @ApiProperty() restrictedToAvailableCloudProviders: boolean;
  @ApiProperty({ type: SlugDto }) slug: SlugDto;
  @ApiProperty({ enum: ORGANISATION_TYPES }) type: OrganisationType;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    maximum: 720,
    example: 24,
    description: 'Rollout sequencing: hours an upstream cluster runs a version before its downstream clusters are upgraded to it',
  })
  upgradeSoakHours: number;
  @ApiProperty({ nullable: true, type: String }) vatCode: string | null;
  @ApiProperty() vatCodeValidated: boolean;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) vatCodeValidatedAt: string | null;
}

export class QuotaResponse {
  @ApiProperty({ type: 'integer', format: 'int64', example: 25 }) clustersPerCustomer: number;
}

export class ComputeInformationResponse {
  @ApiProperty({ type: 'integer', format: 'int64' }) totalClusters: number;
  @ApiProperty({ type: 'integer', format: 'int64', description: 'CPU cores' }) totalCpu: number;
  @ApiProperty({ type: 'integer', format: 'int64', description: 'Memory in MiB' }) totalMemory: number;
}

/** An organisation as the original admin client reads it: slug and emails are plain strings. */
export class AdminOrganisationResponse {
  @ApiProperty({ format: 'uuid', description: 'The identity (the client calls it id)' }) id: string;
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty() name: string;
  @ApiProperty({ example: 'acme' }) slug: string;
  @ApiProperty({ enum: ORGANISATION_TYPES }) type: string;
  @ApiProperty({ nullable: true, type: String }) vatCode: string | null;
  @ApiProperty() vatCodeValidated: boolean;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) vatCodeValidatedAt: string | null;
  @ApiProperty({ nullable: true, type: String }) contactEmail: string | null;
  @ApiProperty({ nullable: true, type: String }) billingEmail: string | null;
  @ApiProperty({ nullable: true, type: String }) phoneNumber: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty() acceptedTerms: boolean;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) acceptedTermsAt: string | null;
  @ApiProperty() restrictedToAvailableCloudProviders: boolean;
}
