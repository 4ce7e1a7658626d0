import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity('cluster_versions')
export class ClusterVersionEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  /** Semver, e.g. `1.31.6`. */
  @Column({ type: 'text' }) version: string;
  /** e.g. `v1.31.6`. */
  @Column({ type: 'text' }) kubernetesVersion: string;
  @Column({ type: 'boolean', default: true }) available: boolean;
  @Column({ type: 'text', default: '' }) note: string;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}
