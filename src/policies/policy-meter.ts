import { durationCallCost, MAX_DURATION_LENGTH, MAX_VALUE_SIZE, REGEX_SCAN_FACTOR, SIZE_COST, TIME_ZONE_CALL_COST } from './policy-limits';

/**
 * The run-time budget of policy evaluation: `@marcbachmann/cel-js` 8.0.0 has no cost limit, so the service meters
 * its programs itself (docs/adr/0101-policy-runtime-budget.md). A compiled program's syntax tree
 * (the library's `ASTNode`s, including the nodes its macros expand to) is instrumented once (`instrument`):
 *
 * - every node evaluation costs one unit;
 * - every operator and function call (the `handle` the library's type check attaches to a node) costs SIZE_COST
 *   per character, element or entry of its operands and of the value it builds, measured on the actual values
 *   (`+` before it builds, so an oversized concatenation never happens); equality and `in` over lists count the
 *   values they compare, `matches()` REGEX_SCAN_FACTOR times its input;
 * - no value built may exceed MAX_VALUE_SIZE characters, bytes, elements or entries, and integers stay in int64.
 *
 * Past the budget the evaluation stops with PolicyEvaluationStopped naming the sub-expression. These are the
 * units of the write-time estimate (policy-cost.ts), so a policy accepted at write time stays within its estimate
 * for inputs within the declared bounds. Only the executor's worker threads load this file; evaluation is
 * synchronous, so one meter per thread serves every program.
 */

/** The library's syntax tree node, as far as the meter and the estimator use it. */
export interface CelNode {
  op: string;
  args: unknown;
  start: number;
  end: number;
  readonly input: string;
  readonly meta: { evaluate: EvaluateFn; alternate?: CelNode; macro?: { evaluate: EvaluateFn } & Record<string, unknown> };
  checkedType?: { name: string; kind: string; type: string };
  handle?: (...args: unknown[]) => unknown;
  evaluate: EvaluateFn;
}
type EvaluateFn = (ev: unknown, ast: unknown, ctx: unknown) => unknown;

/** An evaluation stopped by its budget or the value size cap (a policy error, not a verdict). */
export class PolicyEvaluationStopped extends Error {}

const MAX_INT = 9223372036854775807n;
const MIN_INT = -9223372036854775808n;

/** A snippet of the sub-expression and (unless `withPosition` is false) its position, for messages. */
export function describeNode(node: Pick<CelNode, 'input' | 'start' | 'end'>, withPosition = true): string {
  const source = node.input ?? '';
  const text = source.slice(node.start, node.end).replace(/\s+/g, ' ');
  const before = source.slice(0, node.start).split('\n');
  const snippet = `\`${text.length > 60 ? `${text.slice(0, 57)}...` : text}\``;
  return withPosition ? `${snippet} (line ${before.length}, column ${before[before.length - 1].length + 1})` : snippet;
}

class Meter {
  spent = 0;
  limit = Infinity;

  charge(units: number, node: CelNode): void {
    this.spent += units;
    if (this.spent > this.limit) {
      throw new PolicyEvaluationStopped(`evaluation stopped: the budget of ${this.limit} cost units per evaluation is spent, at ${describeNode(node)}`);
    }
  }
}

const meter = new Meter();

/** Runs `evaluate` under a budget of `limit` units; answers its value and the units spent. */
export function metered<T>(limit: number, evaluate: () => T): { value: T; spent: number } {
  meter.spent = 0;
  meter.limit = limit;
  try {
    const value = evaluate();
    return { value, spent: meter.spent };
  } finally {
    meter.limit = Infinity;
  }
}

/** Characters, bytes, elements or entries of a value (0 for scalars and typed objects). */
export function lengthOf(v: unknown): number {
  if (typeof v === 'string') return v.length;
  if (v === null || typeof v !== 'object') return 0;
  if (Array.isArray(v) || v instanceof Uint8Array) return v.length;
  if (v instanceof Map || v instanceof Set) return v.size;
  if (v.constructor === Object || v.constructor === undefined) return Object.keys(v).length;
  return 0;
}

