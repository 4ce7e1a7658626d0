import { looksSecret } from '../common/secret-fields';
import { REDACTED } from '../common/secret-text';
import type { AuditDetails } from './audit-event.entity';

export { REDACTED };

function normalise(v: unknown): unknown {
  if (v instanceof Date) return v.toISOString();
  if (v === undefined) return null;
  return v;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(normalise(a)) === JSON.stringify(normalise(b));
}

/**
 * Maps each changed property to {old, new}. `before` null means a create (old null), `after` null a
 * delete (new null). Properties whose name looks secret are written as "[redacted]" (the audit service also
 * redacts declared secrets: src/common/secret-fields.ts).
 */
export function auditDiff(
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
  keys?: string[],
): AuditDetails {
  const names = keys ?? [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])];
  const details: AuditDetails = {};
  for (const key of names) {
    const oldV = before ? normalise(before[key]) : null;
    const newV = after ? normalise(after[key]) : null;
    if (before && after && same(oldV, newV)) continue;
    if (looksSecret(key)) {
      details[key] = { old: oldV == null ? null : REDACTED, new: newV == null ? null : REDACTED };
    } else {
      details[key] = { old: oldV, new: newV };
    }
  }
  return details;
}

/** Picks the audited properties of an entity, so before/after snapshots compare like with like. */
export function snapshot<T extends object>(entity: T, keys: (keyof T)[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    const v = entity[k];
    out[k as string] = v && typeof v === 'object' && !(v instanceof Date) ? JSON.parse(JSON.stringify(v)) : v;
  }
  return out;
}
