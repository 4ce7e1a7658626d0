import { Column, Entity, PrimaryGeneratedColumn, VersionColumn } from 'typeorm';
import type { CloudProviderType } from '../catalog/cloud-provider.entity';

export interface CloudAccountMetadata {
  [key: string]: string;
}

@Entity('cloud_accounts')
export class CloudAccountEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'bigint' }) organisationId: number;
  @Column({ type: 'bigint' }) cloudProfileId: number;
  /** Copied from the cloud profile's type when the account is created. */
  @Column({ type: 'text' }) cloudProviderType: CloudProviderType;
  @Column({ type: 'text' }) displayName: string;
  @Column({ type: 'boolean', default: true }) enabled: boolean;
  @Column({ type: 'jsonb', default: () => `'{}'` }) metadata: CloudAccountMetadata;
  /** cloud_credentials.id; set to null by the database when that credential is deleted. */
  @Column({ type: 'bigint', nullable: true }) primaryCredentialsId: number | null;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
  @VersionColumn() version: number;
}
