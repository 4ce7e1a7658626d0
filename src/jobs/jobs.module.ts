import { Global, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { BackgroundJobs } from './background-jobs.service';

/**
 * The lifecycle of every background loop (docs/architecture.md, "Background work"). Each loop's timers are
 * registered in @nestjs/schedule's SchedulerRegistry under `job:<name>`.
 */
@Global()
@Module({ imports: [ScheduleModule.forRoot()], providers: [BackgroundJobs], exports: [BackgroundJobs] })
export class JobsModule {}
