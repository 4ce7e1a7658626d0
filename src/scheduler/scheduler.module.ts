import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { UpgradeSchedulerService } from './upgrade-scheduler.service';

/** Background transitions of scheduled cluster upgrades (every SCHEDULER_INTERVAL_SECONDS). */
@Module({
  imports: [ScheduleModule.forRoot()],
  providers: [UpgradeSchedulerService],
  exports: [UpgradeSchedulerService],
})
export class SchedulerModule {}
