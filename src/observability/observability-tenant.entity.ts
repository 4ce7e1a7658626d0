import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** File name to file content (`ruleFiles`, `templateFiles`). */
export interface AlertingFiles {
  [fileName: string]: string;
}

@Entity('observability_tenants')
export class ObservabilityTenantEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'bigint' }) organisationId: number;
  @Column({ type: 'bigint', nullable: true }) clusterId: number | null;
  @Column({ type: 'bigint', nullable: true }) environmentId: number | null;
  /** `{env}-{cluster}` for cluster tenants; unique per organisation among non-deleted tenants. */
  @Column({ type: 'text' }) slug: string;
  @Column({ type: 'text' }) name: string;
  @Column({ type: 'boolean', default: true }) available: boolean;
  @Column({ type: 'text', nullable: true }) ipWhiteList: string | null;
  /** SHA-256 (hex) of the tenant's alert webhook token; the token itself is never stored. */
  @Column({ type: 'char', length: 64, nullable: true }) webhookTokenHash: string | null;
  /** Alert-manager configuration YAML. */
  @Column({ type: 'text', nullable: true }) alertingConfig: string | null;
  @Column({ type: 'jsonb', default: () => `'{}'` }) ruleFiles: AlertingFiles;
  @Column({ type: 'jsonb', default: () => `'{}'` }) templateFiles: AlertingFiles;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
  @Column({ type: 'timestamptz', nullable: true }) deletedAt: Date | null;
}
