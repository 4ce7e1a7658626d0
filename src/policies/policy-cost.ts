import {
  INPUT_COLLECTION_SIZE,
  INPUT_STRING_LENGTH,
  MAX_COMPREHENSION_NESTING,
  MAX_ESTIMATED_COST,
  MAX_VALUE_SIZE,
  REGEX_SCAN_FACTOR,
  durationCallCost,
  SIZE_COST,
  TIME_ZONE_CALL_COST,
} from './policy-limits';
import type { CelNode } from './policy-meter';
import { describeNode, isTimeZoneCall } from './policy-meter';
import type { FieldShape, PolicyVariableSchema } from './policy-schema';

/**
 * The write-time cost estimate of a policy expression, size-aware in the way of cel-go's estimator (which
 * Kubernetes uses for ValidatingAdmissionPolicy and CRD validation rules): every sub-expression gets an upper bound
 * on the size of its value (characters of a string, bytes, elements of a list, entries of a map, with the size of
 * their elements) and on its cost, in the units the run-time meter charges (policy-meter.ts).
 *
 * - Inputs have the bounds of their writes (policy-limits.ts: strings 4,096 characters unless their metadata says
 *   less, lists and maps 100 entries).
 * - `+` adds sizes; `map` keeps the list's length with the transform's size per element, `filter` keeps the
 *   list; a comprehension's cost is its body's times the iterations, so nested ones multiply; `join`, `split`,
 *   case changes, `bytes`/`hex`/`base64` grow by their rule; `cel.bind` binds the value's size to its name;
 *   a ternary takes the larger branch.
 * - Each operation costs one unit per node plus SIZE_COST per character, element or entry it scans or builds.
 *
 * The result names the first sub-expression whose value may exceed MAX_VALUE_SIZE, and the cost with the
 * sub-expression that makes most of it.
 */

/** Upper bounds of a value. */
export interface Size {
  /** Characters of a string, bytes, elements of a list, entries of a map; fields of an object; 1 for a scalar. */
  n: number;
  /** Elements of a list, values of a map. */
  item?: Size;
  /** Keys of a map. */
  key?: Size;
  /** All characters and elements within, when tighter than the product of the parts (the parts of a split). */
  total?: number;
  /** The object type of an input object, for its fields. */
  object?: string;
}

export interface Estimate {
  cost: number;
  size: Size;
}

const SCALAR: Size = { n: 1 };
const INPUT_STRING: Size = { n: INPUT_STRING_LENGTH };
/** A value of unknown type from the inputs: a string, or a collection of strings. */
const INPUT_DYN: Size = { n: INPUT_STRING_LENGTH, item: INPUT_STRING, key: INPUT_STRING };
const HUGE = 1e18;
/** Extra units of one comprehension iteration: the nodes the library's macro expansion evaluates around the body. */
const ITERATION_OVERHEAD = 3;
const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

const scan = (n: number) => SIZE_COST * n;
const add = (...xs: number[]) => Math.min(HUGE, xs.reduce((a, b) => a + b, 0));

/** The larger of two bounds, part by part. */
function larger(a: Size, b: Size): Size {
  if (a === b) return a;
  const out: Size = { n: Math.max(a.n, b.n) };
  if (a.item || b.item) out.item = a.item && b.item ? larger(a.item, b.item) : (a.item ?? b.item);
  if (a.key || b.key) out.key = a.key && b.key ? larger(a.key, b.key) : (a.key ?? b.key);
  if (a.total !== undefined && b.total !== undefined) out.total = Math.max(a.total, b.total);
  if (a.object && a.object === b.object) out.object = a.object;
  return out;
}

export interface CostReport {
  cost: number;
  /** Problems, each at a node: a value that may be too large, comprehensions nested too deep. */
  problems: { node: CelNode; message: string }[];
  /** When the cost is over the limit: the sub-expression that makes most of it, with its cost. */
  costliest?: { node: CelNode; cost: number };
}

export class CostEstimator {
  private readonly objectDeep = new Map<string, number>();

  constructor(private readonly schema: PolicyVariableSchema) {}

  /** The estimate of a checked expression's tree (`checkedType` on its nodes). */
  estimate(root: CelNode): CostReport {
    const walk = new Walk(this);
    const { cost } = walk.node(root, new Map(), 0);
    const report: CostReport = { cost: Math.ceil(cost), problems: walk.problems };
    if (report.cost > MAX_ESTIMATED_COST) report.costliest = walk.costliest(root);
    return report;
  }

