import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** Ordered from least to most privileged; a role includes every right of those before it. */
export const ORGANISATION_ROLES = ['VIEWER', 'MEMBER', 'ADMIN', 'OWNER'] as const;
export type OrganisationRole = (typeof ORGANISATION_ROLES)[number];
export const KUBERNETES_ROLES = ['CLUSTER_ADMIN', 'EDIT', 'VIEW', 'NONE'] as const;
export type KubernetesRole = (typeof KUBERNETES_ROLES)[number];

export function roleAtLeast(role: OrganisationRole, least: OrganisationRole): boolean {
  return ORGANISATION_ROLES.indexOf(role) >= ORGANISATION_ROLES.indexOf(least);
}

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
