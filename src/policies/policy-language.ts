import { Environment } from '@marcbachmann/cel-js';
import { RE2JS } from 're2js';
import * as semver from 'semver';
import type { FieldErrorDto } from '../common/errors';
import { celTypeName, PolicyVariableShapes, policyVariableShapes, toCelValue, type PolicyInput } from './policy-variables';

/**
 * CEL for cluster policies (docs/policies.md): the write-time check (syntax, types against the declared
 * variables, a static cost bound, safe regular expressions) and the compiled evaluation.
 *
 * Two environments share the variable types: the checking one declares `oldObject` with the cluster type
 * (plus `Cluster == null`), so `oldObject.verison` is a type error at write time; the evaluating one declares it
 * `dyn`, because the library refuses a null value for a variable of an object type (and `oldObject` is null on
 * CREATE).
 *
 * `matches()` runs on RE2 (`re2js`), as the CEL specification defines it: the library's own overload uses
 * JavaScript's backtracking `RegExp` and cannot be replaced, so compiled programs call `re2Matches` instead (the
 * evaluating environment's only extra function; see `useRe2`). Matching is linear in the input's length whatever
 * the pattern, so the static cost bound holds for `matches()` too.
 */

/** Longest expression or message expression accepted. */
export const MAX_EXPRESSION_LENGTH = 2048;
/** Parser limits: nodes of the syntax tree, nesting, literal sizes, call arguments. */
export const MAX_AST_NODES = 400;
const PARSER_LIMITS = { maxAstNodes: MAX_AST_NODES, maxDepth: 32, maxListElements: 100, maxMapEntries: 100, maxCallArguments: 8 };
/** Iterations assumed for each comprehension (all, exists, exists_one, map, filter): the largest bounded input list or map. */
export const ASSUMED_COLLECTION_SIZE = 100;
/** Comprehensions nested deeper than this are refused. */
export const MAX_COMPREHENSION_NESTING = 2;
/** The static cost bound of one expression, in units of one AST node evaluation. */
export const MAX_ESTIMATED_COST = 100_000;
/** Cost units of one string function call (scan of an input string of up to 4096 characters). */
const STRING_FUNCTION_COST = 41;
const STRING_FUNCTIONS = new Set([
  'contains', 'startsWith', 'endsWith', 'matches', 'split', 'join', 'lowerAscii', 'upperAscii', 'replace', 'indexOf', 'lastIndexOf', 'substring', 'trim',
]);
const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);
export const MAX_PATTERN_LENGTH = 256;

interface AstNode {
  op: string;
  args: unknown;
  start: number;
  end: number;
}

/** A CEL error at a position of the source: `line L, column C` (1-based) in the message. */
export function positionOf(source: string, offset: number): { line: number; column: number } {
  const before = source.slice(0, Math.max(0, Math.min(offset, source.length)));
  const lines = before.split('\n');
  return { line: lines.length, column: lines[lines.length - 1].length + 1 };
}

function at(field: string, source: string, offset: number, message: string): FieldErrorDto {
  const { line, column } = positionOf(source, offset);
  return { field, message: `${field}: line ${line}, column ${column}: ${message}` };
}

function buildEnvironment(shapes: PolicyVariableShapes, typedOldObject: boolean): Environment {
  const env = new Environment({ limits: PARSER_LIMITS });
  for (const shape of shapes.registry.objects.values()) {
    const fields: Record<string, string> = {};
    for (const [k, f] of Object.entries(shape.fields)) fields[k] = celTypeName(f.shape, f.nullable);
    env.registerType(shape.name, { ctor: shape.ctor, fields });
  }
  env
    .registerVariable('object', shapes.cluster.name)
    .registerVariable('oldObject', typedOldObject ? shapes.cluster.name : 'dyn')
    .registerVariable('environment', shapes.environment.name)
    .registerVariable('organisation', shapes.organisation.name)
    .registerVariable('request', shapes.request.name)
    // Versions compare as versions ("1.9.0" < "1.10.0"), not as strings.
    .registerFunction('semverCompare(string, string): int', (a: string, b: string) => {
      const x = semver.valid(a);
      const y = semver.valid(b);
      if (!x || !y) throw new Error(`semverCompare: '${x ? b : a}' is not a version`);
      return BigInt(semver.compare(x, y));
    });
  if (typedOldObject) env.registerOperator(`${shapes.cluster.name} == null`, (a: unknown) => a === null);
  else env.registerFunction(`string.${RE2_MATCHES}(string): bool`, (input: string, pattern: string) => re2(pattern).test(input));
  return env;
}

