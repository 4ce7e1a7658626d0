import { Environment } from '@marcbachmann/cel-js';
import { RE2JS } from 're2js';
import * as semver from 'semver';
import type { FieldErrorDto } from '../common/errors';
import { CostEstimator } from './policy-cost';
import { DEFAULT_RUNTIME_COST_LIMIT, MAX_ESTIMATED_COST, MAX_EXPRESSION_LENGTH, MAX_PATTERN_LENGTH, PARSER_LIMITS } from './policy-limits';
import { CelNode, describeNode, instrument, metered, PolicyEvaluationStopped } from './policy-meter';
import { celTypeName, FieldShape, PolicyVariableSchema } from './policy-schema';
import type { PolicyInput } from './policy-variables';

/**
 * CEL for cluster policies (docs/policies.md): the write-time check (syntax, types against the declared variables,
 * the size-aware cost estimate, RE2 patterns), the metered evaluation and the projection of what an expression
 * reads. Only the executor's worker threads load this file (src/policies/policy-tasks.ts): everything here
 * parses or runs a user's program.
 *
 * Two environments share the variable types: the checking one declares `oldObject` with the cluster type (plus
 * `Cluster == null`), so `oldObject.verison` is a type error at write time; the evaluating one declares it `dyn`,
 * because the library refuses a null value for a variable of an object type (and `oldObject` is null on CREATE).
 *
 * `matches()` runs on RE2 (`re2js`), as the CEL specification defines it: the library's own overload uses
 * JavaScript's backtracking `RegExp` and cannot be replaced, so compiled programs call `re2Matches` instead (the
 * evaluating environment's only extra function; see `useRe2`). Matching is linear in the input's length whatever
 * the pattern.
 */

/** What an evaluation needs of a policy: plain data (it comes from the main thread). */
export interface PolicySource {
  expression: string;
  message: string;
  messageExpression: string | null;
}

/** One policy on one input: passed, or failed with the message to show; `error` when it could not be evaluated. */
export interface PolicyResult {
  passed: boolean;
  message: string | null;
  /** Why the expression could not be evaluated (an error, its budget spent, not a bool); null when it was. */
  error: string | null;
}

/** A compiled program on one input: its value, or throws (PolicyEvaluationStopped past its budget, under `metered`). */
export type CompiledPolicyExpression = (input: PolicyInput) => unknown;

type CelVariables = Record<'object' | 'oldObject' | 'environment' | 'organisation' | 'request', unknown>;

interface Program {
  /** The cluster fields it reads (null: all). */
  fields: string[] | null;
  run(vars: CelVariables): unknown;
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

/** The classes of the declared object types (CEL values of an object type are instances of its class). */
type Constructors = Map<string, new (v: Record<string, unknown>) => object>;

function buildEnvironment(schema: PolicyVariableSchema, ctors: Constructors, typedOldObject: boolean): Environment {
  const env = new Environment({ limits: PARSER_LIMITS });
  for (const shape of Object.values(schema.objects)) {
    const fields: Record<string, string> = {};
    for (const [k, f] of Object.entries(shape.fields)) fields[k] = celTypeName(f.shape, f.nullable);
    env.registerType(shape.name, { ctor: ctors.get(shape.name)!, fields });
  }
  const v = schema.variables;
  env
    .registerVariable('object', v.object)
    .registerVariable('oldObject', typedOldObject ? v.object : 'dyn')
    .registerVariable('environment', v.environment)
    .registerVariable('organisation', v.organisation)
    .registerVariable('request', v.request)
    // Versions compare as versions ("1.9.0" < "1.10.0"), not as strings.
    .registerFunction(
      'semverCompare(string, string): int',
      (a: string, b: string) => {
        const x = semver.valid(a);
        const y = semver.valid(b);
        if (!x || !y) throw new Error(`semverCompare: '${(x ? b : a).slice(0, 100)}' is not a version`);
        return BigInt(semver.compare(x, y));
      },
      { async: false },
    );
  if (typedOldObject) env.registerOperator(`${v.object} == null`, (a: unknown) => a === null);
  else env.registerFunction(`string.${RE2_MATCHES}(string): bool`, (input: string, pattern: string) => re2(pattern).test(input), { async: false });
  return env;
}

/**
 * Points every `x.matches(p)` of a parsed program at the RE2 overload. The write-time check accepted the source
 * with the standard `matches`, so the two calls have the same types; the tree is the program's own (parsed for it).
 */
function useRe2(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(useRe2);
  if (!node || typeof node !== 'object' || !('op' in node)) return;
  const n = node as CelNode;
  if (n.op === 'rcall' && Array.isArray(n.args) && n.args[0] === 'matches') n.args[0] = RE2_MATCHES;
  useRe2(n.args);
}

/** Compiled programs kept per worker thread, per expression text (the oldest is dropped first). */
const MAX_COMPILED = 500;

export interface PolicyLanguageOptions {
  /** The run-time budget of one evaluation, in cost units (POLICY_RUNTIME_COST_LIMIT). */
  runtimeCostLimit?: number;
}

/** The policy language, one instance per worker thread (types are declared once). */
export class PolicyLanguage {
  private readonly ctors: Constructors;
  private readonly checking: Environment;
  private readonly evaluating: Environment;
  private readonly estimator: CostEstimator;
  private readonly compiled = new Map<string, Program>();
  readonly runtimeCostLimit: number;

