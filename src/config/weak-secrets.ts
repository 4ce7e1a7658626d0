/**
 * Keys and tokens that are trivially weak: what a placeholder, a test value or a typed-in phrase looks like, never
 * what `openssl rand` makes. The odds that random bytes are refused are below 1e-13 for each check.
 */

/** Why `bytes` (a key that should be random bytes) is trivially weak, or null. */
export function weakKeyReason(bytes: Buffer): string | null {
  const values = [...bytes];
  return patternReason(values, 'bytes') ?? (values.every((b) => b >= 0x20 && b < 0x7f) ? 'it is printable text, not random bytes' : null);
}

/** Why `token` (a bearer token that should be random) is trivially weak, or null. */
export function weakTokenReason(token: string): string | null {
  return patternReason([...token].map((c) => c.codePointAt(0)!), 'characters');
}

function patternReason(values: number[], unit: string): string | null {
  if (values.length < 2) return null;
  if (values.every((v) => v === values[0])) return `all its ${unit} are the same`;
  for (let period = 2; period <= values.length / 2; period++) {
    if (values.every((v, i) => v === values[i % period])) return `it repeats a block of ${period} ${unit}`;
  }
  const step = values[1] - values[0];
  if (values.every((v, i) => i === 0 || v - values[i - 1] === step)) return `its ${unit} run in equal steps`;
  const distinct = new Set(values).size;
  // Random: 32 bytes have about 30 distinct values, a 20-character hex token about 13.
  const least = unit === 'bytes' ? Math.min(16, Math.ceil(values.length / 2)) : Math.min(6, Math.ceil(values.length / 4));
  if (distinct < least) return `it has only ${distinct} different ${unit}`;
  return null;
}
