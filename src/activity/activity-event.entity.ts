import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity('activity_events')
export class ActivityEventEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'bigint' }) organisationId: number;
  @Column({ type: 'text' }) type: string;
  @Column({ type: 'text' }) message: string;
  @Column({ type: 'uuid', nullable: true }) actorIdentity: string | null;
  @Column({ type: 'text' }) actorUsername: string;
  @Column({ type: 'timestamptz' }) createdAt: Date;
}
