import type { ClusterDriver } from './driver-contract';

/** What decides which driver serves a cluster: its cloud account's provider and cloud profile. */
export interface DriverTarget {
  cloudProvider: string;
  cloudProfile: string | null;
}

/**
 * The port through which provisioning finds the driver registered for a cluster (docs/drivers.md). `null`: no driver is
 * registered for the target, and the configured default (CLUSTER_DRIVER, the in-process simulated driver) serves it.
 */
export abstract class ClusterDriverResolver {
  abstract resolve(target: DriverTarget): Promise<ClusterDriver | null>;
}
