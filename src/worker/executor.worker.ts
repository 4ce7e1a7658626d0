import { EXECUTOR_TASKS } from './executor-tasks';
import { workerHandler } from '../executor/worker-handler';

/** The executor's worker thread (loaded by piscina: compiled .js under dist/, TypeScript through swc in tests). */
export default workerHandler(EXECUTOR_TASKS);