/** The evaluating environment's name for `matches()` on RE2. */
const RE2_MATCHES = 're2Matches';
const MAX_COMPILED_PATTERNS = 1000;
const compiledPatterns = new Map<string, RE2JS>();

/** A compiled RE2 pattern (CEL's `matches` finds the pattern anywhere in the input: unanchored). */
function re2(pattern: string): RE2JS {
  let re = compiledPatterns.get(pattern);
  if (!re) {
    re = RE2JS.compile(pattern);
    if (compiledPatterns.size >= MAX_COMPILED_PATTERNS) compiledPatterns.delete(compiledPatterns.keys().next().value!);
    compiledPatterns.set(pattern, re);
  }
  return re;
}

/**
 * Points every `x.matches(p)` of a parsed program at the RE2 overload. The write-time check accepted the source
 * with the standard `matches`, so the two calls have the same types; the tree is the program's own (parsed for it).
 */
function useRe2(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(useRe2);
  if (!node || typeof node !== 'object' || !('op' in node)) return;
  const n = node as AstNode;
  if (n.op === 'rcall' && Array.isArray(n.args) && n.args[0] === 'matches') n.args[0] = RE2_MATCHES;
  useRe2(n.args);
}

export type CompiledPolicyExpression = (input: PolicyInput) => unknown;

/** The policy language, one instance per process (types are built once). */
export class PolicyLanguage {
  private readonly shapes = policyVariableShapes();
  private readonly checking = buildEnvironment(this.shapes, true);
  private readonly evaluating = buildEnvironment(this.shapes, false);

  /**
   * Write-time check of an expression: syntax, types (`resultTypes` it may have), cost, regular expressions.
   * Answers the errors, each naming the field and the position (empty when valid).
   */
  check(field: string, source: string, resultTypes: string[]): FieldErrorDto[] {
    if (source.length > MAX_EXPRESSION_LENGTH) return [{ field, message: `${field} must be at most ${MAX_EXPRESSION_LENGTH} characters` }];
    let ast: AstNode;
    try {
      ast = this.checking.parse(source).ast as unknown as AstNode;
    } catch (err) {
      return [this.libraryError(field, source, err)];
    }
    const result = this.checking.check(source);
    if (!result.valid) return [this.libraryError(field, source, result.error)];
    if (!resultTypes.includes(String(result.type))) {
      return [at(field, source, 0, `the expression evaluates to ${result.type}; it must evaluate to ${resultTypes.filter((t) => t !== 'dyn').join(' or ')}`)];
    }
    const errors: FieldErrorDto[] = [];
    const cost = this.estimate(field, source, ast, 0, errors);
    if (!errors.length && cost > MAX_ESTIMATED_COST) {
      errors.push(
        at(field, source, 0, `estimated cost ${cost} exceeds the limit ${MAX_ESTIMATED_COST} (each comprehension counts ${ASSUMED_COLLECTION_SIZE} iterations); simplify the expression`),
      );
    }
    return errors;
  }

  /** The evaluation function of a checked expression (variables converted to their CEL types on each call). */
  compile(source: string): CompiledPolicyExpression {
    const program = this.evaluating.parse(source);
    useRe2(program.ast);
    const { cluster, environment, organisation, request } = this.shapes;
    // Only the cluster fields the expression reads are converted (the others stay unset: it never reads them).
    const fields = this.objectFields([source]);
    const obj = { kind: 'object' as const, type: cluster };
    const convert = (v: PolicyInput['object'] | null) => toCelValue(obj, v, fields);
    return (input) => {
      const object = convert(input.object);
      return program({
        object,
        oldObject: input.oldObject === input.object ? object : convert(input.oldObject),
        environment: toCelValue({ kind: 'object', type: environment }, input.environment),
        organisation: toCelValue({ kind: 'object', type: organisation }, input.organisation),
        request: toCelValue({ kind: 'object', type: request }, input.request),
      });
    };
  }

