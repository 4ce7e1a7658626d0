import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/**
 * Provider type values in the interface's order: the seven platforms in alphabetical order of the
 * real provider names they stand for, interleaved alphabetically with byon, empty and none.
 */
export const CLOUD_PROVIDER_TYPES = [
  'platform_1',
  'platform_2',
  'byon',
  'platform_3',
  'empty',
  'platform_4',
  'platform_5',
  'platform_6',
  'none',
  'platform_7',
] as const;
export type CloudProviderType = (typeof CLOUD_PROVIDER_TYPES)[number];

export const PRIVATE_CLUSTER_SETTINGS = ['UNAVAILABLE', 'ENFORCED', 'PREFERRED', 'SELECTABLE'] as const;
export type PrivateClusterSetting = (typeof PRIVATE_CLUSTER_SETTINGS)[number];

/** Free-form string map shown as `metadata`. */
export interface CloudProviderMetadata {
  [key: string]: string;
}

@Entity('cloud_providers')
export class CloudProviderEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'text' }) slug: string;
  @Column({ type: 'text' }) type: CloudProviderType;
  @Column({ type: 'text' }) name: string;
  @Column({ type: 'text', default: '' }) logo: string;
  @Column({ type: 'boolean', default: true }) available: boolean;
  @Column({ type: 'boolean', default: false }) byon: boolean;
  @Column({ type: 'text' }) privateClusterSetting: PrivateClusterSetting;
  @Column({ type: 'jsonb', default: () => `'{}'` }) metadata: CloudProviderMetadata;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}
