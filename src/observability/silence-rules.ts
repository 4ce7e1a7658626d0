import { RE2JS } from 're2js';
import { literalMatches, MAX_MATCHER_VALUE_LENGTH, SilenceMatcher } from './silence-matchers';

/**
 * Alertmanager v2 silence semantics, as pure functions: a matcher compares one label (`isEqual` false negates;
 * `isRegex` matches the whole value, anchored as Alertmanager anchors it, `^(?:value)$`); a silence mutes an alert
 * when every matcher holds; its state is pending before `startsAt`, active until `endsAt`, expired after.
 *
 * Regular expressions come from users, so they run on RE2 (`re2js`): linear time in the label's length whatever
 * the pattern, and the syntax Alertmanager itself accepts (Go's regexp, also RE2). No Nest, no I/O: only the
 * executor's worker threads import this file (src/executor), and only they match patterns; what the main thread
 * needs of silences (types, states, literal matching) is in silence-matchers.ts.
 */

/** Compiled anchored patterns, kept per worker (silences are matched again on every alert list). */
const compiled = new Map<string, RE2JS>();
const MAX_COMPILED = 2000;

/** The anchored RE2 expression of a regex matcher; throws (with RE2's message) when the value is not valid RE2. */
export function matcherRegex(value: string): RE2JS {
  const known = compiled.get(value);
  if (known) return known;
  if (value.length > MAX_MATCHER_VALUE_LENGTH) throw new Error(`is longer than ${MAX_MATCHER_VALUE_LENGTH} characters`);
  // The value must be a whole expression on its own: `a)|(b` would otherwise escape the anchors.
  RE2JS.compile(value);
  const re = RE2JS.compile(`^(?:${value})$`);
  if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
  compiled.set(value, re);
  return re;
}

/** Whether the matcher holds for one label value (an absent label is the empty string, as in Alertmanager). */
export function matcherMatches(m: SilenceMatcher, value: string): boolean {
  if (!m.isRegex) return literalMatches(m, value);
  const equal = matcherRegex(m.value).matches(value);
  return m.isEqual ? equal : !equal;
}

export function matcherHolds(m: SilenceMatcher, labels: Record<string, string>): boolean {
  return matcherMatches(m, labels[m.name] ?? '');
}

export function silenceMutes(matchers: SilenceMatcher[], labels: Record<string, string>): boolean {
  return matchers.length > 0 && matchers.every((m) => matcherHolds(m, labels));
}

export interface MatcherProblem {
  field: string;
  message: string;
}

/**
 * What is wrong with a silence's matchers: values that are not valid RE2 (or too long), and Alertmanager's rule
 * against silencing everything: at least one matcher must not match the empty string (so `{name: "x", value: "y",
 * isEqual: false}` alone is refused, as is `.*`, `a|` and every other spelling of "anything").
 */
export function silenceMatcherProblems(matchers: SilenceMatcher[]): MatcherProblem[] {
  const problems: MatcherProblem[] = [];
  matchers.forEach((m, i) => {
    if (m.value.length > MAX_MATCHER_VALUE_LENGTH)
      problems.push({ field: `matchers.${i}.value`, message: `matchers.${i}.value must be at most ${MAX_MATCHER_VALUE_LENGTH} characters` });
    else if (m.isRegex) {
      try {
        matcherRegex(m.value);
      } catch (e) {
        const reason = (e as Error).message.replace(/^error parsing regexp: /, '');
        problems.push({ field: `matchers.${i}.value`, message: `matchers.${i}.value is not a valid RE2 regular expression: ${reason}` });
      }
    }
  });
  if (problems.length) return problems;
  if (matchers.every((m) => matcherMatches(m, ''))) {
    problems.push({ field: 'matchers', message: 'matchers must not match every alert: at least one matcher must not match the empty string' });
  }
  return problems;
}

/** For each alert (its labels), the ids of the silences that mute it. */
export function silencedBy(silences: { id: string; matchers: SilenceMatcher[] }[], alerts: Record<string, string>[]): string[][] {
  // A silence stored before patterns were RE2 may hold one RE2 refuses (a lookahead): it mutes nothing.
  const valid = silences.filter((s) => s.matchers.every((m) => !m.isRegex || compiles(m.value)));
  return alerts.map((labels) => valid.filter((s) => silenceMutes(s.matchers, labels)).map((s) => s.id));
}

function compiles(value: string): boolean {
  try {
    matcherRegex(value);
    return true;
  } catch {
    return false;
  }
}
