import type { MaintenanceExclusion } from '../../src/maintenance/maintenance-exclusion';
import type { MaintenanceWindow } from '../../src/maintenance/maintenance-window';
import { countTransition, ruleBatch, Transitions } from '../../src/scheduler/scheduler-rule';
import { sequencingGate, UpstreamFacts } from '../../src/scheduler/shared/upstream';
import { atLeast, newer, samePatchLine } from '../../src/scheduler/shared/versions';
import { covering, exclusionsOf, planWindow, sequencedWindow } from '../../src/scheduler/shared/windows';

const at = (iso: string) => new Date(iso);
const HOUR = 60 * 60 * 1000;

describe('scheduler: version comparisons', () => {
  it('compares by semver, and a string that is not a version compares false either way', () => {
    expect(newer('1.31.10', '1.31.9')).toBe(true);
    expect(newer('1.31.9', '1.31.9')).toBe(false);
    expect(newer('latest', '1.31.9')).toBe(false);
    expect(newer('1.31.9', 'latest')).toBe(false);
    expect(atLeast('1.31.9', '1.31.9')).toBe(true);
    expect(atLeast('1.32.0', '1.31.9')).toBe(true);
    expect(atLeast('1.31.8', '1.31.9')).toBe(false);
    expect(atLeast('latest', 'latest')).toBe(false);
  });

  it('tells a patch step (same major.minor) from a minor one', () => {
    expect(samePatchLine('1.31.9', '1.31.2')).toBe(true);
    expect(samePatchLine('1.32.0', '1.31.9')).toBe(false);
    expect(samePatchLine('2.31.0', '1.31.0')).toBe(false);
    expect(samePatchLine('1.31', '1.31.2')).toBe(false);
  });
});

describe('scheduler: rollout sequencing gate', () => {
  const now = at('2026-11-24T12:00:00Z');
  const facts = (f: Partial<UpstreamFacts>): UpstreamFacts => ({
    up_id: 7,
    up_subject: 'prod/upstream',
    up_version: '1.31.6',
    up_since: at('2026-11-23T12:00:00Z'),
    up_upgrade: 'u-1',
    up_upgrade_status: 'SUCCEEDED',
    soak_hours: 24,
    ...f,
  });

  it('lets everything through without an upstream', () => {
    expect(sequencingGate(facts({ up_id: null }), '1.31.6', now)).toEqual({ held: null, soakEnd: null });
  });

  it('lets the upgrade through once the upstream has run the version (or a newer one) for the soak time', () => {
    expect(sequencingGate(facts({}), '1.31.6', now)).toEqual({ held: null, soakEnd: at('2026-11-24T12:00:00Z') });
    expect(sequencingGate(facts({ up_version: '1.32.0' }), '1.31.6', now).held).toBeNull();
  });

  it('holds it while the soak runs, answering when the soak ends', () => {
    const gate = sequencingGate(facts({ soak_hours: '36' as unknown as number }), '1.31.6', now);
    expect(gate).toEqual({ held: 'waiting for upstream cluster prod/upstream to run 1.31.6 for 36 h', soakEnd: new Date(now.getTime() + 12 * HOUR) });
  });

  it('holds it while the upstream does not run the version, or its upgrade is still under way', () => {
    expect(sequencingGate(facts({ up_version: '1.31.5' }), '1.31.6', now)).toEqual({
      held: 'waiting for upstream cluster prod/upstream to run 1.31.6 for 24 h',
      soakEnd: null,
    });
    expect(sequencingGate(facts({ up_version: null }), '1.31.6', now).soakEnd).toBeNull();
    expect(sequencingGate(facts({ up_upgrade_status: 'UPDATED' }), '1.31.6', now)).toEqual({
      held: 'waiting for upstream cluster prod/upstream to run 1.31.6 for 24 h',
      soakEnd: null,
    });
  });

  it("holds it with the upstream's failed upgrade as the reason, unless the upstream runs the version after all", () => {
    expect(sequencingGate(facts({ up_version: '1.31.5', up_upgrade_status: 'FAILED' }), '1.31.6', now)).toEqual({
      held: 'upstream cluster prod/upstream failed its upgrade to 1.31.6 (upgrade u-1)',
      soakEnd: null,
    });
    expect(sequencingGate(facts({ up_upgrade_status: 'FAILED' }), '1.31.6', now).held).toBeNull();
  });
});

