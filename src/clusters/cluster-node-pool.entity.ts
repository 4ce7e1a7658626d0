import { Column, Entity, PrimaryGeneratedColumn, VersionColumn } from 'typeorm';
import type { Condition } from './cluster-conditions';
import type { ProvisionStatus } from './cluster.entity';

export const NODE_POOL_UPGRADE_STRATEGIES = [
  'REPLACE',
  'INPLACE',
  'INPLACE_WITHOUT_DRAIN',
  'REPLACE_MINOR_INPLACE_PATCH',
  'REPLACE_MINOR_INPLACE_PATCH_WITHOUT_DRAIN',
] as const;
export type NodePoolUpgradeStrategy = (typeof NODE_POOL_UPGRADE_STRATEGIES)[number];

/** Kubernetes taint effects (not checked by the database; validated by the DTO). */
export const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;
export type TaintEffect = (typeof TAINT_EFFECTS)[number];

export interface NodeTaint {
  key: string;
  value: string;
  effect: TaintEffect;
}

export interface NodePoolStringMap {
  [key: string]: string;
}

@Entity('cluster_node_pools')
export class ClusterNodePoolEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'bigint' }) clusterId: number;
  /** Unique per cluster. */
  @Column({ type: 'text' }) name: string;
  @Column({ type: 'text', nullable: true }) availabilityZone: string | null;
  /** A node type (cloud_provider_node_types.type) of the cluster's provider. */
  @Column({ type: 'text' }) nodeSize: string;
  @Column({ type: 'boolean', default: false }) autoScaling: boolean;
  @Column({ type: 'bigint' }) minSize: number;
  @Column({ type: 'bigint' }) maxSize: number;
  @Column({ type: 'boolean', default: true }) enableNodeAutoReplacement: boolean;
  @Column({ type: 'boolean', default: false }) enableNodeReboots: boolean;
  @Column({ type: 'text', default: 'REPLACE' }) upgradeStrategy: NodePoolUpgradeStrategy;
  @Column({ type: 'jsonb', default: () => `'{}'` }) annotations: NodePoolStringMap;
  @Column({ type: 'jsonb', default: () => `'{}'` }) labels: NodePoolStringMap;
  @Column({ type: 'jsonb', default: () => `'[]'` }) taints: NodeTaint[];
  @Column({ type: 'text', default: 'ACCEPTED' }) provisionStatus: ProvisionStatus;
  /** The cluster generation of the pool's last change (set by trigger cms_node_pool_generation). */
  @Column({ type: 'bigint', default: 1, transformer: { to: (v: unknown) => v, from: (v: unknown) => (v == null ? v : Number(v)) } })
  generation: number;
  /** The cluster generation at which the driver reported the pool applied; null: not yet. */
  @Column({ type: 'bigint', nullable: true, transformer: { to: (v: unknown) => v, from: (v: unknown) => (v == null ? null : Number(v)) } })
  observedGeneration: number | null;
  /** Ready, Reconciling, Degraded. */
  @Column({ type: 'jsonb', default: () => `'[]'` }) conditions: Condition[];
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
  @VersionColumn() version: number;
}
