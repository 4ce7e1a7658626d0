import {
  findOverlaps,
  MaintenanceWindow,
  nextWindowStart,
  parseDay,
  parseStartTime,
  plannableWindow,
  startOfWeek,
  windowContaining,
} from '../../src/maintenance/maintenance-window';

const w = (day: MaintenanceWindow['day'], startTime: string, duration: number): MaintenanceWindow => ({ day, startTime, duration });
const at = (iso: string) => new Date(iso);

describe('maintenance window arithmetic', () => {
  it('parses both day spellings in any case to the upper-case full name', () => {
    expect(parseDay('MONDAY')).toBe('MONDAY');
    expect(parseDay('monday')).toBe('MONDAY');
    expect(parseDay('Tue')).toBe('TUESDAY');
    expect(parseDay('sun')).toBe('SUNDAY');
    expect(parseDay('SAT')).toBe('SATURDAY');
    expect(parseDay(' wed ')).toBe('WEDNESDAY');
    expect(parseDay('tues')).toBeNull();
    expect(parseDay('')).toBeNull();
    expect(parseDay(3)).toBeNull();
  });

  it('parses HH:mm start times and refuses everything else', () => {
    expect(parseStartTime('00:00')).toBe(0);
    expect(parseStartTime('02:30')).toBe(150);
    expect(parseStartTime('23:59')).toBe(23 * 60 + 59);
    for (const bad of ['24:00', '2:00', '02:60', '02:00:00', '0200', 'ab:cd', '']) expect(parseStartTime(bad)).toBeNull();
  });

  it('finds the start of the UTC week (Monday 00:00)', () => {
    expect(startOfWeek(at('2026-11-22T23:59:00Z')).toUTC().toISO()).toBe('2026-11-16T00:00:00.000Z'); // Sunday
    expect(startOfWeek(at('2026-11-23T00:00:00Z')).toUTC().toISO()).toBe('2026-11-23T00:00:00.000Z'); // Monday
    expect(startOfWeek(at('2026-11-25T12:00:00Z')).toUTC().toISO()).toBe('2026-11-23T00:00:00.000Z');
  });

  it('gives the next window start strictly after an instant', () => {
    const windows = [w('TUESDAY', '02:00', 120)];
    const next = nextWindowStart(windows, at('2026-11-22T10:00:00Z'))!;
    expect(next.start.toISOString()).toBe('2026-11-24T02:00:00.000Z');
    expect(next.end.toISOString()).toBe('2026-11-24T04:00:00.000Z');
    // at the very start, or inside, the next occurrence is a week later
    expect(nextWindowStart(windows, at('2026-11-24T02:00:00Z'))!.start.toISOString()).toBe('2026-12-01T02:00:00.000Z');
    expect(nextWindowStart(windows, at('2026-11-24T03:00:00Z'))!.start.toISOString()).toBe('2026-12-01T02:00:00.000Z');
    expect(nextWindowStart([], at('2026-11-24T03:00:00Z'))).toBeNull();
  });

  it('picks the earliest of several windows, across the week boundary', () => {
    const windows = [w('MONDAY', '01:00', 60), w('SATURDAY', '22:00', 60)];
    expect(nextWindowStart(windows, at('2026-11-28T23:30:00Z'))!.start.toISOString()).toBe('2026-11-30T01:00:00.000Z');
    expect(nextWindowStart(windows, at('2026-11-27T00:00:00Z'))!.start.toISOString()).toBe('2026-11-28T22:00:00.000Z');
  });

  it('finds the window containing an instant, including one wrapping past Sunday midnight', () => {
    const windows = [w('SUNDAY', '23:00', 180)];
    expect(windowContaining(windows, at('2026-11-22T23:30:00Z'))!.start.toISOString()).toBe('2026-11-22T23:00:00.000Z');
    const wrapped = windowContaining(windows, at('2026-11-23T01:00:00Z'))!;
    expect(wrapped.start.toISOString()).toBe('2026-11-22T23:00:00.000Z');
    expect(wrapped.end.toISOString()).toBe('2026-11-23T02:00:00.000Z');
    expect(windowContaining(windows, at('2026-11-23T02:00:00Z'))).toBeNull(); // end is exclusive
    expect(windowContaining(windows, at('2026-11-22T22:59:00Z'))).toBeNull();
  });

  it('detects overlapping windows, including the wrap into Monday, and allows touching ones', () => {
    expect(findOverlaps([w('MONDAY', '02:00', 60), w('MONDAY', '02:30', 60)])).toEqual([[0, 1]]);
    expect(findOverlaps([w('MONDAY', '02:00', 60), w('MONDAY', '03:00', 60)])).toEqual([]);
    expect(findOverlaps([w('SUNDAY', '23:00', 120), w('MONDAY', '00:30', 30)])).toEqual([[0, 1]]);
    expect(findOverlaps([w('MONDAY', '00:30', 30), w('SUNDAY', '23:00', 90)])).toEqual([]);
    expect(findOverlaps([w('TUESDAY', '00:00', 1440), w('WEDNESDAY', '00:00', 1440)])).toEqual([]);
    expect(findOverlaps([w('FRIDAY', '12:00', 30), w('FRIDAY', '12:00', 30), w('SATURDAY', '12:00', 30)])).toEqual([[0, 1]]);
  });
});

