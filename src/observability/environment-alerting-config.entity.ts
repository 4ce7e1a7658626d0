import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { AlertingFiles } from './observability-tenant.entity';

/** An environment's alerting configuration; one row per environment, created on first write. */
@Entity('environment_alerting_configs')
export class EnvironmentAlertingConfigEntity {
  @PrimaryColumn({ type: 'bigint' }) environmentId: number;
  @Column({ type: 'text', nullable: true }) alertingConfig: string | null;
  @Column({ type: 'jsonb', default: () => `'{}'` }) ruleFiles: AlertingFiles;
  @Column({ type: 'jsonb', default: () => `'{}'` }) templateFiles: AlertingFiles;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}
