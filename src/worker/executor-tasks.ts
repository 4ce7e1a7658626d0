import { OBSERVABILITY_TASKS } from '../observability/observability-tasks';
import { POLICY_TASKS } from '../policies/policy-tasks';

/**
 * Everything the executor's worker threads may run: expensive work on user input, each a pure function of
 * structured-clonable data (no Nest, no I/O, no database). A new kind of such work is added to its module's tasks
 * (src/policies/policy-tasks.ts, src/observability/observability-tasks.ts), gathered here, and called through
 * `Executor.run`; nothing else in the service parses user YAML, runs user regular expressions or user CEL programs
 * (test/unit/expensive-work-rule.spec.ts holds the rule). The catalogue sits at the edge of the module layers, like
 * the app: the executor (src/executor) runs tasks without knowing them.
 */
export const EXECUTOR_TASKS = { ...OBSERVABILITY_TASKS, ...POLICY_TASKS };

export type ExecutorTasks = typeof EXECUTOR_TASKS;
