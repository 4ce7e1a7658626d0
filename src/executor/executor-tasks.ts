import { redactAlertingSecrets, restoreAlertingSecrets } from '../observability/alerting-secrets';
import { AlertingFilesInput, checkAlertingFiles } from '../observability/alerting-validation';
import { SilenceMatcher, silenceMatcherProblems, silencedBy } from '../observability/silence-rules';

/**
 * Everything the executor's worker threads may run: expensive work on user input, each a pure function of
 * structured-clonable data (no Nest, no I/O, no database). A new kind of such work is added here and called through
 * `Executor.run`; nothing else in the service parses user YAML or runs user regular expressions.
 */
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
};

/** What a task is doing, for the message when it runs out of time. */
export const EXECUTOR_TASK_DESCRIPTIONS: Record<keyof typeof EXECUTOR_TASKS, string> = {
  'alerting.check': 'checking the alerting configuration',
  'alerting.redact': 'hiding the secrets of the alerting configuration',
  'alerting.restore': 'restoring the stored secrets of the alerting configuration',
  'silences.check': 'checking the silence matchers',
  'silences.match': 'matching the alerts against the silences',
};

export type ExecutorTasks = typeof EXECUTOR_TASKS;