describe('plannableWindow: the open window when enough of it remains', () => {
  const daily = (day: string, startTime: string, duration: number) => ({ day, startTime, duration }) as never;
  it('uses the window open now with 31 minutes left, the next one with 29', () => {
    const windows = [daily('MONDAY', '00:00', 1440), daily('WEDNESDAY', '02:00', 60)];
    const open = plannableWindow(windows, new Date('2026-11-23T23:29:00Z'));
    expect(open?.start.toISOString()).toBe('2026-11-23T00:00:00.000Z');
    expect(open?.end.toISOString()).toBe('2026-11-24T00:00:00.000Z');
    const late = plannableWindow(windows, new Date('2026-11-23T23:31:00Z'));
    expect(late?.start.toISOString()).toBe('2026-11-25T02:00:00.000Z');
    const exactly = plannableWindow(windows, new Date('2026-11-23T23:30:00Z'));
    expect(exactly?.start.toISOString()).toBe('2026-11-23T00:00:00.000Z');
  });
  it('uses a window that runs across Sunday midnight into Monday', () => {
    const windows = [daily('SUNDAY', '23:00', 180)];
    const open = plannableWindow(windows, new Date('2026-11-23T00:30:00Z')); // Monday 00:30, 90 min left
    expect(open?.start.toISOString()).toBe('2026-11-22T23:00:00.000Z');
    expect(open?.end.toISOString()).toBe('2026-11-23T02:00:00.000Z');
    const tooLate = plannableWindow(windows, new Date('2026-11-23T01:45:00Z')); // 15 min left
    expect(tooLate?.start.toISOString()).toBe('2026-11-29T23:00:00.000Z');
  });
});

describe('windows local to a time zone (Luxon), across daylight-saving changes', () => {
  const SUNDAY_0230 = [{ day: 'SUNDAY', startTime: '02:30', duration: 60 }] as never;
  it('keeps the local start time in Europe/Amsterdam through the week clocks jump forward', () => {
    const zone = 'Europe/Amsterdam';
    // The Sunday before the change (CET, UTC+1): 02:30 local is 01:30Z.
    expect(nextWindowStart(SUNDAY_0230, new Date('2026-03-20T00:00:00Z'), zone)?.start.toISOString()).toBe('2026-03-22T01:30:00.000Z');
    // 29 March 2026, 02:00 -> 03:00: 02:30 does not exist and moves forward by the gap, to 03:30 CEST (01:30Z).
    const gap = nextWindowStart(SUNDAY_0230, new Date('2026-03-23T00:00:00Z'), zone);
    expect(gap?.start.toISOString()).toBe('2026-03-29T01:30:00.000Z');
    expect(gap?.end.toISOString()).toBe('2026-03-29T02:30:00.000Z'); // duration is elapsed time
    // The Sunday after (CEST, UTC+2): 02:30 local is 00:30Z.
    expect(nextWindowStart(SUNDAY_0230, new Date('2026-03-30T00:00:00Z'), zone)?.start.toISOString()).toBe('2026-04-05T00:30:00.000Z');
    // Clocks back on 25 October: 02:30 happens twice; the first (CEST, 00:30Z) is used.
    expect(nextWindowStart(SUNDAY_0230, new Date('2026-10-20T00:00:00Z'), zone)?.start.toISOString()).toBe('2026-10-25T00:30:00.000Z');
  });
  it('finds the window open now in the local week', () => {
    const mondayLocal = [{ day: 'MONDAY', startTime: '00:00', duration: 120 }] as never;
    // Monday 00:30 in Tokyo is Sunday 15:30Z.
    const open = windowContaining(mondayLocal, new Date('2026-11-22T15:30:00Z'), 'Asia/Tokyo');
    expect(open?.start.toISOString()).toBe('2026-11-22T15:00:00.000Z');
  });
});
