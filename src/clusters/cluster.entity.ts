import { Column, Entity, PrimaryGeneratedColumn, VersionColumn } from 'typeorm';
import type { MaintenanceExclusion } from '../maintenance/maintenance-exclusion';
import type { Condition } from './cluster-conditions';

export const CLUSTER_STATUSES = [
  'new',
  'provisioning',
  'provisioned',
  'starting',
  'started',
  'stopping',
  'stopped',
  'deleting',
  'deleted',
  'unknown',
] as const;
export type ClusterStatus = (typeof CLUSTER_STATUSES)[number];

export const CLUSTER_DESIRED_STATUSES = ['starting', 'stopping', 'deleting'] as const;
export type ClusterDesiredStatus = (typeof CLUSTER_DESIRED_STATUSES)[number];

/** In the order provisioning advances through them (UNKNOWN first, DONE last). */
export const PROVISION_STATUSES = [
  'UNKNOWN',
  'ACCEPTED',
  'OIDC_PROVISIONED',
  'CLUSTER_PROVISIONED',
  'INITIAL_NODE_POOLS_PROVISIONED',
  'INITIAL_ADDONS_PROVISIONED',
  'DONE',
] as const;
export type ProvisionStatus = (typeof PROVISION_STATUSES)[number];

export const CNI_TYPES = ['custom', 'cilium', 'calico'] as const;
export type CniType = (typeof CNI_TYPES)[number];

export const POD_SECURITY_STANDARDS_PROFILES = ['privileged', 'baseline', 'restricted'] as const;
export type PodSecurityStandardsProfile = (typeof POD_SECURITY_STANDARDS_PROFILES)[number];

/** Statuses the reconciler still has to drive forward (everything except started, stopped, deleted). */
export const RECONCILE_STATUSES = ['new', 'provisioning', 'provisioned', 'starting', 'stopping', 'deleting', 'unknown'] as const;

/**
 * The predicate of the partial index `clusters_reconcile_idx` (migration DomainSchema1763800100000; on
 * `(next_attempt_at NULLS FIRST, id)`, the claim's order, since ReconcileClaimOrder1764000031200; with pending
 * generations since ReconcileGenerations1795400150100).
 * The reconciler's claim query must contain it unchanged (unqualified column names) for PostgreSQL
 * to use that index, e.g.
 * `SELECT id FROM clusters WHERE ${RECONCILE_CANDIDATE_PREDICATE} AND (next_attempt_at IS NULL OR next_attempt_at <= $1)
 *  ORDER BY next_attempt_at NULLS FIRST, id LIMIT $2 FOR UPDATE SKIP LOCKED`.
 */
export const RECONCILE_CANDIDATE_PREDICATE =
  `deleted_at IS NULL AND (desired_status IS NOT NULL OR status IN (${RECONCILE_STATUSES.map((s) => `'${s}'`).join(',')})` +
  ` OR version IS DISTINCT FROM observed_version OR generation > observed_generation)`;

/**
 * Settled clusters (started or stopped, nothing asked of them): the reconciler observes them through the
 * driver every OBSERVE_EVERY_SECONDS. The predicate of the partial index `clusters_observe_idx` (migration
 * ReconcileLease1764000031100; a pending generation is not settled since ReconcileGenerations1795400150100) on `(observed_at NULLS FIRST, id)`; the observation claim must contain it
 * unchanged for PostgreSQL to use that index.
 */
export const OBSERVE_CANDIDATE_PREDICATE =
  `deleted_at IS NULL AND status IN ('started','stopped') AND desired_status IS NULL AND version IS NOT DISTINCT FROM observed_version` +
  ` AND (observed_generation IS NULL OR observed_generation >= generation)`;

export interface IpWhitelistEntry {
  cidr: string;
  description: string;
}

export interface ClusterAddonSetting {
  enabled: boolean;
  customValues: { [key: string]: string };
}

/** Add-on name (catalog `addons.name`) to its setting on this cluster. */
export interface ClusterAddons {
  [name: string]: ClusterAddonSetting;
}

export interface ClusterAutoscalerSettings {
  'scale-down-utilization-threshold'?: number;
  'scale-down-gpu-utilization-threshold'?: number;
  'scale-down-delay-after-add'?: string;
  'scale-down-unneeded-time'?: string;
  'scale-down-unready-time'?: string;
  'max-node-provision-time'?: string;
  'unremovable-node-recheck-timeout'?: string;
}

/**
 * The desired state of a cluster (what the reconciler drives towards) plus the reconciler's
 * bookkeeping and the actual state last observed by the driver.
 */
export const AUTO_UPGRADE_POLICIES = ['PATCH_AND_MINOR', 'PATCH_ONLY'] as const;
export type AutoUpgradePolicy = (typeof AUTO_UPGRADE_POLICIES)[number];

