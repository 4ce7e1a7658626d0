import { Module } from '@nestjs/common';
import { ScheduledUpgradesAdminController } from '../admin/scheduled-upgrades-admin.controller';
import { ScheduledClusterUpgradesController } from './scheduled-cluster-upgrades.controller';
import { UpgradesService } from './upgrades.service';
import { PoliciesModule } from '../policies/policies.module';

@Module({
  imports: [PoliciesModule],
  controllers: [ScheduledClusterUpgradesController, ScheduledUpgradesAdminController],
  providers: [UpgradesService],
  exports: [UpgradesService],
})
export class UpgradesModule {}
