import * as semver from 'semver';
import { ValidationFailedException } from '../common/errors';
import { MaintenanceWindow, nextWindowStart, plannableWindow } from './maintenance-window';

/**
 * Maintenance exclusions: periods in which the upgrade scheduler neither plans nor starts upgrades of a scope
 * (docs/adr/0043-maintenance-exclusions.md). A schedule holds some for every cluster using it, a cluster
 * some for itself; both apply. Upgrades an administrator creates are not affected. Plain types and functions over
 * them (the entities store exclusions, this file does not know the entities).
 */

export const EXCLUSION_SCOPES = ['NO_UPGRADES', 'NO_MINOR_UPGRADES'] as const;
export type ExclusionScope = (typeof EXCLUSION_SCOPES)[number];

export const MAX_EXCLUSIONS = 5;
export const MAX_EXCLUSION_NAME_LENGTH = 100;
export const MAX_EXCLUSION_DAYS = 90;
/** An exclusion must end within this many days of now. */
export const EXCLUSION_HORIZON_DAYS = 365;

const DAY_MS = 24 * 60 * 60 * 1000;

/** Stored (jsonb) and answered: instants as ISO 8601 UTC strings. */
export interface MaintenanceExclusion {
  name: string;
  startsAt: string;
  endsAt: string;
  scope: ExclusionScope;
}

/** The canonical form: trimmed name, instants normalised to UTC, a fixed key order (audit diffs compare JSON). */
export interface ExclusionInput {
  name: string;
  startsAt: string;
  endsAt: string;
  scope: string;
}

export function normaliseExclusion(e: ExclusionInput): MaintenanceExclusion {
  return {
    name: e.name.trim(),
    startsAt: new Date(e.startsAt).toISOString(),
    endsAt: new Date(e.endsAt).toISOString(),
    scope: e.scope as ExclusionScope,
  };
}

export function normaliseExclusions(list: ExclusionInput[] | null | undefined): MaintenanceExclusion[] {
  return (list ?? []).map(normaliseExclusion);
}

/**
 * The rule that depends on the clock (the request DTOs check the rest): every exclusion ends within
 * EXCLUSION_HORIZON_DAYS of now, and not in the past. One 400 entry per offending item, `field` the dotted path.
 */
export function checkExclusionHorizon(list: MaintenanceExclusion[], now: Date, field: string): void {
  const latest = now.getTime() + EXCLUSION_HORIZON_DAYS * DAY_MS;
  const errors = [];
  for (const [i, e] of list.entries()) {
    const end = new Date(e.endsAt).getTime();
    if (end <= now.getTime()) {
      errors.push({ field: `${field}.${i}.endsAt`, message: `${field}.${i}.endsAt must be in the future (now is ${now.toISOString()})` });
    } else if (end > latest) {
      errors.push({
        field: `${field}.${i}.endsAt`,
        message: `${field}.${i}.endsAt must be at most ${EXCLUSION_HORIZON_DAYS} days from now (no later than ${new Date(latest).toISOString()})`,
      });
    }
  }
  if (errors.length) throw new ValidationFailedException(errors);
}

/** A minor (or major) upgrade: major.minor of the target differs from the version the cluster runs. */
export function isMinorUpgrade(from: string, to: string): boolean {
  const a = semver.coerce(from);
  const b = semver.coerce(to);
  if (!a || !b) return true; // unknown shape: treat as the wider kind
  return a.major !== b.major || a.minor !== b.minor;
}

/** The exclusions that cover an upgrade from `from` to `to`: NO_UPGRADES always, NO_MINOR_UPGRADES for minor ones. */
export function applicableExclusions(exclusions: MaintenanceExclusion[], from: string, to: string): MaintenanceExclusion[] {
  const minor = isMinorUpgrade(from, to);
  return exclusions.filter((e) => e.scope === 'NO_UPGRADES' || (e.scope === 'NO_MINOR_UPGRADES' && minor));
}

/** Of the exclusions overlapping [start, end) (half-open, as the exclusions are), the one ending last; null if none. */
export function overlappingExclusion(exclusions: MaintenanceExclusion[], start: Date, end: Date): MaintenanceExclusion | null {
  let found: MaintenanceExclusion | null = null;
  for (const e of exclusions) {
    const s = new Date(e.startsAt).getTime();
    const x = new Date(e.endsAt).getTime();
    if (s < end.getTime() && start.getTime() < x && (!found || x > new Date(found.endsAt).getTime())) found = e;
  }
  return found;
}

/** Iterations before giving up: exclusions end within a year, and a schedule has at least one weekly window. */
const MAX_STEPS = 2000;

/**
 * The window an upgrade goes into, skipping every window that overlaps one of `exclusions` (already filtered to
 * those covering the upgrade): with schedule windows, the first occurrence from `now` (the open one when `openOk`
 * and enough of it remains, see plannableWindow) that overlaps none; without windows, the default window
 * (opening `defaultDelayMs` after now, lasting `defaultLengthMs`), pushed to the end of any exclusion it overlaps.
 * Null when no such window is found.
 */
export function allowedWindow(
  windows: MaintenanceWindow[] | null | undefined,
  zone: string,
  now: Date,
  exclusions: MaintenanceExclusion[],
  opts: { openOk: boolean; defaultDelayMs: number; defaultLengthMs: number },
): { start: Date; end: Date } | null {
  if (!windows?.length) {
    let start = new Date(now.getTime() + opts.defaultDelayMs);
    for (let i = 0; i < MAX_STEPS; i++) {
      const end = new Date(start.getTime() + opts.defaultLengthMs);
      const blocking = overlappingExclusion(exclusions, start, end);
      if (!blocking) return { start, end };
      start = new Date(blocking.endsAt);
    }
    return null;
  }
  let candidate = opts.openOk ? plannableWindow(windows, now, zone) : nextWindowStart(windows, now, zone);
  for (let i = 0; candidate && i < MAX_STEPS; i++) {
    const blocking = overlappingExclusion(exclusions, candidate.start, candidate.end);
    if (!blocking) return candidate;
    // Windows do not overlap one another, so every window starting before the exclusion ends overlaps it too.
    const after = Math.max(candidate.start.getTime(), new Date(blocking.endsAt).getTime() - 1);
    candidate = nextWindowStart(windows, new Date(after), zone);
  }
  return null;
}