  /** The bounds of an input field. */
  input(shape: FieldShape): Size {
    switch (shape.kind) {
      case 'string':
        return shape.max !== undefined ? { n: shape.max } : INPUT_STRING;
      case 'bool':
      case 'int':
      case 'double':
        return SCALAR;
      case 'stringMap':
        return { n: INPUT_COLLECTION_SIZE, key: INPUT_STRING, item: INPUT_STRING };
      case 'dynMap':
        return { n: INPUT_COLLECTION_SIZE, key: INPUT_STRING, item: INPUT_DYN };
      case 'list':
        return { n: INPUT_COLLECTION_SIZE, item: this.input(shape.element) };
      case 'object':
        return { n: Object.keys(this.schema.objects[shape.type]?.fields ?? {}).length, object: shape.type };
      default:
        return INPUT_DYN;
    }
  }

  variable(name: string): Size | undefined {
    const v = this.schema.variables;
    const type = name === 'object' || name === 'oldObject' ? v.object : (v as Record<string, string>)[name];
    return type ? this.input({ kind: 'object', type }) : undefined;
  }

  field(of: Size, name: string | undefined): Size {
    if (of.object) {
      const f = name === undefined ? undefined : this.schema.objects[of.object]?.fields[name];
      return f ? this.input(f.shape) : INPUT_DYN;
    }
    return of.item ?? INPUT_DYN;
  }

  /** Everything a deep comparison of such a value may visit. */
  deep(s: Size, depth = 0): number {
    if (depth > 6) return s.n;
    if (s.object) {
      let known = this.objectDeep.get(s.object);
      if (known === undefined) {
        this.objectDeep.set(s.object, HUGE); // a type that contains itself
        const fields = Object.values(this.schema.objects[s.object]?.fields ?? {});
        known = add(s.n, ...fields.map((f) => this.deep(this.input(f.shape), depth + 1)));
        this.objectDeep.set(s.object, known);
      }
      return known;
    }
    let d = s.n;
    if (s.item) d = add(d, s.n * this.deep(s.item, depth + 1));
    if (s.key) d = add(d, s.n * this.deep(s.key, depth + 1));
    return s.total !== undefined ? Math.min(d, s.total) : d;
  }
}

type Scope = Map<string, Size>;

class Walk {
  readonly problems: CostReport['problems'] = [];
  private readonly costs = new Map<CelNode, { cost: number; parts: CelNode[] }>();

  constructor(private readonly est: CostEstimator) {}

  /** The sub-expression that makes most of the cost: descend while one part alone is over the limit. */
  costliest(root: CelNode): { node: CelNode; cost: number } {
    let at = root;
    for (;;) {
      const parts = this.costs.get(at)?.parts ?? [];
      const top = parts.reduce<CelNode | undefined>((best, p) => (!best || this.costOf(p) > this.costOf(best) ? p : best), undefined);
      if (!top || this.costOf(top) <= MAX_ESTIMATED_COST) {
        // Nothing alone is over the limit: name the largest part of this node when it has several.
        return at === root && top ? { node: top, cost: Math.ceil(this.costOf(top)) } : { node: at, cost: Math.ceil(this.costOf(at)) };
      }
      at = top;
    }
  }

  private costOf(n: CelNode): number {
    return this.costs.get(n)?.cost ?? 0;
  }

  node(n: CelNode, scope: Scope, nesting: number): Estimate {
    const parts: CelNode[] = [];
    const sub = (c: CelNode, s: Scope = scope, depth = nesting) => {
      parts.push(c);
      return this.node(c, s, depth);
    };
    const e = this.compute(n, scope, nesting, sub);
    this.costs.set(n, { cost: e.cost, parts });
    if (e.size.n > MAX_VALUE_SIZE && !this.problems.some((p) => p.message.includes('may build'))) {
      this.problems.push({
        node: n,
        message: `${describeNode(n, false)} may build a value of ${Math.ceil(e.size.n) >= HUGE ? 'unbounded size' : `${Math.ceil(e.size.n)} characters or elements`} (estimated cost ${Math.ceil(e.cost)}); at most ${MAX_VALUE_SIZE}`,
      });
    }
    return e;
  }

