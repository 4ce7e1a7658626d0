import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity('users')
export class UserEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'text' }) username: string;
  @Column({ type: 'text' }) email: string;
  @Column({ type: 'text', nullable: true }) oidcId: string | null;
  @Column({ type: 'boolean', default: false }) canCreateOrganisations: boolean;
  @Column({ type: 'boolean', default: false }) platformAdmin: boolean;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}
