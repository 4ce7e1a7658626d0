import { Module } from '@nestjs/common';
import { ClusterDriversModule } from '../cluster-drivers/cluster-drivers.module';
import { AppConfig } from '../config/app-config';
import { CLUSTER_DRIVER, ClusterDriver } from './cluster-driver';
import { ClusterLeases } from './cluster-leases';
import { ClusterObserver } from './cluster-observer';
import { ClusterStepEffects } from './cluster-step-effects';
import { ClusterStepRecorder } from './cluster-step-recorder';
import { DesiredSpecs } from './desired-specs';
import { DriverCalls } from './driver-calls';
import { ReconcilerMetrics } from './reconciler-metrics';
import { ReconcilerService } from './reconciler.service';
import { SimulatedClusterDriver } from './simulated-cluster-driver';

/** Drivers known by name; AppConfig.CLUSTER_DRIVER (validated at start-up) selects one. */
export function selectDriver(name: string, drivers: { simulated: ClusterDriver }): ClusterDriver {
  if (name === 'simulated') return drivers.simulated;
  throw new Error(`Invalid configuration:\n  CLUSTER_DRIVER=${JSON.stringify(name)}: unknown cluster driver; known: simulated`);
}

@Module({
  imports: [ClusterDriversModule],
  providers: [
    DesiredSpecs,
    SimulatedClusterDriver,
    {
      provide: CLUSTER_DRIVER,
      inject: [SimulatedClusterDriver, AppConfig],
      useFactory: (simulated: SimulatedClusterDriver, config: AppConfig) => selectDriver(config.CLUSTER_DRIVER, { simulated }),
    },
    ClusterLeases,
    DriverCalls,
    ClusterStepEffects,
    ClusterStepRecorder,
    ClusterObserver,
    ReconcilerService,
    ReconcilerMetrics,
  ],
  exports: [ReconcilerService, CLUSTER_DRIVER],
})
export class ProvisioningModule {}
