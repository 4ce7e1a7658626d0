import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { KubernetesRole } from '../identity/organisation-member.entity';

/** Per-environment override of an organisation member's kubernetesRole. */
@Entity('environment_members')
export class EnvironmentMemberEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'bigint' }) environmentId: number;
  /** organisation_members.id */
  @Column({ type: 'bigint' }) memberId: number;
  @Column({ type: 'text' }) kubernetesRole: KubernetesRole;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}
