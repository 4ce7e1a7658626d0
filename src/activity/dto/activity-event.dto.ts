import { ApiProperty } from '@nestjs/swagger';

export class ActivityEventActorDto {
  @ApiProperty({ format: 'uuid', nullable: true, type: String, description: 'Identity of the user; null for system' })
  identity: string | null;
  @ApiProperty({ example: 'alice', description: '"system" for background work' }) username: string;
}

export class ActivityEventResponse {
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ example: 'alice created cluster production/web' }) message: string;
  @ApiProperty({ example: 'CLUSTER_CREATED', description: 'The audit event type of the change' }) type: string;
  @ApiProperty({ type: ActivityEventActorDto }) actor: ActivityEventActorDto;
}