describe('scheduler: windows and exclusions', () => {
  const ex = (name: string, scope: MaintenanceExclusion['scope'], startsAt: string, endsAt: string): MaintenanceExclusion => ({ name, startsAt, endsAt, scope });
  const mine = ex('mine', 'NO_MINOR_UPGRADES', '2026-11-24T00:00:00Z', '2026-11-25T00:00:00Z');
  const theirs = ex('theirs', 'NO_UPGRADES', '2026-11-30T00:00:00Z', '2026-12-02T00:00:00Z');
  const TUESDAY: MaintenanceWindow[] = [{ day: 'TUESDAY', startTime: '02:00', duration: 120 }];

  it("lists the cluster's exclusions, then its schedule's, naming where each comes from", () => {
    const row = { cluster_exclusions: [mine], schedule_exclusions: [theirs] };
    expect(exclusionsOf(row, 'weekly')).toEqual([
      { exclusion: mine, source: 'the cluster' },
      { exclusion: theirs, source: 'maintenance schedule weekly' },
    ]);
    expect(exclusionsOf(row, null)[1].source).toBe('its maintenance schedule');
    expect(exclusionsOf({ cluster_exclusions: null, schedule_exclusions: null }, null)).toEqual([]);
  });

  it('keeps the exclusions covering the upgrade: NO_MINOR_UPGRADES only for a minor one', () => {
    const list = exclusionsOf({ cluster_exclusions: [mine], schedule_exclusions: [theirs] }, null);
    expect(covering(list, '1.31.5', '1.31.6').map((x) => x.exclusion.name)).toEqual(['theirs']);
    expect(covering(list, '1.31.5', '1.32.0').map((x) => x.exclusion.name)).toEqual(['mine', 'theirs']);
  });

  it('plans without a schedule into the default window (24 h from now, 24 h long, UTC), past the exclusions', () => {
    const now = at('2026-11-23T10:00:00Z');
    expect(planWindow(null, null, now, [], true)).toEqual({ start: at('2026-11-24T10:00:00Z'), end: at('2026-11-25T10:00:00Z') });
    const list = exclusionsOf({ cluster_exclusions: [mine], schedule_exclusions: [] }, null);
    expect(planWindow(null, null, now, list, true)).toEqual({ start: at('2026-11-25T00:00:00Z'), end: at('2026-11-26T00:00:00Z') });
  });

  it("behind an upstream, plans into the first window starting at or after the upstream's soak ended", () => {
    const now = at('2026-11-24T02:30:00Z'); // Tuesday's window is open (90 minutes left)
    expect(sequencedWindow(TUESDAY, 'UTC', now, [], null)).toMatchObject({ start: at('2026-11-24T02:00:00Z'), end: at('2026-11-24T04:00:00Z') });
    expect(sequencedWindow(TUESDAY, 'UTC', now, [], at('2026-11-24T01:00:00Z'))?.start).toEqual(at('2026-11-24T02:00:00Z'));
    expect(sequencedWindow(TUESDAY, 'UTC', now, [], at('2026-11-24T02:15:00Z'))?.start).toEqual(at('2026-12-01T02:00:00Z'));
    // The next window overlaps an exclusion covering every upgrade: the one after.
    const list = exclusionsOf({ cluster_exclusions: [theirs], schedule_exclusions: [] }, null);
    expect(sequencedWindow(TUESDAY, 'UTC', now, list, at('2026-11-24T02:15:00Z'))?.start).toEqual(at('2026-12-08T02:00:00Z'));
  });
});

describe('scheduler: rule batches', () => {
  it('answers the last id as the cursor when the batch was full, else none', () => {
    expect(ruleBatch([{ id: 4 }, { id: 9 }], 2)).toEqual({ next: '9', rows: 2, transitions: {} });
    expect(ruleBatch([{ id: 4 }], 2, { MISSED: 1 })).toEqual({ next: null, rows: 1, transitions: { MISSED: 1 } });
    expect(ruleBatch([], 2)).toEqual({ next: null, rows: 0, transitions: {} });
  });

  it('counts transitions by target status', () => {
    const t: Transitions = {};
    countTransition(t, 'SCHEDULED');
    countTransition(t, 'SCHEDULED');
    countTransition(t, 'FAILED', 3);
    expect(t).toEqual({ SCHEDULED: 2, FAILED: 3 });
  });
});
