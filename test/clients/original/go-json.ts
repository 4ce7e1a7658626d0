/**
 * A small model of how Go's encoding/json decodes a JSON value into a Go type, to check answers against the
 * original client's structs without running Go:
 * - a JSON null leaves any field as it is (no error), also for strings, numbers, booleans, structs, slices, maps;
 * - an object decodes into a struct; keys match field names case-insensitively (an exact match first); keys the
 *   struct does not have are ignored;
 * - a type mismatch (an object where a string is expected, an array where a struct is) is an error; Go goes on
 *   decoding and reports the first one, so every mismatch found is a reason the call fails;
 * - `int` takes integral numbers only; `time.Time` takes an RFC 3339 string.
 * `needed` marks fields the client's callers rely on, so their absence is reported even though Go would not fail.
 */
export type GoType =
  | { kind: 'string' | 'bool' | 'int' | 'float' | 'time' | 'any' }
  | { kind: 'ptr' | 'slice' | 'map'; elem: GoType }
  | { kind: 'struct'; name: string; fields: Record<string, GoField> };

export interface GoField {
  type: GoType;
  needed: boolean;
}

export const str: GoType = { kind: 'string' };
export const bool: GoType = { kind: 'bool' };
export const int: GoType = { kind: 'int' };
export const float: GoType = { kind: 'float' };
export const time: GoType = { kind: 'time' };
export const any: GoType = { kind: 'any' };
export const ptr = (elem: GoType): GoType => ({ kind: 'ptr', elem });
export const slice = (elem: GoType): GoType => ({ kind: 'slice', elem });
export const map = (elem: GoType): GoType => ({ kind: 'map', elem });

/** A field the client's callers read: missing is reported (Go itself would leave the zero value). */
export const needed = (type: GoType): GoField => ({ type, needed: true });

export function struct(name: string, fields: Record<string, GoType | GoField>): GoType {
  const out: Record<string, GoField> = {};
  for (const [k, v] of Object.entries(fields)) out[k] = 'needed' in v ? (v as GoField) : { type: v as GoType, needed: false };
  return { kind: 'struct', name, fields: out };
}

/** What was wrong at one place of an answer. */
export interface DecodeProblem {
  path: string;
  /** `slug-object` / `email-object`: the interface's Slug or Email object where the client has a string;
   *  `page-form-b`: a form B sort (array) where the client has its Sort struct; `missing`: a needed field absent. */
  kind: 'slug-object' | 'email-object' | 'page-form-b' | 'missing' | 'type';
  message: string;
}

const jsonType = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object' : typeof v);

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

function goTypeName(t: GoType): string {
  switch (t.kind) {
    case 'struct':
      return t.name;
    case 'ptr':
      return `*${goTypeName(t.elem)}`;
    case 'slice':
      return `[]${goTypeName(t.elem)}`;
    case 'map':
      return `map[string]${goTypeName(t.elem)}`;
    case 'time':
      return 'time.Time';
    case 'float':
      return 'float64';
    case 'any':
      return 'interface {}';
    default:
      return t.kind;
  }
}

function mismatch(path: string, value: unknown, t: GoType): DecodeProblem {
  const keys = value && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value) : [];
  let kind: DecodeProblem['kind'] = 'type';
  if (t.kind === 'string' && keys.length === 1 && keys[0] === 'slugValue') kind = 'slug-object';
  else if (t.kind === 'string' && keys.length === 1 && keys[0] === 'email') kind = 'email-object';
  else if (t.kind === 'struct' && t.name === 'Sort' && Array.isArray(value)) kind = 'page-form-b';
  return { path, kind, message: `json: cannot unmarshal ${jsonType(value)} into Go value of type ${goTypeName(t)} (${path})` };
}

/** Every problem decoding `value` into `t` (empty: decodes, and every needed field is there). */
export function decodeProblems(t: GoType, value: unknown, path = '$'): DecodeProblem[] {
  if (value === null) return [];
  switch (t.kind) {
    case 'any':
      return [];
    case 'string':
      return typeof value === 'string' ? [] : [mismatch(path, value, t)];
    case 'bool':
      return typeof value === 'boolean' ? [] : [mismatch(path, value, t)];
    case 'float':
      return typeof value === 'number' ? [] : [mismatch(path, value, t)];
    case 'int':
      if (typeof value !== 'number') return [mismatch(path, value, t)];
      return Number.isInteger(value) ? [] : [{ path, kind: 'type', message: `json: cannot unmarshal number ${value} into Go value of type int (${path})` }];
    case 'time':
      if (typeof value !== 'string') return [mismatch(path, value, t)];
      return RFC3339.test(value) ? [] : [{ path, kind: 'type', message: `parsing time ${JSON.stringify(value)} as RFC 3339 (${path})` }];
    case 'ptr':
      return decodeProblems(t.elem, value, path);
    case 'slice':
      if (!Array.isArray(value)) return [mismatch(path, value, t)];
      return value.flatMap((v, i) => decodeProblems(t.elem, v, `${path}[${i}]`));
    case 'map':
      if (jsonType(value) !== 'object') return [mismatch(path, value, t)];
      return Object.entries(value as object).flatMap(([k, v]) => decodeProblems(t.elem, v, `${path}.${k}`));
    case 'struct': {
      if (jsonType(value) !== 'object') return [mismatch(path, value, t)];
      const obj = value as Record<string, unknown>;
      const problems: DecodeProblem[] = [];
      const seen = new Set<string>();
      for (const [key, v] of Object.entries(obj)) {
        const field = Object.hasOwn(t.fields, key) ? key : Object.keys(t.fields).find((f) => f.toLowerCase() === key.toLowerCase());
        if (!field || seen.has(field)) continue;
        seen.add(field);
        problems.push(...decodeProblems(t.fields[field].type, v, `${path}.${key}`));
      }
      for (const [name, f] of Object.entries(t.fields)) {
        if (f.needed && !seen.has(name)) problems.push({ path: `${path}.${name}`, kind: 'missing', message: `${t.name}.${name} is missing (${path})` });
      }
      return problems;
    }
  }
}
