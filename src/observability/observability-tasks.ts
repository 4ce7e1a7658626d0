import { redactAlertingSecrets, restoreAlertingSecrets } from './alerting-secrets';
import { AlertingFilesInput, checkAlertingFiles } from './alerting-validation';
import type { SilenceMatcher } from './silence-matchers';
import { silenceMatcherProblems, silencedBy } from './silence-rules';

/**
 * The alerting and silence work of the executor's worker threads (src/worker/executor-tasks.ts gathers every
 * module's tasks): pure functions of structured-clonable data. Only the worker threads load this file: it loads the
 * YAML parser and the regular expression engine (test/unit/expensive-work-rule.spec.ts).
 */
export const OBSERVABILITY_TASKS = {
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

export type ObservabilityTasks = typeof OBSERVABILITY_TASKS;
