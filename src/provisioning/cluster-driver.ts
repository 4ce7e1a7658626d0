/**
 * The default cluster driver: the one that serves a cluster for which no driver is registered
 * (ClusterDriverResolver answers null), selected by CLUSTER_DRIVER (`simulated`: the in-process simulated driver).
 * Every driver implements the contract of src/cluster-drivers/driver-contract.ts.
 */
export type { ClusterDriver } from '../cluster-drivers/driver-contract';

export const CLUSTER_DRIVER = Symbol('CLUSTER_DRIVER');
