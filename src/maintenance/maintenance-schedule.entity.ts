import { Column, Entity, PrimaryGeneratedColumn, VersionColumn } from 'typeorm';
import type { MaintenanceExclusion } from './maintenance-exclusion';
import type { MaintenanceWindow } from './maintenance-window';

@Entity('maintenance_schedules')
export class MaintenanceScheduleEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'bigint' }) organisationId: number;
  @Column({ type: 'text' }) name: string;
  @Column({ type: 'jsonb', default: () => `'[]'` }) windows: MaintenanceWindow[];
  /** IANA time zone the windows' start times are local to. */
  @Column({ type: 'text', default: 'UTC' }) timeZone: string;
  /** Periods without scheduler-planned upgrades of a scope, for every cluster on the schedule. */
  @Column({ type: 'jsonb', default: () => `'[]'` }) exclusions: MaintenanceExclusion[];
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
  @VersionColumn() version: number;
}
