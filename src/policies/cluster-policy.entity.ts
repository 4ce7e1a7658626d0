import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { FailurePolicy } from './policy-limits';

export const POLICY_ACTIONS = ['Deny', 'Warn', 'Audit'] as const;
export type PolicyAction = (typeof POLICY_ACTIONS)[number];

/** A cluster policy; `organisationId` null is a platform policy (migration 1795400031742). */
@Entity('cluster_policies')
export class ClusterPolicyEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid' }) identity: string;
  @Column({ type: 'bigint', nullable: true }) organisationId: number | null;
  @Column() name: string;
  @Column() description: string;
  @Column() expression: string;
  @Column() message: string;
  @Column({ type: 'text', nullable: true }) messageExpression: string | null;
  @Column({ type: 'text' }) action: PolicyAction;
  /** Migration 1795400071000. */
  @Column({ type: 'text' }) failurePolicy: FailurePolicy;
  @Column({ type: 'text', array: true, nullable: true }) environments: string[] | null;
  @Column({ type: 'text', array: true, nullable: true }) environmentTypes: string[] | null;
  /** The operations (CREATE, UPDATE, DELETE) it applies to; null: every one (migration 1795400171000). */
  @Column({ type: 'text', array: true, nullable: true }) operations: string[] | null;
  @Column() enabled: boolean;
  @Column() createdBy: string;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}
