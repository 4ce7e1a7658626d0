import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsBoolean, IsDefined, IsInt, IsOptional, IsString, Length, Matches, Max, MaxLength, Min } from 'class-validator';
import { ApiPartialUpdate } from '../../common/api-docs';
import { OUTBOUND_MAX_URL_LENGTH } from '../../common/outbound-policy';
import { Secret } from '../../common/secret-fields';
import { DRIVER_HEALTH_STATUSES, type DriverHealthStatus } from '../cluster-driver.entity';

export const DRIVER_NAME_PATTERN = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
/** `whsec_` + base64 of 24 to 64 random bytes (Standard Webhooks). */
export const DRIVER_SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/;
const SECRET_DESCRIPTION =
  'The Standard Webhooks signing secret the driver verifies requests with: `whsec_` + base64 of 24 to 64 random bytes ' +
  '(e.g. `echo whsec_$(openssl rand -base64 32)`). Configure the same value in the driver. Sealed at rest and never answered.';

export class CreateClusterDriverRequest {
  @ApiProperty({ example: 'capi-driver', minLength: 1, maxLength: 63, pattern: DRIVER_NAME_PATTERN.source, description: 'Unique name (metrics, messages, paths).' })
  @IsDefined({ message: 'name is required' })
  @IsString() @Length(1, 63) @Matches(DRIVER_NAME_PATTERN, { message: 'name may contain lowercase letters, digits and inner dashes only' })
  name: string;

  @ApiProperty({
    example: 'http://127.0.0.1:9100',
    maxLength: OUTBOUND_MAX_URL_LENGTH,
    format: 'uri',
    description:
      "Base URL of the driver (http or https, no credentials); the protocol's paths are appended (`/v1/apply`). It may point into a " +
      'private network: only platform administrators register drivers.',
  })
  @IsDefined({ message: 'url is required' })
  @IsString() @MaxLength(OUTBOUND_MAX_URL_LENGTH)
  url: string;

