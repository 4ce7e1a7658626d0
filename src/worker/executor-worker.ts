import * as path from 'path';
import type { ExecutorWorker } from '../executor/executor.module';
import type { ExecutorTasks } from './executor-tasks';

/**
 * What each executor task is doing, for the message when it runs out of time. Apart from the task catalogue
 * (executor-tasks.ts), which only the worker threads load: the main thread never loads the YAML, regex or CEL
 * engines the tasks use.
 */
export const EXECUTOR_TASK_DESCRIPTIONS: Record<keyof ExecutorTasks, string> = {
  'alerting.check': 'checking the alerting configuration',
  'alerting.redact': 'hiding the secrets of the alerting configuration',
  'alerting.restore': 'restoring the stored secrets of the alerting configuration',
  'silences.check': 'checking the silence matchers',
  'silences.match': 'matching the alerts against the silences',
  'policies.check': 'checking the policy expression',
  'policies.evaluate': 'evaluating the cluster policies',
  'policies.objectFields': 'reading the fields the policy expressions use',
};

/**
 * The service's worker, for ExecutorModule.forRoot (src/app.module.ts): compiled JavaScript under dist/, TypeScript
 * (through swc) in tests and start:dev.
 */
export const EXECUTOR_WORKER: ExecutorWorker = {
  file: path.join(__dirname, `executor.worker.${__filename.endsWith('.js') ? 'js' : 'ts'}`),
  describe: (task) => EXECUTOR_TASK_DESCRIPTIONS[task as keyof ExecutorTasks] ?? task,
};
