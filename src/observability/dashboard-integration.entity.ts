import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

export const DASHBOARD_INTEGRATION_STATUSES = ['PENDING', 'CONNECTED', 'ERROR'] as const;
export type DashboardIntegrationStatus = (typeof DASHBOARD_INTEGRATION_STATUSES)[number];

@Entity('dashboard_integrations')
export class DashboardIntegrationEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'bigint' }) organisationId: number;
  /** Unique per organisation among non-deleted integrations. */
  @Column({ type: 'text' }) slug: string;
  @Column({ type: 'text' }) name: string;
  @Column({ type: 'text' }) url: string;
  /** The write-only API token, AES-256-GCM encrypted (base64 envelope). Never returned. */
  @Column({ type: 'text' }) apiTokenCiphertext: string;
  @Column({ type: 'text', nullable: true }) datasourcePrefix: string | null;
  @Column({ type: 'boolean', default: false }) manageDatasources: boolean;
  @Column({ type: 'boolean', default: false }) provisionUsers: boolean;
  @Column({ type: 'text', default: 'PENDING' }) status: DashboardIntegrationStatus;
  @Column({ type: 'text', nullable: true }) statusMessage: string | null;
  @Column({ type: 'timestamptz', nullable: true }) checkedAt: Date | null;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
  @Column({ type: 'timestamptz', nullable: true }) deletedAt: Date | null;
}
