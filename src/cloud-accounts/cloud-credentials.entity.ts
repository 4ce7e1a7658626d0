import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { CloudProviderType } from '../catalog/cloud-provider.entity';

export interface CloudCredentialsMetadata {
  [key: string]: string;
}

@Entity('cloud_credentials')
export class CloudCredentialsEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'bigint' }) cloudAccountId: number;
  @Column({ type: 'text' }) displayName: string;
  @Column({ type: 'text' }) cloudType: CloudProviderType;
  @Column({ type: 'jsonb', default: () => `'{}'` }) metadata: CloudCredentialsMetadata;
  /**
   * The platform-specific secret JSON, encrypted with AES-256-GCM and stored as a base64 envelope.
   * Never returned, logged or written to audit details.
   */
  @Column({ type: 'text' }) secretCiphertext: string;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}
