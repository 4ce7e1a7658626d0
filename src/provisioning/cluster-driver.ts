import type { ClusterEntity, ClusterStatus } from '../clusters/cluster.entity';

/** What a driver answers for one step. */
export type DriverOutcome =
  | { outcome: 'done' }
  /** Still in progress; ask again at `retryAt`. */
  | { outcome: 'pending'; retryAt: Date }
  | { outcome: 'failed'; error: string };

export interface DriverObservation {
  ok: boolean;
  /** What the infrastructure reports, when reachable. */
  status?: ClusterStatus;
  version?: string | null;
  error?: string;
}

/**
 * The port between the reconciler and the infrastructure. A driver acts on one step of one cluster
 * (named as in the state machine: a provisionStatus such as `CLUSTER_PROVISIONED`, a status such as
 * `starting`, or `upgrade`) and observes a cluster's actual state. Calls are made outside any database
 * transaction while the reconciler holds a lease on the cluster (RECONCILE_LEASE_SECONDS); one is given up
 * after half the lease. Steps must be idempotent: a step whose result could not be recorded (the lease
 * was lost, or the cluster changed meanwhile) is asked for again.
 */
export interface ClusterDriver {
  readonly name: string;
  advance(cluster: ClusterEntity, step: string, now: Date): Promise<DriverOutcome>;
  observe(cluster: ClusterEntity, now: Date): Promise<DriverObservation>;
  /**
   * Observes many clusters in one call (a provider lists its clusters in one API request). Answers one
   * observation per cluster id; a cluster missing from the answer counts as not reachable.
   */
  observeMany(clusters: ClusterEntity[], now: Date): Promise<Map<number, DriverObservation>>;
}

export const CLUSTER_DRIVER = Symbol('CLUSTER_DRIVER');
