import { Column, Entity, PrimaryGeneratedColumn, VersionColumn } from 'typeorm';

/** The interface has a single integration type; one row per organisation, created disabled. */
export const ORGANISATION_INTEGRATION_TYPES = ['alerting'] as const;
export type OrganisationIntegrationType = (typeof ORGANISATION_INTEGRATION_TYPES)[number];

export interface OrganisationIntegrationConfig {
  [key: string]: string;
}

@Entity('organisation_integrations')
export class OrganisationIntegrationEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'bigint' }) organisationId: number;
  @Column({ type: 'text' }) type: OrganisationIntegrationType;
  @Column({ type: 'text' }) displayName: string;
  @Column({ type: 'boolean', default: false }) enabled: boolean;
  @Column({ type: 'jsonb', default: () => `'{}'` }) config: OrganisationIntegrationConfig;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
  @VersionColumn() version: number;
}
