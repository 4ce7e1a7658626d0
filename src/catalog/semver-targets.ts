import * as semver from 'semver';

/** The least a version rule needs to know about a catalog version. */
export interface VersionLike {
  version: string;
  available: boolean;
}

/** Ascending semver order; strings that are not valid semver sort last, by text. */
export function compareVersions(a: string, b: string): number {
  const va = semver.valid(a);
  const vb = semver.valid(b);
  if (va && vb) return semver.compare(va, vb);
  if (va) return -1;
  if (vb) return 1;
  return a.localeCompare(b);
}

export function sortBySemver<T extends VersionLike>(versions: readonly T[]): T[] {
  return [...versions].sort((x, y) => compareVersions(x.version, y.version));
}

/**
 * Upgrade targets of `from` (docs/conventions.md, "Catalog"): available versions that are
 * newer patches of the same minor, or any patch of the next minor of the same major. A minor is
 * never skipped, and a new major is never a target. Sorted ascending. An invalid `from` has none.
 */
export function upgradeTargets<T extends VersionLike>(from: string, versions: readonly T[]): T[] {
  const f = semver.parse(from);
  if (!f) return [];
  return sortBySemver(
    versions.filter((v) => {
      const c = semver.parse(v.version);
      if (!v.available || !c || c.major !== f.major || !semver.gt(c, f)) return false;
      return c.minor === f.minor || c.minor === f.minor + 1;
    }),
  );
}

/** Downgrade targets of `from`: available older patches of the same minor. Sorted ascending. */
export function downgradeTargets<T extends VersionLike>(from: string, versions: readonly T[]): T[] {
  const f = semver.parse(from);
  if (!f) return [];
  return sortBySemver(
    versions.filter((v) => {
      const c = semver.parse(v.version);
      return !!c && v.available && c.major === f.major && c.minor === f.minor && semver.lt(c, f);
    }),
  );
}

/** A version string the catalog accepts: strict semver (`1.31.6`, `1.32.0-rc.1`), no `v` prefix. */
export function isCatalogVersion(version: string): boolean {
  return semver.valid(version) === version;
}
