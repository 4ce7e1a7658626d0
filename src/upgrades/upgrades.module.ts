import { Module } from '@nestjs/common';
import { ScheduledClusterUpgradesController } from './scheduled-cluster-upgrades.controller';
import { UpgradeMetrics } from './upgrade-metrics';
import { UpgradesService } from './upgrades.service';
import { PoliciesModule } from '../policies/policies.module';

@Module({
  imports: [PoliciesModule],
  controllers: [ScheduledClusterUpgradesController],
  providers: [UpgradesService, UpgradeMetrics],
  exports: [UpgradesService],
})
export class UpgradesModule {}