  /**
   * The projection of `object`/`oldObject` these expressions read: the top-level fields named after them
   * (`object.region`, `oldObject['version']`), or null when one reads the cluster whole (passes it on, compares
   * it, a comprehension variable of that name) and every field is needed.
   */
  objectFields(sources: string[]): Set<string> | null {
    const fields = new Set<string>();
    const walk = (node: unknown, parent: AstNode | null): boolean => {
      if (Array.isArray(node)) return node.every((n) => walk(n, parent));
      if (!node || typeof node !== 'object' || !('op' in node)) return true;
      const n = node as AstNode;
      if (n.op === 'id' && (n.args === 'object' || n.args === 'oldObject')) {
        if (parent?.op === '.' && (parent.args as unknown[])[0] === n) {
          fields.add(String((parent.args as unknown[])[1]));
          return true;
        }
        // `object == null` (oldObject on CREATE) reads no field.
        const pair = parent && (parent.op === '==' || parent.op === '!=') ? (parent.args as AstNode[]) : null;
        if (pair?.some((a) => a !== n && a?.op === 'value' && a.args === null)) return true;
        const key = parent?.op === '[]' && (parent.args as unknown[])[0] === n ? ((parent.args as unknown[])[1] as AstNode) : null;
        if (key?.op === 'value' && typeof key.args === 'string') {
          fields.add(key.args);
          return true;
        }
        return false;
      }
      return walk(n.args, n);
    };
    for (const source of sources) if (!walk(this.evaluating.parse(source).ast, null)) return null;
    return fields;
  }

  /** The declared variables and their CEL types, for the documentation. */
  definitions(): { name: string; type: string }[] {
    return this.checking.getDefinitions().variables.map((v) => ({ name: v.name, type: String(v.type) }));
  }

  private libraryError(field: string, source: string, err: unknown): FieldErrorDto {
    const e = err as { range?: { start: number }; summary?: string; message?: string };
    const summary = e.summary ?? String(e.message ?? err).split('\n')[0];
    return at(field, source, e.range?.start ?? 0, summary);
  }

  /** Static worst-case cost: one unit per node, comprehensions times ASSUMED_COLLECTION_SIZE, string scans extra. */
  private estimate(field: string, source: string, node: AstNode, nesting: number, errors: FieldErrorDto[]): number {
    const children = (v: unknown): AstNode[] =>
      Array.isArray(v) ? v.flatMap(children) : v && typeof v === 'object' && 'op' in v ? [v as AstNode] : [];
    const sum = (nodes: AstNode[], depth: number) => nodes.reduce((n, c) => n + this.estimate(field, source, c, depth, errors), 0);
    if (node.op === 'rcall') {
      const [name, receiver, args] = node.args as [string, AstNode, unknown[]];
      if (COMPREHENSIONS.has(name) && Array.isArray(args) && (args[0] as AstNode | undefined)?.op === 'id') {
        if (nesting + 1 > MAX_COMPREHENSION_NESTING) {
          errors.push(at(field, source, node.start, `comprehensions (${name}) may be nested at most ${MAX_COMPREHENSION_NESTING} deep`));
          return 0;
        }
        const body = sum(children(args.slice(1)), nesting + 1);
        return 1 + this.estimate(field, source, receiver, nesting, errors) + ASSUMED_COLLECTION_SIZE * (1 + body);
      }
      if (name === 'matches') this.checkPattern(field, source, children(args)[0], errors);
      return 1 + (STRING_FUNCTIONS.has(name) ? STRING_FUNCTION_COST : 0) + this.estimate(field, source, receiver, nesting, errors) + sum(children(args), nesting);
    }
    if (node.op === 'call') {
      const [name, args] = node.args as [string, unknown[]];
      if (name === 'matches') this.checkPattern(field, source, children(args)[1], errors);
      return 1 + (STRING_FUNCTIONS.has(name) ? STRING_FUNCTION_COST : 0) + sum(children(args), nesting);
    }
    return 1 + sum(children(node.args), nesting);
  }

  private checkPattern(field: string, source: string, pattern: AstNode | undefined, errors: FieldErrorDto[]): void {
    const problem = patternProblem(pattern);
    if (problem) errors.push(at(field, source, pattern?.start ?? 0, problem));
  }
}

/**
 * Why a `matches` pattern is refused, or null: only string literals (so the pattern is checked here, once),
 * at most MAX_PATTERN_LENGTH characters, in RE2 syntax (CEL's; no lookaround, no backreferences).
 */
function patternProblem(pattern: AstNode | undefined): string | null {
  if (!pattern || pattern.op !== 'value' || typeof pattern.args !== 'string') return 'matches() takes a string literal as its pattern';
  return regexProblem(pattern.args);
}

export function regexProblem(p: string): string | null {
  if (p.length > MAX_PATTERN_LENGTH) return `the pattern is longer than ${MAX_PATTERN_LENGTH} characters`;
  try {
    RE2JS.compile(p);
  } catch (err) {
    return `the pattern /${p}/ is not a valid RE2 regular expression: ${String((err as Error).message).replace(/^error parsing regexp: /, '')}`;
  }
  return null;
}