  private compute(n: CelNode, scope: Scope, nesting: number, sub: (c: CelNode, s?: Scope, depth?: number) => Estimate): Estimate {
    const args = n.args as unknown[];
    switch (n.op) {
      case 'value':
        return { cost: 1, size: typeof n.args === 'string' || n.args instanceof Uint8Array ? { n: (n.args as string).length } : SCALAR };
      case 'id':
        return { cost: 1, size: scope.get(n.args as string) ?? this.est.variable(n.args as string) ?? INPUT_DYN };
      case '.':
      case '.?': {
        const left = sub(args[0] as CelNode);
        return { cost: 1 + left.cost, size: this.est.field(left.size, args[1] as string) };
      }
      case '[]':
      case '[?]': {
        const left = sub(args[0] as CelNode);
        const index = args[1] as CelNode;
        const key = sub(index);
        const name = index.op === 'value' && typeof index.args === 'string' ? index.args : undefined;
        return { cost: 1 + left.cost + key.cost, size: left.size.object ? this.est.field(left.size, name) : (left.size.item ?? INPUT_DYN) };
      }
      case '+': {
        const [l, r] = [sub(args[0] as CelNode), sub(args[1] as CelNode)];
        const type = n.checkedType?.name ?? 'dyn';
        if (type === 'int' || type === 'uint' || type === 'double') return { cost: 1 + l.cost + r.cost, size: SCALAR };
        const size: Size = { n: l.size.n + r.size.n };
        const item = l.size.item && r.size.item ? larger(l.size.item, r.size.item) : (l.size.item ?? r.size.item);
        if (item) size.item = item;
        return { cost: add(1, l.cost, r.cost, scan(size.n)), size };
      }
      case '==':
      case '!=': {
        const [l, r] = [sub(args[0] as CelNode), sub(args[1] as CelNode)];
        return { cost: add(1, l.cost, r.cost, scan(Math.min(this.est.deep(l.size), this.est.deep(r.size)))), size: SCALAR };
      }
      case '<':
      case '<=':
      case '>':
      case '>=': {
        const [l, r] = [sub(args[0] as CelNode), sub(args[1] as CelNode)];
        return { cost: add(1, l.cost, r.cost, scan(Math.min(l.size.n, r.size.n))), size: SCALAR };
      }
      case 'in': {
        const [l, r] = [sub(args[0] as CelNode), sub(args[1] as CelNode)];
        const isMap = r.size.key !== undefined && !(n.args as CelNode[])[1].checkedType?.name.startsWith('list');
        return { cost: add(1, l.cost, r.cost, scan(isMap ? l.size.n : this.est.deep(r.size))), size: SCALAR };
      }
      case '-':
      case '*':
      case '/':
      case '%':
      case '&&':
      case '||': {
        const [l, r] = [sub(args[0] as CelNode), sub(args[1] as CelNode)];
        return { cost: 1 + l.cost + r.cost, size: SCALAR };
      }
      case '!_':
      case '-_':
        return { cost: 1 + sub(n.args as CelNode).cost, size: SCALAR };
      case '?:': {
        const [c, a, b] = (args as CelNode[]).map((x) => sub(x));
        return { cost: add(1, c.cost, Math.max(a.cost, b.cost)), size: larger(a.size, b.size) };
      }
      case 'list': {
        const items = (args as CelNode[]).map((x) => sub(x));
        const size: Size = { n: items.length };
        if (items.length) size.item = items.map((i) => i.size).reduce(larger);
        return { cost: add(1, scan(items.length), ...items.map((i) => i.cost)), size };
      }
      case 'map': {
        const entries = (args as [CelNode, CelNode][]).map(([k, v]) => [sub(k), sub(v)]);
        const size: Size = { n: entries.length };
        if (entries.length) {
          size.key = entries.map((e) => e[0].size).reduce(larger);
          size.item = entries.map((e) => e[1].size).reduce(larger);
        }
        return { cost: add(1, scan(entries.length), ...entries.flat().map((e) => e.cost)), size };
      }
      case 'call':
        return this.call(n, args[0] as string, null, args[1] as CelNode[], scope, nesting, sub);
      case 'rcall':
        return this.call(n, args[0] as string, args[1] as CelNode, args[2] as CelNode[], scope, nesting, sub);
      default:
        return { cost: HUGE, size: { n: HUGE } };
    }
  }