  constructor(
    private readonly schema: PolicyVariableSchema,
    options: PolicyLanguageOptions = {},
  ) {
    this.ctors = new Map(
      Object.keys(schema.objects).map((name) => [name, { [name]: class { constructor(v: Record<string, unknown>) { Object.assign(this, v); } } }[name]]),
    );
    this.checking = buildEnvironment(schema, this.ctors, true);
    this.evaluating = buildEnvironment(schema, this.ctors, false);
    this.estimator = new CostEstimator(schema);
    this.runtimeCostLimit = options.runtimeCostLimit ?? DEFAULT_RUNTIME_COST_LIMIT;
  }

  /**
   * Write-time check of an expression: syntax, types (`resultTypes` it may have), value sizes and cost, regular
   * expressions. Answers the errors, each naming the field and the position (empty when valid).
   */
  check(field: string, source: string, resultTypes: string[]): FieldErrorDto[] {
    if (source.length > MAX_EXPRESSION_LENGTH) return [{ field, message: `${field} must be at most ${MAX_EXPRESSION_LENGTH} characters` }];
    let program: ReturnType<Environment['parse']>;
    try {
      program = this.checking.parse(source);
    } catch (err) {
      return [this.libraryError(field, source, err)];
    }
    const result = program.check();
    if (!result.valid) return [this.libraryError(field, source, result.error)];
    if (!resultTypes.includes(String(result.type))) {
      return [at(field, source, 0, `the expression evaluates to ${result.type}; it must evaluate to ${resultTypes.filter((t) => t !== 'dyn').join(' or ')}`)];
    }
    const root = program.ast as unknown as CelNode;
    const errors: FieldErrorDto[] = [];
    this.checkPatterns(field, source, root, errors);
    const report = this.estimator.estimate(root);
    for (const p of report.problems) errors.push(at(field, source, p.node.start, p.message));
    if (!errors.length && report.cost > MAX_ESTIMATED_COST) {
      const part = report.costliest;
      const where = part && part.node !== root ? `; most of it is ${describeNode(part.node)}, estimated at ${part.cost}` : '';
      errors.push(
        at(
          field,
          source,
          0,
          `estimated cost ${report.cost} exceeds the limit ${MAX_ESTIMATED_COST} (worst case for inputs within their write bounds: strings of 4096 ` +
            `characters, lists and maps of 100 entries)${where}; simplify the expression`,
        ),
      );
    }
    return errors;
  }

  /** The estimated worst-case cost of a valid expression (for tests and the documentation). */
  estimatedCost(source: string): number {
    const program = this.checking.parse(source);
    if (!program.check().valid) throw new Error(`not a valid expression: ${source}`);
    return this.estimator.estimate(program.ast as unknown as CelNode).cost;
  }

