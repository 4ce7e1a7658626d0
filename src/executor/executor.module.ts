import { Global, Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { Executor } from './executor';
import { EXECUTOR_TASK_DESCRIPTIONS, ExecutorTasks } from './executor-tasks';

/** The bounded executor for expensive work on user input, one per process (docs/architecture.md). */
@Global()
@Module({
  providers: [
    {
      provide: Executor,
      inject: [AppConfig],
      useFactory: (config: AppConfig) =>
        new Executor({
          threads: config.EXECUTOR_THREADS,
          taskTimeoutMs: config.EXECUTOR_TASK_TIMEOUT_MS,
          maxWaitingPerKey: config.EXECUTOR_QUEUE_PER_ORGANISATION,
          describe: (task) => EXECUTOR_TASK_DESCRIPTIONS[task as keyof ExecutorTasks] ?? task,
        }),
    },
  ],
  exports: [Executor],
})
export class ExecutorModule {}
