import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

export type AuditDetails = Record<string, { old: unknown; new: unknown }>;

@Entity('audit_events')
export class AuditEventEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'text' }) type: string;
  @Column({ type: 'bigint', nullable: true }) actorId: number | null;
  @Column({ type: 'text' }) actorUsername: string;
  @Column({ type: 'bigint', nullable: true }) organisationId: number | null;
  @Column({ type: 'text', nullable: true }) organisationSlug: string | null;
  @Column({ type: 'bigint', nullable: true }) environmentId: number | null;
  @Column({ type: 'text', nullable: true }) environmentSlug: string | null;
  @Column({ type: 'bigint', nullable: true }) clusterId: number | null;
  @Column({ type: 'text', nullable: true }) clusterSlug: string | null;
  @Column({ type: 'bigint', nullable: true }) clusterNodePoolId: number | null;
  @Column({ type: 'text', nullable: true }) clusterNodePoolName: string | null;
  @Column({ type: 'text', nullable: true }) cloudAccountName: string | null;
  @Column({ type: 'text', nullable: true }) referencedEntityIdentity: string | null;
  @Column({ type: 'jsonb', default: () => `'{}'` }) details: AuditDetails;
  @Column({ type: 'timestamptz' }) createdAt: Date;
}
