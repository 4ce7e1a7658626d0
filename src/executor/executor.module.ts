import { TransactionHost } from '@nestjs-cls/transactional';
import { Global, Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { Executor } from './executor';
import { EXECUTOR_TASK_DESCRIPTIONS } from './executor-task-descriptions';
import type { ExecutorTasks } from './executor-tasks';

/** The bounded executor for expensive work on user input, one per process (docs/architecture.md). */
@Global()
@Module({
  providers: [
    {
      provide: Executor,
      inject: [AppConfig, TransactionHost],
      useFactory: (config: AppConfig, txHost: TransactionHost) =>
        new Executor({
          threads: config.EXECUTOR_THREADS,
          taskTimeoutMs: config.EXECUTOR_TASK_TIMEOUT_MS,
          workerHeapMb: config.EXECUTOR_WORKER_HEAP_MB,
          maxWaitingPerKey: config.EXECUTOR_QUEUE_PER_ORGANISATION,
          describe: (task) => EXECUTOR_TASK_DESCRIPTIONS[task as keyof ExecutorTasks] ?? task,
          // A mutating request waits for its task inside its transaction (the audit interceptor opens it first), so
          // it holds one of the request pool's connections (its transaction identifies it): at most a quarter of them per organisation.
          holdsConnection: () => (txHost.isTransactionActive() ? txHost.tx : null),
          maxHoldingPerKey: Math.max(1, Math.floor(config.DATABASE_POOL_SIZE / 4)),
        }),
    },
  ],
  exports: [Executor],
})
export class ExecutorModule {}