/** Everything a deep comparison may visit (lengths of all nested values, 1 per scalar); stops past `limit`. */
export function deepSizeOf(v: unknown, limit: number): number {
  let total = 0;
  const stack: unknown[] = [v];
  while (stack.length && total <= limit) {
    const x = stack.pop();
    if (typeof x === 'string') total += x.length || 1;
    else if (x === null || typeof x !== 'object') total += 1;
    else if (Array.isArray(x)) {
      total += x.length || 1;
      for (const e of x) stack.push(e);
    } else if (x instanceof Uint8Array) total += x.length || 1;
    else if (x instanceof Map) {
      total += x.size || 1;
      for (const [k, e] of x) stack.push(k, e);
    } else if (x instanceof Date) total += 1;
    else {
      const keys = Object.keys(x);
      total += keys.length || 1;
      for (const k of keys) stack.push(k, (x as Record<string, unknown>)[k]);
    }
  }
  return total;
}

function capped(size: number, node: CelNode): void {
  if (size > MAX_VALUE_SIZE) {
    throw new PolicyEvaluationStopped(`evaluation stopped: ${describeNode(node)} would build a value of ${size} characters or elements; at most ${MAX_VALUE_SIZE}`);
  }
}

function inInt64(v: unknown, node: CelNode): unknown {
  if (typeof v === 'bigint' && (v > MAX_INT || v < MIN_INT)) throw new PolicyEvaluationStopped(`integer overflow at ${describeNode(node)}`);
  return v;
}

/** The cost of what a built value holds, after the size cap. */
function built(v: unknown, node: CelNode): number {
  const n = lengthOf(v);
  capped(n, node);
  return SIZE_COST * n;
}

const COMPARISONS = new Set(['<', '<=', '>', '>=']);
const ARITHMETIC = new Set(['-', '*', '/', '%']);

/** The metered `handle` of one node, by what the node does; undefined when its handle costs nothing extra. */
function meteredHandle(node: CelNode, handle: (...args: unknown[]) => unknown): ((...args: unknown[]) => unknown) | undefined {
  const op = node.op;
  if (op === '+') {
    return (l, r, ast, ev) => {
      const n = lengthOf(l) + lengthOf(r);
      capped(n, node);
      meter.charge(SIZE_COST * n, node);
      return inInt64(handle(l, r, ast, ev), node);
    };
  }
  if (ARITHMETIC.has(op) || op === '-_') return (...a) => inInt64(handle(...a), node);
  if (op === '==' || op === '!=') {
    return (l, r, ast, ev) => {
      if (typeof l === 'object' && l !== null && typeof r === 'object' && r !== null) {
        const left = deepSizeOf(l, meter.limit);
        meter.charge(SIZE_COST * Math.min(left, deepSizeOf(r, left)), node);
      } else if (typeof l === 'string' && typeof r === 'string') meter.charge(SIZE_COST * Math.min(l.length, r.length), node);
      return handle(l, r, ast, ev);
    };
  }
  if (COMPARISONS.has(op)) {
    return (l, r, ast, ev) => {
      meter.charge(SIZE_COST * Math.min(lengthOf(l), lengthOf(r)), node);
      return handle(l, r, ast, ev);
    };
  }
  if (op === 'in') {
    return (l, r, ast, ev) => {
      meter.charge(SIZE_COST * (Array.isArray(r) || r instanceof Set ? deepSizeOf(r, meter.limit) : lengthOf(l)), node);
      return handle(l, r, ast, ev);
    };
  }
  if (op === 'call' || op === 'rcall') {
    const name = (node.args as unknown[])[0] as string;
    const regex = name === 'matches' || name === 're2Matches';
    const timeZone = isTimeZoneCall(node) ? TIME_ZONE_CALL_COST : 0;
    // call: handle(args, ast, ev); rcall: handle([receiver, ...args], ev, ast).
    return (values, x, y) => {
      const args = values as unknown[];
      let scanned = 0;
      for (const a of args) scanned += lengthOf(a);
      if (regex) scanned += (REGEX_SCAN_FACTOR - 1) * lengthOf(args[0]);
      if (name === 'join' && Array.isArray(args[0])) {
        // The result's length, checked before it is built.
        const list = args[0] as unknown[];
        let n = typeof args[1] === 'string' ? args[1].length * Math.max(0, list.length - 1) : 0;
        for (const s of list) n += lengthOf(s);
        capped(n, node);
      }
      if (name === 'duration' && lengthOf(args[0]) > MAX_DURATION_LENGTH) {
        throw new PolicyEvaluationStopped(`duration() takes a string of at most ${MAX_DURATION_LENGTH} characters, at ${describeNode(node)}`);
      }
      meter.charge(SIZE_COST * scanned + timeZone + (name === 'duration' ? durationCallCost(lengthOf(args[0])) : 0), node);
      const result = handle(values, x, y);
      meter.charge(built(result, node), node);
      return inInt64(result, node);
    };
  }
  if (op === 'comprehension') {
    // handle(iterable, args, ev, ctx): iterating a map lists its keys first.
    return (iterable, ...rest) => {
      if (!Array.isArray(iterable)) meter.charge(SIZE_COST * lengthOf(iterable), node);
      const result = handle(iterable, ...rest);
      if (Array.isArray(result)) meter.charge(built(result, node), node);
      return result;
    };
  }
  return undefined;
}

