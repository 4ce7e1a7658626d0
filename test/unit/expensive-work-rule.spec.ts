import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';

/**
 * The rule that holds the class (docs/architecture.md, "Expensive work on user input"): only the executor's worker
 * threads load the engines whose cost the user's input decides: the CEL engine, the YAML parser and the regular
 * expression engine, and nothing on the main thread compiles a regular expression from a value (`new RegExp(x)`).
 * A module runs on the main thread unless the worker (src/worker/executor.worker.ts, which loads
 * executor-tasks.ts) is the only thing that imports it, directly or not. Imports are read from each file as it
 * is compiled (type-only imports vanish; a class named in a decorated constructor stays), so the test sees what
 * is loaded at run time.
 */

const ROOT = path.resolve(__dirname, '../..');
const WORKER_ENTRY = 'src/worker/executor.worker.ts';
const ENGINES = ['@marcbachmann/cel-js', 'yaml', 're2js'];

interface Exception {
  file: string;
  engine: string;
  /** The only names the file may import from the engine. */
  names?: string[];
  /** The only main-thread modules that may import the file. */
  importedBy?: string[];
  reason: string;
}

/** The main-thread uses of an engine that are not on user input, each with why. */
export const EXCEPTIONS: Exception[] = [
  {
    file: 'src/catalog/catalog-loader.service.ts',
    engine: 'yaml',
    names: ['parse'],
    reason: "the operator's catalog file (CATALOG_FILE), parsed at start-up and when a platform administrator reloads it: not user input",
  },
  {
    file: 'src/observability/alerting-validation.ts',
    engine: 'yaml',
    importedBy: ['src/observability/default-alerting-rules.ts'],
    reason:
      'the shipped default alerting rules (data/default-alerting-rules.yaml) are checked once at start-up; users\' alerting YAML reaches ' +
      'these functions only through the executor task alerting.check',
  },
  {
    file: 'src/clusters/byon/node-join-content.ts',
    engine: 'yaml',
    names: ['stringify'],
    reason: "writes the node join cloud-init from the service's own data; parses nothing",
  },
  {
    file: 'src/clusters/cluster-access.service.ts',
    engine: 'yaml',
    names: ['stringify'],
    reason: "writes kubeconfig YAML from the service's own data; parses nothing",
  },
];

const COMPILER_OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.CommonJS,
  target: ts.ScriptTarget.ES2022,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  esModuleInterop: true,
};

interface ModuleFacts {
  /** src/ files it loads. */
  files: string[];
  /** Packages it loads, with the names it imports from each (`*` for a namespace or side-effect import). */
  packages: Map<string, Set<string>>;
  /** `new RegExp(x)` / `RegExp(x)` with x not a literal, as `line N`. */
  dynamicRegExps: string[];
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    return e.isDirectory() ? sourceFiles(rel) : rel.endsWith('.ts') && !rel.endsWith('.d.ts') ? [rel] : [];
  });
}

const packageOf = (request: string) => (request.startsWith('@') ? request.split('/').slice(0, 2).join('/') : request.split('/')[0]);

function resolveFile(from: string, request: string, known: Set<string>): string | null {
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), request));
  for (const candidate of [base, `${base}.ts`, `${base}/index.ts`]) if (known.has(candidate)) return candidate;
  return null;
}

const compiled = new Map<string, { required: string[]; facts: Omit<ModuleFacts, 'files'> }>();

/** What a module loads (compiled once per path and text). */
function factsOf(file: string, text: string, known: Set<string>): ModuleFacts {
  const key = `${file}\0${text}`;
  let read = compiled.get(key);
  if (!read) compiled.set(key, (read = readFacts(file, text)));
  const files = read.required.filter((r) => r.startsWith('.')).map((r) => resolveFile(file, r, known)).filter((f): f is string => !!f);
  return { files, ...read.facts };
}

