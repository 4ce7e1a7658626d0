import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity('cloud_provider_node_types')
export class CloudProviderNodeTypeEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'bigint' }) providerId: number;
  @Column({ type: 'text' }) type: string;
  /** Cores. */
  @Column({ type: 'bigint' }) cpu: number;
  /** MiB. */
  @Column({ type: 'bigint' }) memory: number;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}
