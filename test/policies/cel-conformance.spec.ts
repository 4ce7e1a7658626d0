import { Environment, evaluate } from '@marcbachmann/cel-js';
import { tests as conformance } from '@bufbuild/cel-spec/testdata/conformance.js';
import { readFileSync } from 'fs';
import { join } from 'path';

/**
 * The CEL implementation of cluster policies (@marcbachmann/cel-js) against the official cel-spec conformance
 * data (@bufbuild/cel-spec, the simple tests of cel-spec v0.25.1), for the files whose features policies use.
 * Each case is checked (unless the case disables checking) and evaluated with the library's default limits
 * (the tighter limits of policies are the service's choice, tested in cluster-policies.e2e-spec.ts); it passes when the result (or the error) is the expected one. Cases that need protobuf messages, a container
 * or an expected value this harness cannot express are not applicable. The pinned figures live in
 * docs/adr/0081-cel-conformance-pinned.md: the test fails when a file passes fewer cases than pinned
 * (a library upgrade that regresses), and prints the figures to re-pin when more pass.
 */

/** The conformance files of the features policies expose (no protobuf messages, timestamps, optionals, extensions). */
const FILES = ['basic', 'comparisons', 'conversions', 'fields', 'fp_math', 'integer_math', 'lists', 'logic', 'macros', 'parse', 'plumbing', 'string'];

type Json = Record<string, any>;
interface Case {
  name: string;
  expr: string;
  value?: Json;
  evalError?: Json;
  typedResult?: { result: Json };
  typeEnv?: Json[];
  bindings?: Record<string, { value?: Json }>;
  disableCheck?: boolean;
  checkOnly?: boolean;
  container?: string;
}

class NotApplicable extends Error {}

/** cel.expr.Value (proto3 JSON) to the library's values. */
function toValue(v: Json): unknown {
  if ('nullValue' in v) return null;
  if ('boolValue' in v) return v.boolValue;
  if ('int64Value' in v) return BigInt(v.int64Value);
  if ('uint64Value' in v) return evaluate(`${BigInt(v.uint64Value)}u`);
  if ('doubleValue' in v) return Number(v.doubleValue);
  if ('stringValue' in v) return v.stringValue;
  if ('bytesValue' in v) return new Uint8Array(Buffer.from(v.bytesValue, 'base64'));
  if ('listValue' in v) return (v.listValue.values ?? []).map(toValue);
  if ('mapValue' in v) {
    const entries = (v.mapValue.entries ?? []) as { key: Json; value: Json }[];
    if (entries.some((e) => !('stringValue' in e.key))) throw new NotApplicable('map with non-string keys');
    return Object.fromEntries(entries.map((e) => [e.key.stringValue, toValue(e.value)]));
  }
  if ('typeValue' in v) return { celType: v.typeValue };
  throw new NotApplicable(`value ${Object.keys(v)[0]}`);
}

function same(actual: unknown, expected: unknown): boolean {
  if (expected && typeof expected === 'object' && 'celType' in expected) {
    return actual?.constructor?.name === 'Type' && String(actual) === `Type<${(expected as { celType: string }).celType}>`;
  }
  if (typeof expected === 'number') return typeof actual === 'number' && (Number.isNaN(expected) ? Number.isNaN(actual) : Object.is(actual, expected) || actual === expected);
  if (typeof expected === 'bigint') return typeof actual === 'bigint' && actual === expected;
  if (expected instanceof Uint8Array) return actual instanceof Uint8Array && Buffer.from(actual).equals(Buffer.from(expected));
  if (expected && typeof expected === 'object' && expected.constructor?.name === 'UnsignedInt') {
    return actual?.constructor?.name === 'UnsignedInt' && String(actual) === String(expected);
  }
  if (Array.isArray(expected)) return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => same(actual[i], e));
  if (expected && typeof expected === 'object') {
    if (!actual || typeof actual !== 'object' || Array.isArray(actual)) return false;
    const a = actual instanceof Map ? Object.fromEntries(actual) : (actual as Record<string, unknown>);
    const keys = Object.keys(expected);
    return Object.keys(a).length === keys.length && keys.every((k) => same(a[k], (expected as Record<string, unknown>)[k]));
  }
  return actual === expected;
}

const PRIMITIVES: Record<string, string> = { BOOL: 'bool', INT64: 'int', UINT64: 'uint', DOUBLE: 'double', STRING: 'string', BYTES: 'bytes' };

