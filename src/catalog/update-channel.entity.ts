import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity('update_channels')
export class UpdateChannelEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'text' }) name: string;
  /** FK to cluster_versions.version (ON UPDATE CASCADE). */
  @Column({ type: 'text' }) kubernetesClusterVersion: string;
  @Column({ type: 'boolean', default: true }) available: boolean;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}