  @ApiProperty({ example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo=', pattern: DRIVER_SECRET_PATTERN.source, maxLength: 100, description: SECRET_DESCRIPTION })
  @Secret()
  @IsDefined({ message: 'signingSecret is required: the driver verifies every request with it' })
  @IsString() @Matches(DRIVER_SECRET_PATTERN, { message: 'signingSecret must be whsec_ followed by the base64 of 24 to 64 random bytes' })
  signingSecret: string;

  @ApiPropertyOptional({
    type: [String],
    maxItems: 20,
    example: ['platform_1'],
    description: 'Cloud providers (type or slug) whose clusters it serves unless a driver is registered for their cloud profile. Default: none. With cloudProfiles: at least one of the two.',
  })
  @IsOptional() @IsArray() @ArrayMaxSize(20) @IsString({ each: true }) @MaxLength(63, { each: true })
  cloudProviders?: string[];

  @ApiPropertyOptional({
    type: [String],
    maxItems: 50,
    example: [],
    description: 'Cloud profiles (slug) whose clusters it serves, before any driver registered for the provider. Default: none.',
  })
  @IsOptional() @IsArray() @ArrayMaxSize(50) @IsString({ each: true }) @MaxLength(100, { each: true })
  cloudProfiles?: string[];

  @ApiPropertyOptional({
    default: true,
    example: false,
    description: 'Only enabled drivers serve clusters. Registering one disabled, checking its health, then enabling it moves no cluster before the driver answers.',
  })
  @IsOptional() @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({ default: 15000, minimum: 100, maximum: 300000, description: 'A call is given up after this many milliseconds (a retryable error).' })
  @IsOptional() @IsInt() @Min(100) @Max(300000)
  timeoutMs?: number;

  @ApiPropertyOptional({ default: 16, minimum: 1, maximum: 1024, description: 'At most this many calls to the driver at once, per replica; more wait for a slot.' })
  @IsOptional() @IsInt() @Min(1) @Max(1024)
  maxInFlight?: number;
}

@ApiPartialUpdate()
export class UpdateClusterDriverRequest {
  @ApiPropertyOptional({ example: 'http://127.0.0.1:9100', maxLength: OUTBOUND_MAX_URL_LENGTH, format: 'uri' })
  @IsOptional() @IsString() @MaxLength(OUTBOUND_MAX_URL_LENGTH)
  url?: string;

  @ApiPropertyOptional({ example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo=', pattern: DRIVER_SECRET_PATTERN.source, maxLength: 100, description: `A new secret (rotation). ${SECRET_DESCRIPTION}` })
  @Secret()
  @IsOptional() @IsString() @Matches(DRIVER_SECRET_PATTERN, { message: 'signingSecret must be whsec_ followed by the base64 of 24 to 64 random bytes' })
  signingSecret?: string;

  @ApiPropertyOptional({ type: [String], maxItems: 20, example: ['platform_1'], description: 'Replaces the list.' })
  @IsOptional() @IsArray() @ArrayMaxSize(20) @IsString({ each: true }) @MaxLength(63, { each: true })
  cloudProviders?: string[];

  @ApiPropertyOptional({ type: [String], maxItems: 50, example: [], description: 'Replaces the list.' })
  @IsOptional() @IsArray() @ArrayMaxSize(50) @IsString({ each: true }) @MaxLength(100, { each: true })
  cloudProfiles?: string[];

  @ApiPropertyOptional({ example: false, description: 'false: refused with 409 while clusters are served by it.' })
  @IsOptional() @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({ minimum: 100, maximum: 300000 })
  @IsOptional() @IsInt() @Min(100) @Max(300000)
  timeoutMs?: number;

  @ApiPropertyOptional({ minimum: 1, maximum: 1024 })
  @IsOptional() @IsInt() @Min(1) @Max(1024)
  maxInFlight?: number;
}

export class DriverInfoResponse {
  @ApiProperty({ example: 'example-driver' }) name: string;
  @ApiProperty({ example: '1.0.0' }) version: string;
}

export class ClusterDriverHealthResponse {
  @ApiProperty({ enum: DRIVER_HEALTH_STATUSES, example: 'HEALTHY', description: 'UNKNOWN until the first health check.' }) status: DriverHealthStatus;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2026-01-01T12:00:00.000Z' }) checkedAt: string | null;
  @ApiProperty({ type: String, nullable: true, example: null, description: 'Why the last check failed.' }) message: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'v1', description: 'What the driver answered at the last successful check.' }) protocolVersion: string | null;
  @ApiProperty({ type: DriverInfoResponse, nullable: true }) driver: DriverInfoResponse | null;
  @ApiProperty({ type: [String], example: ['platform_1'] }) cloudProviders: string[];
  @ApiProperty({ type: [String], example: ['stopStart', 'upgrade'] }) features: string[];
}

export class ClusterDriverResponse {
  @ApiProperty({ format: 'uuid', example: '7b0c6a53-3c3e-4d0f-9a51-8c0a8d2f1e11' }) identity: string;
  @ApiProperty({ example: 'example-driver' }) name: string;
  @ApiProperty({ example: 'http://127.0.0.1:9100' }) url: string;
  @ApiProperty({ type: [String], example: ['platform_1'], description: 'Cloud provider types it serves.' }) cloudProviders: string[];
  @ApiProperty({ type: [String], example: [], description: 'Cloud profile slugs it serves.' }) cloudProfiles: string[];
  @ApiProperty({ example: true }) enabled: boolean;
  @ApiProperty({ example: 15000 }) timeoutMs: number;
  @ApiProperty({ example: 16 }) maxInFlight: number;
  @ApiProperty({ type: ClusterDriverHealthResponse }) health: ClusterDriverHealthResponse;
  @ApiProperty({ type: String, format: 'date-time' }) createdAt: string;
  @ApiProperty({ type: String, format: 'date-time' }) modifiedAt: string;
}
