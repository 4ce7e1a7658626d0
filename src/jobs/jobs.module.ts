import { Global, Module } from '@nestjs/common';
import { BackgroundJobs } from './background-jobs.service';

/** The lifecycle of every background loop (docs/architecture.md, "Background work"). */
@Global()
@Module({ providers: [BackgroundJobs], exports: [BackgroundJobs] })
export class JobsModule {}
