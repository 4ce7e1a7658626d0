import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

export const TENANT_ALERT_STATUSES = ['firing', 'resolved'] as const;
export type TenantAlertStatus = (typeof TENANT_ALERT_STATUSES)[number];

export interface AlertStringMap {
  [key: string]: string;
}

/** The latest state of one alert (by fingerprint) received through a tenant's webhook. */
@Entity('tenant_alerts')
export class TenantAlertEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'bigint' }) tenantId: number;
  @Column({ type: 'text' }) fingerprint: string;
  @Column({ type: 'text' }) status: TenantAlertStatus;
  @Column({ type: 'jsonb', default: () => `'{}'` }) labels: AlertStringMap;
  @Column({ type: 'jsonb', default: () => `'{}'` }) annotations: AlertStringMap;
  @Column({ type: 'timestamptz' }) startsAt: Date;
  @Column({ type: 'timestamptz', nullable: true }) endsAt: Date | null;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}
