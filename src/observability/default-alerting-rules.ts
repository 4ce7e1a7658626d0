import * as fs from 'fs';
import * as path from 'path';
import { describeProblem } from './alerting-limits';
import { checkRuleFile } from './alerting-validation';

/**
 * The shipped default alerting rules (data/default-alerting-rules.yaml), read and checked once at start-up on the
 * main thread: the operator's file, not user input, so it is one of the listed exceptions of the rule that only the
 * executor's worker threads parse YAML (test/unit/expensive-work-rule.spec.ts). A broken file stops start-up.
 */

/** Name under which the shipped default rules are stored in an environment's rule files. */
export const DEFAULT_RULES_FILE_NAME = 'default-rules.yaml';

export function defaultRulesPath(): string {
  const candidates = [
    path.resolve(__dirname, '..', '..', 'data', 'default-alerting-rules.yaml'), // from src/observability
    path.resolve(__dirname, '..', '..', '..', 'data', 'default-alerting-rules.yaml'), // from dist/src/observability
    path.resolve('data', 'default-alerting-rules.yaml'),
  ];
  return candidates.find((p) => fs.existsSync(p)) ?? candidates[0];
}

/** Reads and checks the shipped default rule file; a broken file stops start-up. */
export function loadDefaultRules(): string {
  const file = defaultRulesPath();
  const text = fs.readFileSync(file, 'utf8');
  const problems = checkRuleFile(text, DEFAULT_RULES_FILE_NAME);
  if (problems.length) throw new Error(`${file} is not a valid rule file: ${problems.map(describeProblem).join('; ')}`);
  return text;
}