@Entity('clusters')
export class ClusterEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: number;
  @Column({ type: 'uuid', default: () => 'gen_random_uuid()' }) identity: string;
  @Column({ type: 'bigint' }) organisationId: number;
  @Column({ type: 'bigint' }) environmentId: number;
  @Column({ type: 'bigint' }) cloudAccountId: number;
  @Column({ type: 'bigint', nullable: true }) cloudCredentialsId: number | null;
  /** Unique per environment among non-deleted clusters. */
  @Column({ type: 'text' }) slug: string;
  @Column({ type: 'text' }) name: string;
  @Column({ type: 'text', nullable: true }) description: string | null;
  @Column({ type: 'text' }) region: string;
  /** Cloud provider type (the cloud account's). */
  @Column({ type: 'text' }) cloudProvider: string;
  /** Desired cluster version (cluster_versions.version). The optimistic-lock counter is `rowVersion`. */
  @Column({ type: 'text' }) version: string;
  /** update_channels.name */
  @Column({ type: 'text', nullable: true }) updateChannel: string | null;
  @Column({ type: 'boolean', default: false }) autoUpgrade: boolean;
  /** PATCH_ONLY: the scheduler plans only upgrades within the minor the cluster runs. */
  @Column({ type: 'text', default: 'PATCH_AND_MINOR' }) autoUpgradePolicy: AutoUpgradePolicy;
  @Column({ type: 'boolean', default: false }) highlyAvailable: boolean;
  @Column({ type: 'boolean', default: false }) enableMultiAvailabilityZones: boolean;
  @Column({ type: 'boolean', default: false }) enableNatGateway: boolean;
  @Column({ type: 'boolean', default: false }) enableNetworkEncryption: boolean;
  @Column({ type: 'text', nullable: true }) podSecurityStandardsProfile: PodSecurityStandardsProfile | null;
  @Column({ type: 'boolean', default: false }) deleteProtection: boolean;
  @Column({ type: 'text', default: 'cilium' }) cni: CniType;
  @Column({ type: 'text', nullable: true }) clusterPodSubnet: string | null;
  @Column({ type: 'text', nullable: true }) serviceSubnet: string | null;
  @Column({ type: 'jsonb', default: () => `'[]'` }) ipWhitelist: IpWhitelistEntry[];
  @Column({ type: 'jsonb', default: () => `'{}'` }) addons: ClusterAddons;
  @Column({ type: 'jsonb', default: () => `'{}'` }) clusterAutoscalerSettings: ClusterAutoscalerSettings;
  @Column({ type: 'bigint', nullable: true }) maintenanceScheduleId: number | null;
  /** This cluster's own maintenance exclusions (a freeze of one cluster), on top of its schedule's. */
  @Column({ type: 'jsonb', default: () => `'[]'` }) maintenanceExclusions: MaintenanceExclusion[];
  @Column({ type: 'bigint', nullable: true }) upstreamClusterId: number | null;
  /** Hours the upstream cluster must run a version before this one is upgraded to it (null: the organisation's). */
  @Column({ type: 'integer', nullable: true }) upgradeSoakHours: number | null;
  @Column({ type: 'boolean', default: true }) platformOidc: boolean;
  @Column({ type: 'boolean', default: false }) environmentMetricsRules: boolean;

  @Column({ type: 'text', default: 'new' }) status: ClusterStatus;
  @Column({ type: 'text', nullable: true }) desiredStatus: ClusterDesiredStatus | null;
  @Column({ type: 'text', default: 'ACCEPTED' }) provisionStatus: ProvisionStatus;

  // Reconciler bookkeeping.
  /** The status to resume once a cluster in `unknown` is observed healthy again. */
  @Column({ type: 'text', nullable: true }) statusBeforeFault: ClusterStatus | null;
  @Column({ type: 'timestamptz', nullable: true }) stepStartedAt: Date | null;
  @Column({ type: 'timestamptz', nullable: true }) nextAttemptAt: Date | null;
  @Column({ type: 'integer', default: 0 }) attempts: number;
  @Column({ type: 'text', nullable: true }) lastError: string | null;
  /** A replica works on the cluster until then (claim, driver call, record); another takes over once it passed. */
  @Column({ type: 'timestamptz', nullable: true }) reconcileLeaseUntil: Date | null;
  /** The claim holding the lease: only that claim may record its step. */
  @Column({ type: 'uuid', nullable: true }) reconcileLeaseToken: string | null;

  // Actual state last observed by the driver (`actualState` in responses).
  @Column({ type: 'timestamptz', nullable: true }) observedAt: Date | null;
  @Column({ type: 'text', nullable: true }) observedStatus: ClusterStatus | null;
  /** When observedVersion last changed (kept by a trigger; the scheduler sets it when an upgrade succeeds). */
  @Column({ type: 'timestamptz' }) versionSince: Date;
  @Column({ type: 'text', nullable: true }) observedVersion: string | null;

  // Generations (migration ClusterGenerations1795400150000; bumped by triggers on every desired-state change).
  /** Counts the changes of what the cluster should look like (from 1). */
  @Column({ type: 'bigint', default: 1, transformer: { to: (v: unknown) => v, from: (v: unknown) => (v == null ? v : Number(v)) } })
  generation: number;
  /** The newest generation the driver reported applied; null: none yet. */
  @Column({ type: 'bigint', nullable: true, transformer: { to: (v: unknown) => v, from: (v: unknown) => (v == null ? null : Number(v)) } })
  observedGeneration: number | null;
  /** Ready, Reconciling, Degraded. */
  @Column({ type: 'jsonb', default: () => `'[]'` }) conditions: Condition[];

  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
  @Column({ type: 'timestamptz', nullable: true }) deletedAt: Date | null;
  /** Optimistic-lock counter (column `row_version`; `version` is the cluster version). */
  @VersionColumn() rowVersion: number;
}
