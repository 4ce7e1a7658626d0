import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity('cloud_provider_availability_zones')
export class CloudProviderAvailabilityZoneEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'bigint' }) regionId: number;
  @Column({ type: 'text' }) slug: string;
  @Column({ type: 'text' }) name: string;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}
