import { Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module';
import { ClusterDriverResolver } from './cluster-driver-resolver';
import { ClusterDriversService } from './cluster-drivers.service';
import { RegisteredDriverResolver } from './registered-driver-resolver';

/**
 * Cluster drivers: the contract between the reconciler and a driver (driver-contract.ts), the HTTP driver for drivers
 * out of process (http-cluster-driver.ts), their registry (ClusterDriversService, for the administrators' API) and the
 * resolution of the driver that serves a cluster (RegisteredDriverResolver behind the ClusterDriverResolver port).
 * Below provisioning in the module layers, so that the registry and the out-of-process driver never import the
 * reconciler.
 */
@Module({
  imports: [CatalogModule],
  providers: [RegisteredDriverResolver, { provide: ClusterDriverResolver, useExisting: RegisteredDriverResolver }, ClusterDriversService],
  exports: [ClusterDriverResolver, ClusterDriversService],
})
export class ClusterDriversModule {}
