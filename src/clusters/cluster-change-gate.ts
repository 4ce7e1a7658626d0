import type { ClusterRow } from './cluster-read';

/** What a change does to a cluster, as the gate sees it. */
export type ClusterChangeOperation = 'CREATE' | 'UPDATE' | 'DELETE';

/**
 * A port of the clusters module: the gate every change of a cluster or its node pools passes on the request path
 * (the cluster policies implement it: src/policies/cluster-policy-enforcer.ts, bound in src/app.module.ts), so that
 * clusters does not know policies. `Rules` and `Before` are the gate's own: clusters only hands them back.
 */
export abstract class ClusterChangeGate<Rules = unknown, Before = unknown> {
  /** The rules that apply to the organisation's clusters, read once early in a change's transaction. */
  abstract enabledPolicies(organisationId: number): Promise<Rules>;

  /** The cluster as it is, before a change is written (given `rules`, they are not read again). */
  abstract before(cluster: number | ClusterRow, rules?: Rules): Promise<Before>;

  /** Judges a written change (`before`: null for CREATE); throws to refuse it, so its transaction rolls back. */
  abstract enforce(change: { clusterId: number; operation: ClusterChangeOperation; resource: 'clusters' | 'nodePools'; before: Before | null }): Promise<unknown>;
}
