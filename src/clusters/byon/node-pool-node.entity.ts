import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** A customer machine registered into a BYON node pool (name unique per pool). */
@Entity('node_pool_nodes')
export class NodePoolNodeEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'bigint' }) clusterId: number;
  @Column({ type: 'bigint' }) nodePoolId: number;
  @Column({ type: 'bigint', nullable: true }) joinTokenId: number | null;
  @Column({ type: 'text' }) name: string;
  @Column({ type: 'text' }) address: string;
  @Column({ type: 'text' }) kubeletVersion: string;
  /** Cores the node reported, when it did. */
  @Column({ type: 'integer', nullable: true }) cpu: number | null;
  /** MiB the node reported, when it did. */
  @Column({ type: 'bigint', nullable: true }) memory: number | null;
  @Column({ type: 'timestamptz' }) joinedAt: Date;
  @Column({ type: 'timestamptz' }) lastRegisteredAt: Date;
}
