/**
 * Alertmanager v2 silence semantics, as pure functions: a matcher compares one label (`isEqual` false negates;
 * `isRegex` matches the whole value, anchored); a silence mutes an alert when every matcher holds; its state is
 * pending before `startsAt`, active until `endsAt`, expired after.
 */
export interface SilenceMatcher {
  name: string;
  value: string;
  isRegex: boolean;
  isEqual: boolean;
}

export type SilenceState = 'pending' | 'active' | 'expired';

export function silenceState(startsAt: Date, endsAt: Date, now: Date): SilenceState {
  if (now.getTime() < startsAt.getTime()) return 'pending';
  return now.getTime() < endsAt.getTime() ? 'active' : 'expired';
}

/** The anchored expression of a regex matcher; throws SyntaxError when it does not compile. */
export function matcherRegex(value: string): RegExp {
  return new RegExp(`^(?:${value})$`, 'u');
}

export function matcherHolds(m: SilenceMatcher, labels: Record<string, string>): boolean {
  const actual = labels[m.name] ?? '';
  const equal = m.isRegex ? matcherRegex(m.value).test(actual) : actual === m.value;
  return m.isEqual ? equal : !equal;
}

export function silenceMutes(matchers: SilenceMatcher[], labels: Record<string, string>): boolean {
  return matchers.length > 0 && matchers.every((m) => matcherHolds(m, labels));
}

export const SILENCE_STATES: SilenceState[] = ['pending', 'active', 'expired'];
