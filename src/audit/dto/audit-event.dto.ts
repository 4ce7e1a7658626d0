import { ApiProperty } from '@nestjs/swagger';
import { Matches } from 'class-validator';

/** Audit event of the cluster path (no referencedEntityIdentity). */
export class ClusterAuditEventResponse {
  @ApiProperty({ type: 'integer', format: 'int64', nullable: true, description: 'Id of the acting user; null for system' })
  actorId: number | null;
  @ApiProperty({ example: 'alice' }) actorUsername: string;
  @ApiProperty({ nullable: true, type: String }) cloudAccountName: string | null;
  @ApiProperty({ type: 'integer', format: 'int64', nullable: true }) clusterId: number | null;
  @ApiProperty({ type: 'integer', format: 'int64', nullable: true }) clusterNodePoolId: number | null;
  @ApiProperty({ nullable: true, type: String }) clusterNodePoolName: string | null;
  @ApiProperty({ nullable: true, type: String }) clusterSlug: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ type: 'integer', format: 'int64', nullable: true, description: 'Id of the organisation' }) customerId: number | null;
  @ApiProperty({ nullable: true, type: String, description: 'Slug of the organisation' }) customerSlug: string | null;
  @ApiProperty({
    type: 'object',
    additionalProperties: {
      type: 'object',
      properties: {
        new: { description: 'Value after the change (null for a delete); any JSON value' },
        old: { description: 'Value before the change (null for a create); any JSON value' },
      },
    },
    description: 'Each changed property mapped to {new, old}; secrets appear as "[redacted]"',
    example: { name: { old: 'web', new: 'web-1' } },
  })
  details: Record<string, { new: unknown; old: unknown }>;
  @ApiProperty({ type: 'integer', format: 'int64', nullable: true }) environmentId: number | null;
  @ApiProperty({ nullable: true, type: String }) environmentSlug: string | null;
  @ApiProperty({ example: 'CLUSTER_UPDATED', description: '<RESOURCE>_<ACTION> in upper snake case' }) type: string;
}

/** Audit event of the organisation-wide list. */
export class AuditEventResponse extends ClusterAuditEventResponse {
  @ApiProperty({ nullable: true, type: String, description: 'Identity of the entity the event is about' })
  referencedEntityIdentity: string | null;
}

const SLUG = /^[a-z0-9-_]+$/;

export class ClusterAuditPathParams {
  @ApiProperty({ example: 'acme' })
  @Matches(SLUG, { message: 'organisationSlug must match ^[a-z0-9-_]+$' })
  organisationSlug: string;

  @ApiProperty({ example: 'production', pattern: SLUG.source })
  @Matches(SLUG, { message: 'environmentSlug must match ^[a-z0-9-_]+$' })
  environmentSlug: string;

  @ApiProperty({ example: 'web', pattern: SLUG.source, description: 'Slug of the cluster' })
  @Matches(SLUG, { message: 'cluster must match ^[a-z0-9-_]+$' })
  cluster: string;
}
