import fc from 'fast-check';
import * as semver from 'semver';
import { compareVersions, downgradeTargets, sortBySemver, upgradeTargets, VersionLike } from '../../src/catalog/semver-targets';

const v = (version: string, available = true): VersionLike => ({ version, available });

/** The table of data/catalog.yaml: 1.29.11, 1.30.7 and 1.32.2 unavailable. */
const CATALOG: VersionLike[] = [
  v('1.32.2', false), v('1.29.10'), v('1.29.11', false), v('1.29.12'), v('1.29.13'),
  v('1.30.6'), v('1.30.7', false), v('1.30.8'), v('1.30.9'),
  v('1.31.3'), v('1.31.4'), v('1.31.5'), v('1.31.6'),
  v('1.32.0'), v('1.32.1'),
];
const names = (xs: VersionLike[]) => xs.map((x) => x.version);

describe('upgrade targets', () => {
  it.each([
    ['1.30.6', ['1.30.8', '1.30.9', '1.31.3', '1.31.4', '1.31.5', '1.31.6']],
    ['1.30.9', ['1.31.3', '1.31.4', '1.31.5', '1.31.6']],
    ['1.30.7', ['1.30.8', '1.30.9', '1.31.3', '1.31.4', '1.31.5', '1.31.6']],
    ['1.29.10', ['1.29.12', '1.29.13', '1.30.6', '1.30.8', '1.30.9']],
    ['1.31.6', ['1.32.0', '1.32.1']],
    ['1.32.0', ['1.32.1']],
    ['1.32.1', []],
    ['1.32.2', []],
  ])('from %s', (from, expected) => {
    expect(names(upgradeTargets(from, CATALOG))).toEqual(expected);
  });

  it('never skips a minor: with no 1.31 at all, 1.30 has only its own newer patches', () => {
    const table = [v('1.30.1'), v('1.30.2'), v('1.32.0'), v('1.32.1')];
    expect(names(upgradeTargets('1.30.1', table))).toEqual(['1.30.2']);
  });

  it('never crosses a major, and excludes unavailable versions of the next minor', () => {
    const table = [v('1.40.1'), v('2.0.0'), v('1.41.0', false), v('1.41.1')];
    expect(names(upgradeTargets('1.40.0', table))).toEqual(['1.40.1', '1.41.1']);
  });

  it('orders pre-releases by semver', () => {
    const table = [v('1.31.0'), v('1.31.0-rc.1'), v('1.30.10'), v('1.30.9')];
    expect(names(upgradeTargets('1.30.8', table))).toEqual(['1.30.9', '1.30.10', '1.31.0-rc.1', '1.31.0']);
  });

  it('an invalid version has no targets', () => {
    expect(upgradeTargets('latest', CATALOG)).toEqual([]);
    expect(downgradeTargets('v1.30', CATALOG)).toEqual([]);
  });
});

describe('downgrade targets', () => {
  it.each([
    ['1.30.9', ['1.30.6', '1.30.8']],
    ['1.30.8', ['1.30.6']],
    ['1.30.6', []],
    ['1.29.13', ['1.29.10', '1.29.12']],
    ['1.31.3', []],
    ['1.32.2', ['1.32.0', '1.32.1']],
  ])('from %s', (from, expected) => {
    expect(names(downgradeTargets(from, CATALOG))).toEqual(expected);
  });
});

describe('properties', () => {
  const version = fc.tuple(fc.integer({ min: 1, max: 2 }), fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 12 })).map(([a, b, c]) => `${a}.${b}.${c}`);
  const table = fc.uniqueArray(fc.record({ version, available: fc.boolean() }), { selector: (x) => x.version, maxLength: 30 });

  it('upgrades are available, newer, same major, at most one minor ahead; downgrades available, older, same minor', () => {
    fc.assert(
      fc.property(version, table, (from, versions) => {
        const f = semver.parse(from)!;
        for (const t of upgradeTargets(from, versions)) {
          const p = semver.parse(t.version)!;
          expect(t.available).toBe(true);
          expect(semver.gt(p, f)).toBe(true);
          expect(p.major).toBe(f.major);
          expect(p.minor - f.minor).toBeLessThanOrEqual(1);
        }
        for (const t of downgradeTargets(from, versions)) {
          const p = semver.parse(t.version)!;
          expect(t.available).toBe(true);
          expect(semver.lt(p, f)).toBe(true);
          expect([p.major, p.minor]).toEqual([f.major, f.minor]);
        }
        // every qualifying version is included
        const expectedUp = versions.filter((x) => {
          const p = semver.parse(x.version)!;
          return x.available && p.major === f.major && semver.gt(p, f) && p.minor - f.minor <= 1;
        });
        expect(upgradeTargets(from, versions)).toHaveLength(expectedUp.length);
      }),
    );
  });

  it('sorts by semver, not by text', () => {
    expect(names(sortBySemver([v('1.30.10'), v('1.30.9'), v('1.4.0')]))).toEqual(['1.4.0', '1.30.9', '1.30.10']);
    expect(compareVersions('1.30.10', '1.30.9')).toBeGreaterThan(0);
  });
});
