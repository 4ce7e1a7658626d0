import {
  allowedWindow,
  applicableExclusions,
  checkExclusionHorizon,
  isMinorUpgrade,
  MaintenanceExclusion,
  normaliseExclusion,
  overlappingExclusion,
} from '../../src/maintenance/maintenance-exclusion';
import type { MaintenanceWindow } from '../../src/maintenance/maintenance-window';
import { ValidationFailedException } from '../../src/common/errors';

const at = (iso: string) => new Date(iso);
const ex = (startsAt: string, endsAt: string, scope: MaintenanceExclusion['scope'] = 'NO_UPGRADES', name = 'x'): MaintenanceExclusion => ({
  name,
  startsAt,
  endsAt,
  scope,
});
const TUESDAY: MaintenanceWindow[] = [{ day: 'TUESDAY', startTime: '02:00', duration: 120 }];
const DAY = 24 * 60 * 60 * 1000;
const opts = (openOk = true) => ({ openOk, defaultDelayMs: DAY, defaultLengthMs: DAY });

describe('maintenance exclusions', () => {
  it('tells minor from patch upgrades by major.minor', () => {
    expect(isMinorUpgrade('1.31.5', '1.31.6')).toBe(false);
    expect(isMinorUpgrade('1.31.5', '1.32.0')).toBe(true);
    expect(isMinorUpgrade('1.31.5', '2.31.5')).toBe(true);
    expect(isMinorUpgrade('not-a-version', '1.31.6')).toBe(true);
  });

  it('applies NO_UPGRADES to every upgrade and NO_MINOR_UPGRADES to minor ones only', () => {
    const all = ex('2026-11-23T00:00:00Z', '2026-11-25T00:00:00Z', 'NO_UPGRADES', 'all');
    const minors = ex('2026-11-23T00:00:00Z', '2026-11-25T00:00:00Z', 'NO_MINOR_UPGRADES', 'minors');
    expect(applicableExclusions([all, minors], '1.31.5', '1.31.6')).toEqual([all]);
    expect(applicableExclusions([all, minors], '1.31.5', '1.32.0')).toEqual([all, minors]);
  });

  it('treats exclusions as half-open: a window touching an edge does not overlap', () => {
    const e = ex('2026-11-24T04:00:00Z', '2026-11-25T02:00:00Z');
    expect(overlappingExclusion([e], at('2026-11-24T02:00:00Z'), at('2026-11-24T04:00:00Z'))).toBeNull();
    expect(overlappingExclusion([e], at('2026-11-25T02:00:00Z'), at('2026-11-25T04:00:00Z'))).toBeNull();
    expect(overlappingExclusion([e], at('2026-11-24T03:59:00Z'), at('2026-11-24T05:00:00Z'))).toBe(e);
  });

  it('skips every window an exclusion overlaps, across chained exclusions', () => {
    const now = at('2026-11-22T10:00:00Z');
    expect(allowedWindow(TUESDAY, 'UTC', now, [], opts())?.start.toISOString()).toBe('2026-11-24T02:00:00.000Z');
    const first = ex('2026-11-24T03:00:00Z', '2026-11-27T00:00:00Z');
    expect(allowedWindow(TUESDAY, 'UTC', now, [first], opts())?.start.toISOString()).toBe('2026-12-01T02:00:00.000Z');
    const second = ex('2026-11-30T00:00:00Z', '2026-12-05T00:00:00Z');
    expect(allowedWindow(TUESDAY, 'UTC', now, [first, second], opts())?.start.toISOString()).toBe('2026-12-08T02:00:00.000Z');
  });

  it('uses the open window only when allowed and openOk', () => {
    const now = at('2026-11-24T02:10:00Z');
    expect(allowedWindow(TUESDAY, 'UTC', now, [], opts(true))?.start.toISOString()).toBe('2026-11-24T02:00:00.000Z');
    expect(allowedWindow(TUESDAY, 'UTC', now, [], opts(false))?.start.toISOString()).toBe('2026-12-01T02:00:00.000Z');
  });

  it('computes windows in the schedule time zone', () => {
    const now = at('2026-11-22T10:00:00Z');
    const e = ex('2026-11-24T00:00:00Z', '2026-11-24T02:00:00Z'); // covers 02:00 Amsterdam (01:00 UTC)
    expect(allowedWindow(TUESDAY, 'Europe/Amsterdam', now, [e], opts())?.start.toISOString()).toBe('2026-12-01T01:00:00.000Z');
  });

  it('pushes the default window (no schedule) to the end of the exclusions it overlaps', () => {
    const now = at('2026-11-22T10:00:00Z');
    expect(allowedWindow(null, 'UTC', now, [], opts())).toEqual({ start: at('2026-11-23T10:00:00Z'), end: at('2026-11-24T10:00:00Z') });
    const a = ex('2026-11-22T00:00:00Z', '2026-11-26T00:00:00Z');
    const b = ex('2026-11-26T12:00:00Z', '2026-11-28T00:00:00Z');
    expect(allowedWindow([], 'UTC', now, [a, b], opts())).toEqual({ start: at('2026-11-28T00:00:00Z'), end: at('2026-11-29T00:00:00Z') });
    // an exclusion ending before the default window opens changes nothing
    expect(allowedWindow(null, 'UTC', now, [ex('2026-11-22T00:00:00Z', '2026-11-23T00:00:00Z')], opts())?.start).toEqual(at('2026-11-23T10:00:00Z'));
  });

  it('normalises names and instants, and bounds endsAt by the clock', () => {
    expect(normaliseExclusion({ name: ' a ', startsAt: '2026-12-01T01:00:00+01:00', endsAt: '2026-12-02T00:00:00Z', scope: 'NO_UPGRADES' })).toEqual({
      name: 'a',
      startsAt: '2026-12-01T00:00:00.000Z',
      endsAt: '2026-12-02T00:00:00.000Z',
      scope: 'NO_UPGRADES',
    });
    const now = at('2026-11-22T00:00:00Z');
    expect(() => checkExclusionHorizon([ex('2026-11-01T00:00:00Z', '2027-11-22T00:00:00Z')], now, 'exclusions')).not.toThrow();
    let err: unknown;
    try {
      checkExclusionHorizon([ex('2026-11-01T00:00:00Z', '2026-11-02T00:00:00Z'), ex('2027-11-01T00:00:00Z', '2027-11-22T00:00:01Z')], now, 'exclusions');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ValidationFailedException);
    expect((err as ValidationFailedException).fieldErrors.map((f) => f.field)).toEqual(['exclusions.0.endsAt', 'exclusions.1.endsAt']);
  });
});
