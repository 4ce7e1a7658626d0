/**
 * How the executor's worker threads yield the CPU to the event loop (EXECUTOR_THREAD_PRIORITY; what each means is
 * in src/executor/worker-handler.ts). Kept here, apart from the settings class, so the worker threads read it
 * without loading the configuration's validators.
 */
export const EXECUTOR_THREAD_PRIORITIES = ['idle', 'low', 'normal'] as const;
export type ExecutorThreadPriority = (typeof EXECUTOR_THREAD_PRIORITIES)[number];