/** `ts.getHours('Europe/Berlin')` and the other timestamp accessors given a time zone. */
export function isTimeZoneCall(node: Pick<CelNode, 'op' | 'args'>): boolean {
  if (node.op !== 'rcall') return false;
  const [name, , args] = node.args as [string, unknown, unknown[]];
  return /^get[A-Z]/.test(name) && args.length === 1;
}

const isNode = (v: unknown): v is CelNode => typeof v === 'object' && v !== null && typeof (v as CelNode).op === 'string' && 'meta' in (v as object);

/** Every node of a checked program: its own tree, the trees its macros expand to, and their arguments. */
export function programNodes(root: CelNode): CelNode[] {
  const seen = new Set<CelNode>();
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(visit);
    if (!isNode(v) || seen.has(v)) return;
    seen.add(v);
    if (v.op === 'comprehension') {
      // {iterable, init, step, iterVarName, ...}: the nodes among the comprehension's arguments.
      const c = v.args as Record<string, unknown>;
      [c.iterable, c.init, c.step].forEach(visit);
    } else visit(v.args);
    visit(v.meta.alternate);
    const macro = v.meta.macro as Record<string, unknown> | undefined;
    if (macro) for (const key of ['args', 'val', 'exp', 'macroHasProps']) visit(macro[key]);
  };
  visit(root);
  return [...seen];
}

/**
 * Meters a parsed and type-checked program (its handles are attached by the check): each node's evaluation is
 * counted, and its operator or function call charged and capped. Call once per program.
 */
export function instrument(root: CelNode): void {
  for (const node of programNodes(root)) {
    const handle = node.handle;
    if (typeof handle === 'function') {
      const wrapped = meteredHandle(node, handle);
      if (wrapped) node.handle = wrapped;
    }
    const meta = node.meta;
    const inner: EvaluateFn = meta.alternate
      ? (ev, _ast, ctx) => meta.alternate!.evaluate(ev, meta.alternate, ctx)
      : meta.macro
        ? (ev, _ast, ctx) => meta.macro!.evaluate(ev, meta.macro, ctx)
        : meta.evaluate;
    const literal = node.op === 'list' || node.op === 'map';
    node.evaluate = function evaluate(this: CelNode, ev, ast, ctx) {
      meter.charge(1, node);
      const value = inner.call(this, ev, ast, ctx);
      if (literal) meter.charge(built(value, node), node);
      return value;
    };
  }
}
