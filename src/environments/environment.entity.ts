import { Column, Entity, PrimaryGeneratedColumn, VersionColumn } from 'typeorm';

export const ENVIRONMENT_TYPES = ['production', 'staging', 'development', 'demo', 'other'] as const;
export type EnvironmentType = (typeof ENVIRONMENT_TYPES)[number];

@Entity('environments')
export class EnvironmentEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'bigint' }) organisationId: number;
  /** Unique per organisation among non-deleted environments. */
  @Column({ type: 'text' }) slug: string;
  @Column({ type: 'text' }) name: string;
  @Column({ type: 'text', nullable: true }) description: string | null;
  @Column({ type: 'text', nullable: true }) purpose: string | null;
  @Column({ type: 'text', nullable: true }) type: EnvironmentType | null;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
  @Column({ type: 'timestamptz', nullable: true }) deletedAt: Date | null;
  @VersionColumn() version: number;
}
