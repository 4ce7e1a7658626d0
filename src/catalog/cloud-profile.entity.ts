import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { CloudProviderType } from './cloud-provider.entity';

export interface CloudProfileMetadata {
  [key: string]: string;
}

@Entity('cloud_profiles')
export class CloudProfileEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  /** Fixed by the catalog file (no database default), so clients can rely on it across installs. */
  @Column({ type: 'uuid' }) identity: string;
  @Column({ type: 'text' }) slug: string;
  @Column({ type: 'text' }) displayName: string;
  /** The provider's type (FK to cloud_providers.type). */
  @Column({ type: 'text' }) type: CloudProviderType;
  @Column({ type: 'boolean', default: true }) enabled: boolean;
  @Column({ type: 'boolean', default: true }) public: boolean;
  @Column({ type: 'jsonb', default: () => `'{}'` }) metadata: CloudProfileMetadata;
  /** Region slugs of the profile's provider. */
  @Column({ type: 'text', array: true, default: () => `'{}'` }) regions: string[];
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}
