import { workerData } from 'piscina';
import type { FieldErrorDto } from '../common/errors';
import { redactAlertingSecrets, restoreAlertingSecrets } from '../observability/alerting-secrets';
import { AlertingFilesInput, checkAlertingFiles } from '../observability/alerting-validation';
import type { SilenceMatcher } from '../observability/silence-matchers';
import { silenceMatcherProblems, silencedBy } from '../observability/silence-rules';
import { PolicyLanguage, PolicySource } from '../policies/policy-language';
import type { PolicySchemaShare } from '../policies/policy-schema';
import type { PolicyInput } from '../policies/policy-variables';

/**
 * Everything the executor's worker threads may run: expensive work on user input, each a pure function of
 * structured-clonable data (no Nest, no I/O, no database). A new kind of such work is added here and called through
 * `Executor.run`; nothing else in the service parses user YAML, runs user regular expressions or user CEL programs
 * (test/unit/expensive-work-rule.spec.ts holds the rule).
 */

let language: PolicyLanguage | undefined;
/** The policy language of this thread, made on first use from what the service shares with its workers. */
function policies(): PolicyLanguage {
  if (language) return language;
  const shared = (workerData as Record<string, PolicySchemaShare | undefined> | undefined)?.policies;
  if (!shared) throw new Error('the policy variable types were not shared with the executor (PolicyEvaluator)');
  return (language = new PolicyLanguage(shared.schema, { runtimeCostLimit: shared.runtimeCostLimit }));
}

export const EXECUTOR_TASKS = {
  /** Parse and check an alerting configuration's YAML files (bounds, syntax, structure). */
  'alerting.check': (input: AlertingFilesInput) => checkAlertingFiles(input),
  /** The Alertmanager configuration with its secrets replaced by the placeholder, for readers who may not see them. */
  'alerting.redact': (text: string) => redactAlertingSecrets(text),
  /** Stored secrets put back where a write sent the placeholder. */
  'alerting.restore': (input: { text: string; stored: string | null }) => restoreAlertingSecrets(input.text, input.stored),
  /** A silence's matchers: valid RE2, and not matching every alert. */
  'silences.check': (matchers: SilenceMatcher[]) => silenceMatcherProblems(matchers),
  /** Per group (a tenant's alerts and its active silences): for each alert, the silences that mute it. */
  'silences.match': (groups: { silences: { id: string; matchers: SilenceMatcher[] }[]; alerts: Record<string, string>[] }[]) =>
    groups.map((g) => silencedBy(g.silences, g.alerts)),
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

export type ExecutorTasks = typeof EXECUTOR_TASKS;
