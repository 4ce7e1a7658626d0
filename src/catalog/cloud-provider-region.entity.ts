import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity('cloud_provider_regions')
export class CloudProviderRegionEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'bigint' }) providerId: number;
  @Column({ type: 'text' }) slug: string;
  @Column({ type: 'text' }) name: string;
  @Column({ type: 'boolean', default: true }) available: boolean;
  /** Restricted regions are hidden from organisations limited to available providers. */
  @Column({ type: 'boolean', default: false }) restricted: boolean;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}