function readFacts(file: string, text: string): { required: string[]; facts: Omit<ModuleFacts, 'files'> } {
  // What the compiled module requires at run time (imports used only as types are gone).
  const js = ts.transpileModule(text, { compilerOptions: COMPILER_OPTIONS, fileName: file }).outputText;
  const required = [...js.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]);
  const packages = new Map<string, Set<string>>();
  for (const r of required.filter((x) => !x.startsWith('.'))) packages.set(packageOf(r), new Set());
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const dynamicRegExps: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const names = packages.get(packageOf(node.moduleSpecifier.text));
      const clause = node.importClause;
      if (names && !clause?.isTypeOnly) {
        if (!clause || clause.name || (clause.namedBindings && ts.isNamespaceImport(clause.namedBindings))) names.add('*');
        if (clause?.namedBindings && ts.isNamedImports(clause.namedBindings)) {
          for (const e of clause.namedBindings.elements) if (!e.isTypeOnly) names.add((e.propertyName ?? e.name).text);
        }
      }
    }
    if ((ts.isNewExpression(node) || ts.isCallExpression(node)) && ts.isIdentifier(node.expression) && node.expression.text === 'RegExp') {
      const first = node.arguments?.[0];
      if (first && !ts.isStringLiteral(first) && !ts.isNoSubstitutionTemplateLiteral(first) && !ts.isRegularExpressionLiteral(first)) {
        dynamicRegExps.push(`line ${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { required, facts: { packages, dynamicRegExps } };
}

/**
 * Every breach of the rule in src/ (with `overlay`: files added or replaced, by path, to prove the rule catches
 * them), and every exception that no longer applies.
 */
export function ruleViolations(overlay: Record<string, string> = {}): string[] {
  const all = [...new Set([...sourceFiles('src'), ...Object.keys(overlay)])];
  const known = new Set(all);
  const facts = new Map(all.map((f) => [f, factsOf(f, overlay[f] ?? fs.readFileSync(path.join(ROOT, f), 'utf8'), known)]));
  const reach = (roots: string[], parents = new Map<string, string | null>()) => {
    const queue = roots.filter((r) => facts.has(r));
    for (const r of queue) parents.set(r, parents.get(r) ?? null);
    for (let i = 0; i < queue.length; i++) {
      for (const next of facts.get(queue[i])!.files) {
        if (!parents.has(next)) {
          parents.set(next, queue[i]);
          queue.push(next);
        }
      }
    }
    return parents;
  };
  const worker = reach([WORKER_ENTRY]);
  // The main thread: src/main.ts first (for the paths in messages), then every module the worker does not load.
  const main = reach(
    all.filter((f) => !worker.has(f)),
    reach(['src/main.ts']),
  );
  const via = (file: string) => {
    const chain: string[] = [];
    for (let at: string | null | undefined = file; at; at = main.get(at)) chain.unshift(at);
    return chain.join(' -> ');
  };
  const importersOf = (file: string) => [...main.keys()].filter((m) => facts.get(m)!.files.includes(file)).sort();

  const violations: string[] = [];
  const used = new Set<Exception>();
  for (const file of main.keys()) {
    const f = facts.get(file)!;
    for (const engine of ENGINES) {
      const names = f.packages.get(engine);
      if (!names) continue;
      const exception = EXCEPTIONS.find((e) => e.file === file && e.engine === engine);
      if (!exception) {
        violations.push(`${file} loads ${engine} on the main thread (${via(file)})`);
        continue;
      }
      used.add(exception);
      const extra = exception.names ? [...names].filter((n) => !exception.names!.includes(n)) : [];
      if (extra.length) violations.push(`${file} imports ${extra.join(', ')} from ${engine}; its exception allows only ${exception.names!.join(', ')}`);
      const importers = exception.importedBy ? importersOf(file).filter((i) => !exception.importedBy!.includes(i)) : [];
      if (importers.length) violations.push(`${file} (${engine}) is loaded on the main thread by ${importers.join(', ')}; its exception allows only ${exception.importedBy!.join(', ')}`);
    }
    for (const at of f.dynamicRegExps) violations.push(`${file} ${at}: a regular expression compiled from a value on the main thread`);
  }
  for (const e of EXCEPTIONS) if (!used.has(e)) violations.push(`the exception for ${e.file} (${e.engine}) no longer applies: remove it`);
  return violations;
}

describe('expensive work on user input runs only on the executor (the rule)', () => {
  it('holds in src/: no main-thread module loads the CEL, YAML or regex engine, or compiles a pattern from a value, apart from the listed exceptions', () => {
    expect(ruleViolations()).toEqual([]);
  });

  it('sees the engines the worker loads (so the rule is not vacuous)', () => {
    const all = sourceFiles('src');
    const known = new Set(all);
    const loaded = new Set<string>();
    const queue = [WORKER_ENTRY];
    for (let i = 0; i < queue.length; i++) {
      const f = factsOf(queue[i], fs.readFileSync(path.join(ROOT, queue[i]), 'utf8'), known);
      for (const p of f.packages.keys()) loaded.add(p);
      for (const next of f.files) if (!queue.includes(next)) queue.push(next);
    }
    expect([...loaded].filter((p) => ENGINES.includes(p)).sort()).toEqual([...ENGINES].sort());
    expect(queue).toEqual(expect.arrayContaining(['src/worker/executor-tasks.ts', 'src/policies/policy-language.ts', 'src/observability/silence-rules.ts']));
  });

  it('fails on a scratch module that parses YAML on the main thread', () => {
    expect(ruleViolations({ 'src/scratch-probe.ts': "import { parse } from 'yaml';\nexport const read = (s: string) => parse(s);\n" })).toEqual([
      'src/scratch-probe.ts loads yaml on the main thread (src/scratch-probe.ts)',
    ]);
  });

  it('fails when a main-thread module reaches the CEL engine through another module, naming the path', () => {
    const file = 'src/policies/cluster-policies.service.ts';
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8') + "\nimport { PolicyLanguage } from './policy-language';\nexport const probe = PolicyLanguage;\n";
    const violations = ruleViolations({ [file]: text });
    expect(violations).toContainEqual(expect.stringMatching(/^src\/policies\/policy-language\.ts loads @marcbachmann\/cel-js on the main thread \(src\/main\.ts -> .*src\/policies\/cluster-policies\.service\.ts -> src\/policies\/policy-language\.ts\)$/));
    expect(violations).toContainEqual(expect.stringMatching(/^src\/policies\/policy-language\.ts loads re2js on the main thread/));
  });

  it('fails when the task catalogue itself is loaded on the main thread', () => {
    const file = 'src/worker/executor-worker.ts';
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8') + "\nimport { EXECUTOR_TASKS } from './executor-tasks';\nexport const probe = EXECUTOR_TASKS;\n";
    expect(ruleViolations({ [file]: text })).toEqual(
      expect.arrayContaining([expect.stringMatching(/^src\/observability\/silence-rules\.ts loads re2js on the main thread \(.*src\/worker\/executor-worker\.ts -> src\/worker\/executor-tasks\.ts/)]),
    );
  });

  it('fails on a regular expression compiled from a value, and on an exception stretched beyond its names or importers', () => {
    expect(ruleViolations({ 'src/scratch-probe.ts': "export const m = (p: string, s: string) => new RegExp(p).test(s) || RegExp('^fixed$').test(s);\n" })).toEqual([
      'src/scratch-probe.ts line 1: a regular expression compiled from a value on the main thread',
    ]);
    const loader = 'src/catalog/catalog-loader.service.ts';
    const stretched = fs.readFileSync(path.join(ROOT, loader), 'utf8').replace("import { parse } from 'yaml';", "import { parse, parseDocument } from 'yaml';\nexport const probe = parseDocument;");
    expect(ruleViolations({ [loader]: stretched })).toEqual([`${loader} imports parseDocument from yaml; its exception allows only parse`]);
    expect(ruleViolations({ 'src/scratch-probe.ts': "import { checkRuleFile } from './observability/alerting-validation';\nexport const probe = checkRuleFile;\n" })).toEqual([
      'src/observability/alerting-validation.ts (yaml) is loaded on the main thread by src/scratch-probe.ts; its exception allows only src/observability/default-alerting-rules.ts',
    ]);
  });
});
