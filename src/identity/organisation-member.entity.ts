import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { OrganisationRole } from '../common/organisation-roles';

export const KUBERNETES_ROLES = ['CLUSTER_ADMIN', 'EDIT', 'VIEW', 'NONE'] as const;
export type KubernetesRole = (typeof KUBERNETES_ROLES)[number];

@Entity('organisation_members')
export class OrganisationMemberEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'bigint' }) organisationId: number;
  @Column({ type: 'bigint' }) userId: number;
  @Column({ type: 'text' }) role: OrganisationRole;
  @Column({ type: 'text' }) kubernetesRole: KubernetesRole;
  @Column({ type: 'timestamptz' }) joinedAt: Date;
}