  /** The evaluation function of a checked expression (variables converted on each call; metered by `metered`). */
  compile(source: string): CompiledPolicyExpression {
    const program = this.program(source);
    return (input) => program.run(this.variables(input, program.fields));
  }

  /**
   * Each policy on each input: `results[i][j]` is policy j on input i, each evaluation within the run-time budget.
   * An expression that cannot be evaluated fails with `error` set (the caller applies the policy's failurePolicy);
   * a message expression that cannot be evaluated falls back to the message.
   */
  evaluate(policies: PolicySource[], inputs: PolicyInput[]): PolicyResult[][] {
    const programs = policies.map((p) => ({
      test: this.program(p.expression),
      message: p.messageExpression ? this.program(p.messageExpression) : null,
      fallback: p.message,
    }));
    return inputs.map((input) => {
      // One input's variables are converted once per projection, not once per policy.
      const converted = new Map<string, CelVariables>();
      const run = (program: Program) => {
        const key = program.fields?.join('\0') ?? '*';
        let vars = converted.get(key);
        if (!vars) converted.set(key, (vars = this.variables(input, program.fields)));
        return metered(this.runtimeCostLimit, () => program.run(vars)).value;
      };
      return programs.map((p): PolicyResult => {
        let outcome: unknown;
        try {
          outcome = run(p.test);
        } catch (err) {
          const error = summary(err);
          return { passed: false, message: `${p.fallback} (the expression could not be evaluated: ${error})`, error };
        }
        if (outcome === true) return { passed: true, message: null, error: null };
        if (outcome !== false) {
          const error = `the expression evaluated to ${typeof outcome}, not bool`;
          return { passed: false, message: `${p.fallback} (${error})`, error };
        }
        if (!p.message) return { passed: false, message: p.fallback, error: null };
        try {
          const text = run(p.message);
          return { passed: false, message: typeof text === 'string' && text.trim() ? text.slice(0, 1024) : p.fallback, error: null };
        } catch {
          return { passed: false, message: p.fallback, error: null };
        }
      });
    });
  }

  /**
   * The projection of `object`/`oldObject` these expressions read: the top-level fields named after them
   * (`object.region`, `oldObject['version']`), or null when one reads the cluster whole (passes it on, compares
   * it, a comprehension variable of that name) and every field is needed.
   */
  objectFields(sources: string[]): string[] | null {
    const fields = new Set<string>();
    const walk = (node: unknown, parent: CelNode | null): boolean => {
      if (Array.isArray(node)) return node.every((n) => walk(n, parent));
      if (!node || typeof node !== 'object' || !('op' in node)) return true;
      const n = node as CelNode;
      if (n.op === 'id' && (n.args === 'object' || n.args === 'oldObject')) {
        if (parent?.op === '.' && (parent.args as unknown[])[0] === n) {
          fields.add(String((parent.args as unknown[])[1]));
          return true;
        }
        // `object == null` (oldObject on CREATE) reads no field.
        const pair = parent && (parent.op === '==' || parent.op === '!=') ? (parent.args as CelNode[]) : null;
        if (pair?.some((a) => a !== n && a?.op === 'value' && a.args === null)) return true;
        const key = parent?.op === '[]' && (parent.args as unknown[])[0] === n ? ((parent.args as unknown[])[1] as CelNode) : null;
        if (key?.op === 'value' && typeof key.args === 'string') {
          fields.add(key.args);
          return true;
        }
        return false;
      }
      return walk(n.args, n);
    };
    for (const source of sources) if (!walk(this.evaluating.parse(source).ast, null)) return null;
    return [...fields];
  }

  /** The declared variables and their CEL types, for the documentation. */
  definitions(): { name: string; type: string }[] {
    return this.checking.getDefinitions().variables.map((v) => ({ name: v.name, type: String(v.type) }));
  }

