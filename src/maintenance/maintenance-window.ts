import { DateTime } from 'luxon';

/**
 * Weekly maintenance windows and pure arithmetic on them. Start times are local to the schedule's IANA time zone
 * (UTC by default); a week is counted in minutes from Monday 00:00, and a window may run past Sunday midnight.
 * Plain types and functions: the schedule entity stores these windows, this file does not know the entity.
 */

/** Stored and answered in upper-case full form; requests may also use mon..sun in any case. */
export const WEEKDAYS = ['MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY', 'SUNDAY'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

export interface MaintenanceWindow {
  day: Weekday;
  /** `HH:mm`, local to the schedule's time zone. */
  startTime: string;
  /** Minutes, 30..1440. */
  duration: number;
}

export const MINUTES_PER_DAY = 24 * 60;
export const MINUTES_PER_WEEK = 7 * MINUTES_PER_DAY;
export const MIN_WINDOW_DURATION = 30;
export const MAX_WINDOW_DURATION = 1440;
/** A window's length when a request leaves `duration` out: four hours, minutes. */
export const DEFAULT_WINDOW_DURATION = 240;
export const START_TIME_PATTERN = /^([01]\d|2[0-3]):[0-5]\d$/;

const SHORT_DAYS = ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'];
const MS_PER_MINUTE = 60_000;

/** `MONDAY` .. `SUNDAY` or `mon` .. `sun`, in any case, to the upper-case full name; null otherwise. */
export function parseDay(input: unknown): Weekday | null {
  if (typeof input !== 'string') return null;
  const v = input.trim().toUpperCase();
  const full = WEEKDAYS.indexOf(v as Weekday);
  if (full >= 0) return WEEKDAYS[full];
  const short = SHORT_DAYS.indexOf(v);
  return short >= 0 ? WEEKDAYS[short] : null;
}

/** `HH:mm` to minutes after midnight; null when it does not match the pattern. */
export function parseStartTime(input: unknown): number | null {
  if (typeof input !== 'string' || !START_TIME_PATTERN.test(input)) return null;
  const [h, m] = input.split(':').map(Number);
  return h * 60 + m;
}

/** Minute of the week (Monday 00:00 = 0) at which the window opens. */
export function windowStartMinute(w: MaintenanceWindow): number {
  const day = WEEKDAYS.indexOf(w.day);
  const start = parseStartTime(w.startTime);
  if (day < 0 || start === null) throw new Error(`Invalid maintenance window ${JSON.stringify(w)}`);
  return day * MINUTES_PER_DAY + start;
}

/** Start of the week (Monday 00:00 local to `zone`) holding `at`. */
export function startOfWeek(at: Date, zone = 'UTC'): DateTime {
  return DateTime.fromJSDate(at, { zone }).startOf('week');
}

export interface WindowOccurrence {
  start: Date;
  end: Date;
  window: MaintenanceWindow;
}

/**
 * The occurrence of `w` in the week `weekOffset` weeks after `weekStart`, computed in the schedule's zone with
 * Luxon: calendar days keep their wall-clock time across daylight-saving changes, and a start time the clocks
 * skip (02:30 on the night they jump forward) moves forward by the length of the gap (03:30). The duration is
 * elapsed time.
 */
function occurrence(w: MaintenanceWindow, weekStart: DateTime, weekOffset: number): WindowOccurrence {
  const minute = windowStartMinute(w);
  const local = weekStart
    .plus({ weeks: weekOffset, days: Math.floor(minute / MINUTES_PER_DAY) })
    .set({ hour: Math.floor((minute % MINUTES_PER_DAY) / 60), minute: minute % 60, second: 0, millisecond: 0 });
  const startMs = local.toMillis();
  return { start: new Date(startMs), end: new Date(startMs + w.duration * MS_PER_MINUTE), window: w };
}

/** The earliest occurrence of any window that starts strictly after `after`; null without windows. */
export function nextWindowStart(windows: MaintenanceWindow[], after: Date, zone = 'UTC'): WindowOccurrence | null {
  const weekStart = startOfWeek(after, zone);
  let best: WindowOccurrence | null = null;
  for (const w of windows) {
    for (const offset of [0, 1, 2]) {
      const o = occurrence(w, weekStart, offset);
      if (o.start.getTime() > after.getTime()) {
        if (!best || o.start < best.start) best = o;
        break;
      }
    }
  }
  return best;
}

/** The occurrence of a window that is open at `at` (start <= at < end), if any. */
export function windowContaining(windows: MaintenanceWindow[], at: Date, zone = 'UTC'): WindowOccurrence | null {
  const weekStart = startOfWeek(at, zone);
  for (const w of windows) {
    // A window opened last week may still be running past Sunday midnight.
    for (const offset of [0, -1]) {
      const o = occurrence(w, weekStart, offset);
      if (o.start.getTime() <= at.getTime() && at.getTime() < o.end.getTime()) return o;
    }
  }
  return null;
}

/**
 * The window an upgrade planned at `now` goes into: the one open now when at least the minimum window length
 * (30 minutes) of it remains, otherwise the next one to open. Null without windows.
 */
export function plannableWindow(windows: MaintenanceWindow[], now: Date, zone = 'UTC'): WindowOccurrence | null {
  const open = windowContaining(windows, now, zone);
  if (open && open.end.getTime() - now.getTime() >= MIN_WINDOW_DURATION * MS_PER_MINUTE) return open;
  return nextWindowStart(windows, now, zone);
}

/** Pairs of window indexes that overlap, counting the wrap from Sunday into Monday. */
export function findOverlaps(windows: MaintenanceWindow[]): [number, number][] {
  const pairs: [number, number][] = [];
  for (let i = 0; i < windows.length; i++) {
    for (let j = i + 1; j < windows.length; j++) {
      const a = windowStartMinute(windows[i]);
      const b = windowStartMinute(windows[j]);
      const aToB = (((b - a) % MINUTES_PER_WEEK) + MINUTES_PER_WEEK) % MINUTES_PER_WEEK;
      const bToA = (((a - b) % MINUTES_PER_WEEK) + MINUTES_PER_WEEK) % MINUTES_PER_WEEK;
      if (aToB < windows[i].duration || bToA < windows[j].duration) pairs.push([i, j]);
    }
  }
  return pairs;
}

/** "TUESDAY 02:00 for 120 min", for messages. */
export function describeWindow(w: MaintenanceWindow): string {
  return `${w.day} ${w.startTime} for ${w.duration} min`;
}

/** The name of a schedule whose request left `name` out: its windows in words, at most 100 characters. */
export function defaultScheduleName(windows: MaintenanceWindow[]): string {
  const text = windows.map((w) => `${w.day} ${w.startTime} (${w.duration} min)`).join(', ');
  return text.length <= 100 ? text : `${text.slice(0, 99)}…`;
}
