import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/**
 * An instruction to the simulated provisioning driver to fail a step of one cluster, `remaining`
 * more times. Kept in the database so every replica's driver sees it.
 */
@Entity('simulated_driver_faults')
export class SimulatedDriverFaultEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'bigint' }) clusterId: number;
  /** The provisionStatus or status step to fail, e.g. `CLUSTER_PROVISIONED` or `starting`. */
  @Column({ type: 'text' }) step: string;
  @Column({ type: 'integer', default: 1 }) remaining: number;
  @Column({ type: 'timestamptz' }) createdAt: Date;
}