  /** A parsed, checked and metered program, compiled once per worker thread and kept (least recently used dropped). */
  private program(source: string): Program {
    let program = this.compiled.get(source);
    if (program) {
      this.compiled.delete(source); // most recently used last
    } else {
      const parsed = this.evaluating.parse(source);
      useRe2(parsed.ast);
      const checked = parsed.check();
      if (!checked.valid) throw checked.error;
      instrument(parsed.ast as unknown as CelNode);
      // Only the cluster fields the expression reads are converted (the others stay unset: it never reads them).
      program = { fields: this.objectFields([source]), run: (vars) => parsed(vars) };
      if (this.compiled.size >= MAX_COMPILED) this.compiled.delete(this.compiled.keys().next().value!);
    }
    this.compiled.set(source, program);
    return program;
  }

  /** The CEL values of an input's variables, the cluster projected on `fields`. */
  private variables(input: PolicyInput, fields: string[] | null): CelVariables {
    const { object: clusterType, environment, organisation, request } = this.schema.variables;
    const only = fields ? new Set(fields) : null;
    const convert = (v: PolicyInput['object'] | null) => this.toCelValue({ kind: 'object', type: clusterType }, v, only);
    const object = convert(input.object);
    return {
      object,
      oldObject: input.oldObject === input.object ? object : convert(input.oldObject),
      environment: this.toCelValue({ kind: 'object', type: environment }, input.environment),
      organisation: this.toCelValue({ kind: 'object', type: organisation }, input.organisation),
      request: this.toCelValue({ kind: 'object', type: request }, input.request),
    };
  }

  /**
   * Converts a JSON value to the CEL value of its shape: ints become BigInt, objects instances of their type.
   * `only` (a projection) limits the top-level fields converted; the others are left unset.
   */
  private toCelValue(shape: FieldShape, value: unknown, only: ReadonlySet<string> | null = null): unknown {
    if (value === null || value === undefined) return null;
    switch (shape.kind) {
      case 'int':
        return typeof value === 'number' && Number.isInteger(value) ? BigInt(value) : value;
      case 'object': {
        const out: Record<string, unknown> = {};
        const v = value as Record<string, unknown>;
        for (const [k, f] of Object.entries(this.schema.objects[shape.type].fields)) if (!only || only.has(k)) out[k] = this.toCelValue(f.shape, v[k]);
        return new (this.ctors.get(shape.type)!)(out);
      }
      case 'list':
        return (value as unknown[]).map((e) => this.toCelValue(shape.element, e));
      default:
        return value;
    }
  }

  private libraryError(field: string, source: string, err: unknown): FieldErrorDto {
    const e = err as { range?: { start: number }; summary?: string; message?: string };
    const summary = e.summary ?? String(e.message ?? err).split('\n')[0];
    return at(field, source, e.range?.start ?? 0, summary);
  }

  /** `matches()` takes a string literal of at most MAX_PATTERN_LENGTH characters in RE2 syntax. */
  private checkPatterns(field: string, source: string, node: unknown, errors: FieldErrorDto[]): void {
    if (Array.isArray(node)) return node.forEach((n) => this.checkPatterns(field, source, n, errors));
    if (!node || typeof node !== 'object' || !('op' in node)) return;
    const n = node as CelNode;
    const args = n.args as unknown[];
    let pattern: CelNode | undefined | null = null;
    if (n.op === 'rcall' && args[0] === 'matches') pattern = (args[2] as CelNode[])[0];
    if (n.op === 'call' && args[0] === 'matches') pattern = (args[1] as CelNode[])[1];
    if (pattern !== null) {
      const problem = patternProblem(pattern);
      if (problem) errors.push(at(field, source, pattern?.start ?? 0, problem));
    }
    this.checkPatterns(field, source, n.args, errors);
  }
}

/** The message of an evaluation error (first line, bounded). */
function summary(err: unknown): string {
  if (err instanceof PolicyEvaluationStopped) return err.message.slice(0, 500);
  const e = err as { summary?: string; message?: string };
  return (e.summary ?? String(e.message ?? err).split('\n')[0]).slice(0, 300);
}

/**
 * Why a `matches` pattern is refused, or null: only string literals (so the pattern is checked here, once),
 * at most MAX_PATTERN_LENGTH characters, in RE2 syntax (CEL's; no lookaround, no backreferences).
 */
function patternProblem(pattern: CelNode | undefined): string | null {
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
