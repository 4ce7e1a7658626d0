import { Module } from '@nestjs/common';
import { ClusterDriverResolver, DriverTarget } from './cluster-driver-resolver';
import type { ClusterDriver } from './driver-contract';

/** Until drivers can be registered, every cluster is served by the configured default driver. */
class DefaultDriverOnly extends ClusterDriverResolver {
  resolve(_target: DriverTarget): Promise<ClusterDriver | null> {
    return Promise.resolve(null);
  }
}

/**
 * Cluster drivers: the contract between the reconciler and a driver (driver-contract.ts) and the resolution of the
 * driver that serves a cluster. Below provisioning in the module layers, so that the registry and the out-of-process
 * driver never import the reconciler.
 */
@Module({
  providers: [{ provide: ClusterDriverResolver, useClass: DefaultDriverOnly }],
  exports: [ClusterDriverResolver],
})
export class ClusterDriversModule {}