function typeName(t: Json): string {
  if (t.primitive) return PRIMITIVES[t.primitive] ?? 'dyn';
  if (t.listType) return `list<${typeName(t.listType.elemType ?? {})}>`;
  if (t.mapType) return `map<${typeName(t.mapType.keyType)}, ${typeName(t.mapType.valueType)}>`;
  if ('dyn' in t || 'null' in t) return 'dyn';
  throw new NotApplicable('declared type');
}

/** true: passed; false: failed; throws NotApplicable. */
function run(c: Case): boolean {
  if (c.container) throw new NotApplicable('container');
  // Protocol buffer messages and wrapper types: policies have none (their variables are plain objects).
  if (/google\.protobuf\.|TestAllTypes|NestedTestAllTypes|cel\.expr\./.test(c.expr)) throw new NotApplicable('protobuf message');
  if (c.checkOnly) throw new NotApplicable('check only');
  const expected = c.value ?? c.typedResult?.result;
  if (!expected && !c.evalError) throw new NotApplicable('no expected value');
  const env = new Environment({ unlistedVariablesAreDyn: !!c.disableCheck });
  for (const d of c.typeEnv ?? []) {
    if (!d.ident) throw new NotApplicable('declared function');
    env.registerVariable(d.name, typeName(d.ident.type ?? {}));
  }
  const context = Object.fromEntries(Object.entries(c.bindings ?? {}).map(([k, b]) => [k, b.value ? toValue(b.value) : undefined]));
  const want = expected ? toValue(expected) : undefined;
  try {
    if (!c.disableCheck && !env.check(c.expr).valid) return !!c.evalError;
    const got = env.parse(c.expr)(context);
    return !c.evalError && same(got, want);
  } catch (err) {
    if (err instanceof NotApplicable) throw err;
    return !!c.evalError;
  }
}

interface Figures {
  applicable: number;
  passed: number;
}

function figuresOf(file: string): Figures {
  const suite = (conformance.suites ?? []).find((s) => s.name === file);
  if (!suite) throw new Error(`conformance file ${file} is missing from @bufbuild/cel-spec`);
  const out: Figures = { applicable: 0, passed: 0 };
  const walk = (s: { tests?: { original: unknown }[]; suites?: unknown[] }) => {
    for (const t of s.tests ?? []) {
      try {
        const ok = run(t.original as Case);
        out.applicable++;
        if (ok) out.passed++;
        else if (process.env.CEL_CONFORMANCE_VERBOSE) process.stdout.write(`${file}: failed ${(t.original as Case).name}: ${(t.original as Case).expr}\n`);
      } catch (err) {
        if (!(err instanceof NotApplicable)) throw err;
      }
    }
    for (const child of s.suites ?? []) walk(child as typeof s);
  };
  walk(suite as never);
  return out;
}

/** The table of docs/adr/0081-cel-conformance-pinned.md: `| file | applicable | passed |`. */
function pinned(): Record<string, Figures> {
  const doc = readFileSync(join(__dirname, '../../docs/adr/0081-cel-conformance-pinned.md'), 'utf8');
  const start = doc.indexOf('CEL conformance, pinned');
  if (start < 0) throw new Error('docs/adr/0081-cel-conformance-pinned.md has no "CEL conformance, pinned" table');
  const rows: Record<string, Figures> = {};
  for (const line of doc.slice(start).split('\n').slice(1)) {
    const m = /^\|\s*`?([a-z_0-9]+)`?\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|/.exec(line.trim());
    if (m) rows[m[1]] = { applicable: Number(m[2]), passed: Number(m[3]) };
    else if (Object.keys(rows).length && !line.trim().startsWith('|')) break;
  }
  return rows;
}

describe('CEL conformance (cel-spec simple tests)', () => {
  const pins = pinned();
  const measured: Record<string, Figures> = {};

  afterAll(() => {
    const lines = FILES.filter((f) => measured[f]).map((f) => `| ${f} | ${measured[f].applicable} | ${measured[f].passed} |`);
    if (FILES.some((f) => measured[f] && (measured[f].passed !== pins[f]?.passed || measured[f].applicable !== pins[f]?.applicable))) {
      process.stdout.write(`CEL conformance figures differ from docs/adr/0081-cel-conformance-pinned.md; measured:\n${lines.join('\n')}\n`);
    }
  });

  it('pins a figure for each file run', () => {
    expect(Object.keys(pins).sort()).toEqual([...FILES].sort());
  });

  it.each(FILES)('%s passes at least the pinned number of cases', (file) => {
    measured[file] = figuresOf(file);
    expect(measured[file].applicable).toBeGreaterThan(0);
    expect({ file, passed: measured[file].passed >= pins[file].passed }).toEqual({ file, passed: true });
  });
});
