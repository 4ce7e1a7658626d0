import { TransactionHost } from '@nestjs-cls/transactional';
import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { Executor } from './executor';

/** The worker the executor runs its tasks on, handed in by the app (src/worker: the catalogue of every module's tasks). */
export interface ExecutorWorker {
  /** The worker file (piscina's `filename`). */
  file: string;
  /** What a task is doing, for the message when it runs out of time. */
  describe(task: string): string;
}

/** The bounded executor for expensive work on user input, one per process (docs/architecture.md). */
@Global()
@Module({})
export class ExecutorModule {
  static forRoot(worker: ExecutorWorker): DynamicModule {
    return {
      module: ExecutorModule,
      providers: [
        {
          provide: Executor,
          inject: [AppConfig, TransactionHost],
          useFactory: (config: AppConfig, txHost: TransactionHost) =>
            new Executor({
              threads: config.EXECUTOR_THREADS,
              taskTimeoutMs: config.EXECUTOR_TASK_TIMEOUT_MS,
              workerHeapMb: config.EXECUTOR_WORKER_HEAP_MB,
              threadPriority: config.EXECUTOR_THREAD_PRIORITY,
              maxWaitingPerKey: config.EXECUTOR_QUEUE_PER_ORGANISATION,
              workerFile: worker.file,
              describe: (task) => worker.describe(task),
              // A mutating request waits for its task inside its transaction (the audit interceptor opens it first), so
              // it holds one of the request pool's connections (its transaction identifies it): at most a quarter of them per organisation.
              holdsConnection: () => (txHost.isTransactionActive() ? txHost.tx : null),
              maxHoldingPerKey: Math.max(1, Math.floor(config.DATABASE_POOL_SIZE / 4)),
            }),
        },
      ],
      exports: [Executor],
    };
  }
}
