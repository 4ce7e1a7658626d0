import { Column, Entity, PrimaryGeneratedColumn, VersionColumn } from 'typeorm';

export const SCHEDULED_UPGRADE_STATUSES = [
  'SCHEDULED',
  'SCHEDULED_NOTIFIED',
  'UPDATED',
  'SUCCEEDED',
  'CANCELLED',
  'SUPERSEDED',
  'FAILED',
  'MISSED',
] as const;
export type ScheduledUpgradeStatus = (typeof SCHEDULED_UPGRADE_STATUSES)[number];

/** At most one upgrade per cluster is in one of these (partial unique index on cluster_id). */
export const ACTIVE_SCHEDULED_UPGRADE_STATUSES = ['SCHEDULED', 'SCHEDULED_NOTIFIED', 'UPDATED'] as const satisfies readonly ScheduledUpgradeStatus[];
/** Statuses from which `DELETE` may cancel an upgrade. */
export const CANCELLABLE_SCHEDULED_UPGRADE_STATUSES = ['SCHEDULED', 'SCHEDULED_NOTIFIED'] as const satisfies readonly ScheduledUpgradeStatus[];

@Entity('scheduled_cluster_upgrades')
export class ScheduledClusterUpgradeEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'bigint' }) organisationId: number;
  @Column({ type: 'bigint' }) clusterId: number;
  @Column({ type: 'text' }) fromClusterVersion: string;
  @Column({ type: 'text' }) toClusterVersion: string;
  @Column({ type: 'timestamptz' }) windowStart: Date;
  /** Must be after windowStart (CHECK). */
  @Column({ type: 'timestamptz' }) windowEnd: Date;
  @Column({ type: 'text', default: 'SCHEDULED' }) status: ScheduledUpgradeStatus;
  @Column({ type: 'text', nullable: true }) reason: string | null;
  @Column({ type: 'timestamptz', nullable: true }) notifiedAt: Date | null;
  @Column({ type: 'timestamptz', nullable: true }) startedAt: Date | null;
  @Column({ type: 'timestamptz', nullable: true }) finishedAt: Date | null;
  /** Who cancelled it (status CANCELLED only): a username, or `system` for the scheduler. */
  @Column({ type: 'text', nullable: true }) cancelledBy: string | null;
  /** `system` for the scheduler, else the platform admin's username. */
  @Column({ type: 'text', default: 'system' }) createdBy: string;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
  @VersionColumn() version: number;
}
