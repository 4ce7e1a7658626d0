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
  /** The public settings of `config` (INTEGRATION_CONFIG_PUBLIC_KEYS); the other values are in secretConfigCiphertext. */
  @Column({ type: 'jsonb', default: () => `'{}'` }) config: OrganisationIntegrationConfig;
  /** SecretBox envelope of the secret values of `config` (JSON), bound to the integration (integrationConfigContext). */
  @Column({ type: 'text', nullable: true }) secretConfigCiphertext: string | null;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
  @VersionColumn() version: number;
}

/** SecretBox context of an integration's secret config values. */
export const integrationConfigContext = (identity: string) => `organisation-integration-config:${identity}`;
