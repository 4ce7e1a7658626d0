import { Column, Entity, PrimaryGeneratedColumn, VersionColumn } from 'typeorm';

/** Stored and answered in upper-case full form; requests may also use mon..sun in any case. */
export const WEEKDAYS = ['MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY', 'SUNDAY'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

export interface MaintenanceWindow {
  day: Weekday;
  /** `HH:mm`, UTC. */
  startTime: string;
  /** Minutes, 30..1440. */
  duration: number;
}

@Entity('maintenance_schedules')
export class MaintenanceScheduleEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'bigint' }) organisationId: number;
  @Column({ type: 'text' }) name: string;
  @Column({ type: 'jsonb', default: () => `'[]'` }) windows: MaintenanceWindow[];
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
  @VersionColumn() version: number;
}
