import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** A bootstrap token of one BYON node pool; only its SHA-256 is stored. */
@Entity('node_join_tokens')
export class NodeJoinTokenEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'bigint' }) clusterId: number;
  @Column({ type: 'bigint' }) nodePoolId: number;
  /** Hex SHA-256 of the token. */
  @Column({ type: 'text' }) tokenHash: string;
  /** How many new nodes this token may register. */
  @Column({ type: 'integer' }) maxNodes: number;
  @Column({ type: 'integer', default: 0 }) registeredNodes: number;
  /** Username of whoever asked for the join config. */
  @Column({ type: 'text' }) createdBy: string;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) expiresAt: Date;
  @Column({ type: 'timestamptz', nullable: true }) revokedAt: Date | null;
  @Column({ type: 'timestamptz', nullable: true }) lastUsedAt: Date | null;
}
