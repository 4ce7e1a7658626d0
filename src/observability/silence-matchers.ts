/**
 * Silences as the main thread knows them: matcher types, states, and literal matching (a string comparison, cheap
 * enough to run inline). Matching regular expressions is the executor's work (silence-rules.ts, RE2).
 */

export interface SilenceMatcher {
  name: string;
  value: string;
  isRegex: boolean;
  isEqual: boolean;
}

export type SilenceState = 'pending' | 'active' | 'expired';

/** Longest matcher value (literal or pattern); the request DTO declares the same bound. */
export const MAX_MATCHER_VALUE_LENGTH = 1024;

export function silenceState(startsAt: Date, endsAt: Date, now: Date): SilenceState {
  if (now.getTime() < startsAt.getTime()) return 'pending';
  return now.getTime() < endsAt.getTime() ? 'active' : 'expired';
}

/** Whether matching needs a regular expression (then it runs on the executor; literal comparisons are cheap). */
export const usesRegex = (silences: { matchers: SilenceMatcher[] }[]): boolean => silences.some((s) => s.matchers.some((m) => m.isRegex));

export const SILENCE_STATES: SilenceState[] = ['pending', 'active', 'expired'];

/** A literal matcher on one label value (`isEqual` false negates; an absent label is the empty string). */
export function literalMatches(m: SilenceMatcher, value: string): boolean {
  if (m.isRegex) throw new Error(`matcher '${m.name}' is a regular expression: it is matched on the executor`);
  return m.isEqual ? value === m.value : value !== m.value;
}

/** For each alert (its labels), the ids of the silences that mute it, for silences without regular expressions. */
export function silencedByLiterals(silences: { id: string; matchers: SilenceMatcher[] }[], alerts: Record<string, string>[]): string[][] {
  return alerts.map((labels) =>
    silences.filter((s) => s.matchers.length > 0 && s.matchers.every((m) => literalMatches(m, labels[m.name] ?? ''))).map((s) => s.id),
  );
}
