import { allowedWindow, applicableExclusions, MaintenanceExclusion } from '../../maintenance/maintenance-exclusion';
import type { MaintenanceWindow } from '../../maintenance/maintenance-window';

const HOUR_MS = 60 * 60 * 1000;
/** Without a maintenance schedule the window opens 24 h after scheduling and lasts 24 h. */
export const DEFAULT_WINDOW_DELAY_MS = 24 * HOUR_MS;
export const DEFAULT_WINDOW_LENGTH_MS = 24 * HOUR_MS;

/** Where an exclusion comes from, for messages. */
export interface SourcedExclusion {
  exclusion: MaintenanceExclusion;
  source: string;
}

/** The exclusions stored on a cluster row and on its maintenance schedule (as the scheduler's queries select them). */
export interface ExclusionColumns {
  cluster_exclusions: MaintenanceExclusion[] | null;
  schedule_exclusions: MaintenanceExclusion[] | null;
}

/** The cluster's own exclusions, then its schedule's. */
export function exclusionsOf(row: ExclusionColumns, scheduleName: string | null): SourcedExclusion[] {
  return [
    ...(row.cluster_exclusions ?? []).map((exclusion) => ({ exclusion, source: 'the cluster' })),
    ...(row.schedule_exclusions ?? []).map((exclusion) => ({
      exclusion,
      source: scheduleName ? `maintenance schedule ${scheduleName}` : 'its maintenance schedule',
    })),
  ];
}

/** Those covering an upgrade from `from` to `to` (NO_MINOR_UPGRADES only when major.minor changes). */
export function covering(list: SourcedExclusion[], from: string, to: string): SourcedExclusion[] {
  const applicable = new Set(applicableExclusions(list.map((x) => x.exclusion), from, to));
  return list.filter((x) => applicable.has(x.exclusion));
}

/**
 * The window to plan into: the schedule's (or the default one), skipping those the exclusions overlap; with
 * `openOk` the window open now counts when enough of it remains.
 */
export function planWindow(
  windows: MaintenanceWindow[] | null,
  zone: string | null,
  now: Date,
  covering: SourcedExclusion[],
  openOk: boolean,
): { start: Date; end: Date } | null {
  return allowedWindow(windows, zone ?? 'UTC', now, covering.map((x) => x.exclusion), {
    openOk,
    defaultDelayMs: DEFAULT_WINDOW_DELAY_MS,
    defaultLengthMs: DEFAULT_WINDOW_LENGTH_MS,
  });
}

/** The window to plan into, and behind an upstream cluster the first one starting at or after its soak ended. */
export function sequencedWindow(
  windows: MaintenanceWindow[] | null,
  zone: string | null,
  now: Date,
  covering: SourcedExclusion[],
  soakEnd: Date | null,
): { start: Date; end: Date } | null {
  const open = planWindow(windows, zone, now, covering, true);
  if (!open || !soakEnd || open.start.getTime() >= soakEnd.getTime()) return open;
  // The window open now started before the soak ended: the next one.
  return planWindow(windows, zone, now, covering, false);
}
