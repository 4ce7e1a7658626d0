import { workerData } from 'piscina';
import type { FieldErrorDto } from '../common/errors';
import { PolicyLanguage, PolicySource } from './policy-language';
import type { PolicySchemaShare } from './policy-schema';
import type { PolicyInput } from './policy-variables';

/**
 * The cluster-policy work of the executor's worker threads (src/worker/executor-tasks.ts gathers every module's
 * tasks): pure functions of structured-clonable data. Only the worker threads load this file: it loads the CEL
 * engine (test/unit/expensive-work-rule.spec.ts).
 */

let language: PolicyLanguage | undefined;
/** The policy language of this thread, made on first use from what the service shares with its workers. */
function policies(): PolicyLanguage {
  if (language) return language;
  const shared = (workerData as Record<string, PolicySchemaShare | undefined> | undefined)?.policies;
  if (!shared) throw new Error('the policy variable types were not shared with the executor (PolicyEvaluator)');
  return (language = new PolicyLanguage(shared.schema, { runtimeCostLimit: shared.runtimeCostLimit }));
}

export const POLICY_TASKS = {
  /**
   * The write-time check of a policy's expressions (syntax, types, sizes and cost, patterns), and when they are
   * valid the cluster fields they read.
   */
  'policies.check': (body: { expression: string; messageExpression: string | null }): { errors: FieldErrorDto[]; fields: string[] | null } => {
    const lang = policies();
    const errors = [...lang.check('expression', body.expression, ['bool', 'dyn'])];
    if (body.messageExpression) errors.push(...lang.check('messageExpression', body.messageExpression, ['string', 'dyn']));
    const sources = body.messageExpression ? [body.expression, body.messageExpression] : [body.expression];
    return { errors, fields: errors.length ? null : lang.objectFields(sources) };
  },
  /** Policies on inputs, each evaluation metered: `results[i][j]` is policy j on input i. */
  'policies.evaluate': (input: { policies: PolicySource[]; inputs: PolicyInput[] }) => policies().evaluate(input.policies, input.inputs),
  /** The cluster fields these expressions read (null: all of them). */
  'policies.objectFields': (sources: string[]) => policies().objectFields(sources),
};

export type PolicyTasks = typeof POLICY_TASKS;