  private call(
    n: CelNode,
    name: string,
    receiverNode: CelNode | null,
    argNodes: CelNode[],
    scope: Scope,
    nesting: number,
    sub: (c: CelNode, s?: Scope, depth?: number) => Estimate,
  ): Estimate {
    const iterVar = argNodes[0]?.op === 'id' ? (argNodes[0].args as string) : undefined;
    if (receiverNode && COMPREHENSIONS.has(name) && iterVar && argNodes.length >= 2) {
      const receiver = sub(receiverNode);
      if (nesting + 1 > MAX_COMPREHENSION_NESTING) {
        this.problems.push({ node: n, message: `comprehensions (${name}) may be nested at most ${MAX_COMPREHENSION_NESTING} deep` });
        return { cost: 0, size: SCALAR };
      }
      const isMap = receiver.size.key !== undefined && !receiverNode.checkedType?.name.startsWith('list');
      const element = (isMap ? receiver.size.key : receiver.size.item) ?? INPUT_DYN;
      const inner = new Map(scope).set(iterVar, element);
      const body = argNodes.slice(1).map((a) => sub(a, inner, nesting + 1));
      const iterations = receiver.size.n;
      const perIteration = add(ITERATION_OVERHEAD, ...body.map((b) => b.cost));
      let size: Size = SCALAR;
      let building = 0;
      if (name === 'map') {
        size = { n: iterations, item: body[body.length - 1].size };
        building = scan(iterations);
      } else if (name === 'filter') {
        size = { n: iterations, item: element };
        building = scan(iterations);
      }
      return { cost: add(3, receiver.cost, iterations * perIteration, isMap ? scan(iterations) : 0, building), size };
    }
    if (receiverNode?.op === 'id' && receiverNode.args === 'cel' && name === 'bind' && iterVar && argNodes.length === 3) {
      const init = sub(argNodes[1]);
      const body = sub(argNodes[2], new Map(scope).set(iterVar, init.size));
      return { cost: add(1, init.cost, body.cost), size: body.size };
    }
    const receiver = receiverNode ? sub(receiverNode) : null;
    const args = argNodes.map((a) => sub(a));
    const all = receiver ? [receiver, ...args] : args;
    // has() reads fields without evaluating them as values.
    if (name === 'has' && !receiver) return { cost: add(1, ...all.map((a) => a.cost)), size: SCALAR };
    const first = all[0]?.size ?? SCALAR;
    const out = this.result(n, name, all);
    const scanned = all.reduce((t, a) => t + a.size.n, 0) + (name === 'matches' || name === 're2Matches' ? (REGEX_SCAN_FACTOR - 1) * first.n : 0);
    const zone = (isTimeZoneCall(n) ? TIME_ZONE_CALL_COST : 0) + (name === 'duration' ? durationCallCost(first.n) : 0);
    return { cost: add(1, zone, ...all.map((a) => a.cost), scan(scanned), scan(out === SCALAR ? 0 : out.n)), size: out };
  }

  /** The bound of a function's value from its arguments' (receiver first). */
  private result(n: CelNode, name: string, all: Estimate[]): Size {
    const [a, b] = all.map((x) => x.size);
    switch (name) {
      case 'lowerAscii':
      case 'upperAscii':
        // JavaScript's case mapping can turn one character into up to three ('ﬃ' -> 'FFI').
        return { n: 3 * a.n };
      case 'trim':
      case 'substring':
        return { n: a.n };
      case 'split':
        return { n: a.n + 1, item: { n: a.n }, total: 2 * a.n + 1 };
      case 'join': {
        const chars = Math.min(a.total ?? HUGE, a.n * (a.item?.n ?? INPUT_STRING_LENGTH));
        return { n: add(chars, (b?.n ?? 0) * Math.max(0, a.n - 1)) };
      }
      case 'bytes':
        return { n: 3 * a.n };
      case 'hex':
        return { n: 2 * a.n };
      case 'base64':
        return { n: Math.ceil(a.n / 3) * 4 };
      case 'json':
        return { n: a.n, item: { n: a.n }, key: { n: a.n }, total: a.n };
      case 'dyn':
        return a;
      case 'string': {
        const type = (n.op === 'call' ? ((n.args as unknown[])[1] as CelNode[])[0] : ((n.args as unknown[])[1] as CelNode))?.checkedType?.name;
        return type === 'string' || type === 'bytes' || type === 'dyn' || !type ? { n: Math.max(a?.n ?? 0, 32) } : { n: 32 };
      }
      default: {
        const type = n.checkedType?.name ?? 'dyn';
        if (['bool', 'int', 'uint', 'double', 'type', 'null_type', 'google.protobuf.Timestamp', 'google.protobuf.Duration'].includes(type)) return SCALAR;
        // A function this estimate does not know: as large as everything given to it.
        return { n: add(64, ...all.map((x) => this.est.deep(x.size))), item: INPUT_DYN };
      }
    }
  }
}
