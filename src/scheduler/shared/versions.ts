import * as semver from 'semver';

/** Version comparisons of the scheduler's rules: a string that is not a version compares false either way. */

/** a > b by semver. */
export function newer(a: string, b: string): boolean {
  const va = semver.valid(a);
  const vb = semver.valid(b);
  return !!va && !!vb && semver.gt(va, vb);
}

/** a >= b by semver. */
export function atLeast(a: string, b: string): boolean {
  const va = semver.valid(a);
  const vb = semver.valid(b);
  return !!va && !!vb && semver.gte(va, vb);
}

/** Same major and minor: the step is a patch. */
export function samePatchLine(a: string, b: string): boolean {
  const x = semver.parse(a);
  const y = semver.parse(b);
  return !!x && !!y && x.major === y.major && x.minor === y.minor;
}
