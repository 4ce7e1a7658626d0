import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity('addons')
export class AddonEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  /** Key in a cluster's `addons` map. */
  @Column({ type: 'text' }) name: string;
  @Column({ type: 'text' }) displayName: string;
  @Column({ type: 'text', default: '' }) description: string;
  @Column({ type: 'boolean', default: false }) defaultEnabled: boolean;
  /** Organisation integration type this add-on feeds (e.g. `alerting`), if any. */
  @Column({ type: 'text', nullable: true }) integration: string | null;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}
