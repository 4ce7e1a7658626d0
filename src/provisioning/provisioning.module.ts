import { Module } from '@nestjs/common';
import { CLUSTER_DRIVER, ClusterDriver } from './cluster-driver';
import { ReconcilerService } from './reconciler.service';
import { SimulatedClusterDriver } from './simulated-cluster-driver';

/** Drivers known by name; `CLUSTER_DRIVER` (environment variable, default `simulated`) selects one. */
export function selectDriver(name: string | undefined, drivers: { simulated: ClusterDriver }): ClusterDriver {
  const wanted = (name ?? '').trim() || 'simulated';
  if (wanted === 'simulated') return drivers.simulated;
  throw new Error(`Invalid configuration:\n  CLUSTER_DRIVER=${JSON.stringify(name)}: unknown cluster driver; known: simulated`);
}

@Module({
  providers: [
    SimulatedClusterDriver,
    {
      provide: CLUSTER_DRIVER,
      inject: [SimulatedClusterDriver],
      // Read from the environment directly: AppConfig (shared) has no CLUSTER_DRIVER field yet.
      useFactory: (simulated: SimulatedClusterDriver) => selectDriver(process.env.CLUSTER_DRIVER, { simulated }),
    },
    ReconcilerService,
  ],
  exports: [ReconcilerService, CLUSTER_DRIVER],
})
export class ProvisioningModule {}
