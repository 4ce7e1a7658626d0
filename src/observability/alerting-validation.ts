import { isMap, isScalar, isSeq, LineCounter, Node, parseDocument, visit, YAMLMap } from 'yaml';
import {
  ALERTING_FILE_NAME,
  ALERTING_MAX_ALIASES,
  ALERTING_MAX_FILE_BYTES,
  ALERTING_MAX_FILES,
  ALERTING_MAX_TOTAL_BYTES,
  AlertingFilesInput,
  AlertingProblem,
  describeProblem,
} from './alerting-limits';

export { ALERTING_FILE_NAME, ALERTING_MAX_ALIASES, ALERTING_MAX_FILE_BYTES, ALERTING_MAX_FILES, ALERTING_MAX_TOTAL_BYTES, describeProblem };
export type { AlertingFilesInput, AlertingProblem };

class Checker {
  readonly problems: AlertingProblem[] = [];
  constructor(
    private readonly file: string,
    private readonly lines: LineCounter,
  ) {}

  at(node: Node | null | undefined, message: string): void {
    const offset = node?.range?.[0];
    if (offset === undefined) {
      this.problems.push({ file: this.file, message });
      return;
    }
    const pos = this.lines.linePos(offset);
    this.problems.push({ file: this.file, line: pos.line, column: pos.col, message });
  }
}

/** Keys that repeat a key earlier in the same mapping (scalar keys compared by value; `<<` merge keys may repeat). */
function duplicateKeys(doc: ReturnType<typeof parseDocument>): Node[] {
  const found: Node[] = [];
  visit(doc, {
    Map: (_, map) => {
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        if (!isScalar(pair.key)) continue;
        const value = pair.key.value;
        if (value === '<<') continue;
        if (seen.has(value)) found.push(pair.key);
        seen.add(value);
      }
    },
  });
  return found;
}

/** Parses YAML text; syntax errors become problems with their location. */
function parse(file: string, text: string) {
  const lines = new LineCounter();
  // The library's own unique-key check compares every key with every other (quadratic: ~7 s for a 128 KiB map of
  // 16,000 keys); duplicateKeys below does the same in one pass.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: false });
  const checker = new Checker(file, lines);
  for (const err of doc.errors) {
    const pos = err.linePos?.[0] ?? (err.pos?.[0] !== undefined ? lines.linePos(err.pos[0]) : undefined);
    checker.problems.push({
      file,
      ...(pos ? { line: pos.line, column: pos.col } : {}),
      message: `invalid YAML: ${err.message.split('\n')[0]}`,
    });
  }
  if (!doc.errors.length) {
    const duplicates = duplicateKeys(doc);
    for (const key of duplicates) checker.at(key, 'invalid YAML: Map keys must be unique');
    if (duplicates.length) return { doc, checker, ok: false };
    // Expanding aliases is where "billion laughs" documents explode: count them, and let the library refuse
    // excessive expansion, before anything else looks at the document.
    let aliases = 0;
    visit(doc, { Alias: () => void aliases++ });
    if (aliases > ALERTING_MAX_ALIASES) {
      checker.problems.push({ file, message: `uses ${aliases} YAML aliases; at most ${ALERTING_MAX_ALIASES} are allowed` });
      return { doc, checker, ok: false };
    }
    try {
      doc.toJS({ maxAliasCount: ALERTING_MAX_ALIASES });
    } catch (e) {
      checker.problems.push({ file, message: `invalid YAML: ${(e as Error).message.split('\n')[0]}` });
      return { doc, checker, ok: false };
    }
  }
  return { doc, checker, ok: doc.errors.length === 0 };
}

function nonEmptyString(node: unknown): boolean {
  return isScalar(node) && (typeof node.value === 'string' ? node.value.trim().length > 0 : typeof node.value === 'number');
}

function checkRouteReceivers(route: YAMLMap, names: Set<string>, c: Checker, path: string): void {
  const receiver = route.get('receiver', true);
  if (receiver !== undefined) {
    if (!nonEmptyString(receiver)) c.at(receiver as Node, `${path}.receiver must be a receiver name`);
    else if (!names.has(String((receiver as { value: unknown }).value)))
      c.at(receiver as Node, `${path}.receiver '${String((receiver as { value: unknown }).value)}' names no receiver in receivers`);
  }
  const routes = route.get('routes', true);
  if (routes === undefined || routes === null) return;
  if (!isSeq(routes)) {
    c.at(routes as Node, `${path}.routes must be a list of routes`);
    return;
  }
  routes.items.forEach((child, i) => {
    if (!isMap(child)) c.at(child as Node, `${path}.routes[${i}] must be a mapping`);
    else checkRouteReceivers(child, names, c, `${path}.routes[${i}]`);
  });
}

/** The alert-manager configuration: top-level `route` (with `receiver`) and a non-empty `receivers` list. */
export function checkAlertingConfig(text: string, file = 'alertingConfig'): AlertingProblem[] {
  const { doc, checker: c, ok } = parse(file, text);
  if (!ok) return c.problems;
  const root = doc.contents;
  if (!isMap(root)) {
    c.at(root as Node, 'must be a YAML mapping with route and receivers');
    return c.problems;
  }
  const receivers = root.get('receivers', true);
  const names = new Set<string>();
  if (receivers === undefined) c.at(root, 'receivers is required (a non-empty list of receivers, each with a name)');
  else if (!isSeq(receivers) || receivers.items.length === 0) c.at(receivers as Node, 'receivers must be a non-empty list');
  else
    receivers.items.forEach((r, i) => {
      if (!isMap(r)) return c.at(r as Node, `receivers[${i}] must be a mapping with a name`);
      const name = r.get('name', true);
      if (!nonEmptyString(name)) return c.at((name as Node) ?? r, `receivers[${i}].name is required`);
      const value = String((name as { value: unknown }).value);
      if (names.has(value)) c.at(name as Node, `receivers[${i}].name '${value}' is used twice`);
      names.add(value);
    });
  const route = root.get('route', true);
  if (route === undefined) c.at(root, 'route is required (a mapping with a receiver)');
  else if (!isMap(route)) c.at(route as Node, 'route must be a mapping with a receiver');
  else {
    if (route.get('receiver', true) === undefined) c.at(route, 'route.receiver is required');
    else if (isSeq(receivers) && receivers.items.length > 0) checkRouteReceivers(route, names, c, 'route');
  }
  return c.problems;
}

/** A rule file: `groups`, a list of {name, rules: [{alert|record, expr}]}, group names unique. */
export function checkRuleFile(text: string, file: string): AlertingProblem[] {
  const { doc, checker: c, ok } = parse(file, text);
  if (!ok) return c.problems;
  const root = doc.contents;
  if (!isMap(root)) {
    c.at(root as Node, 'must be a YAML mapping with groups');
    return c.problems;
  }
  const groups = root.get('groups', true);
  if (groups === undefined) {
    c.at(root, 'groups is required (a list of rule groups)');
    return c.problems;
  }
  if (!isSeq(groups)) {
    c.at(groups as Node, 'groups must be a list of rule groups');
    return c.problems;
  }
  const seen = new Set<string>();
  groups.items.forEach((g, gi) => {
    if (!isMap(g)) return c.at(g as Node, `groups[${gi}] must be a mapping with name and rules`);
    const name = g.get('name', true);
    if (!nonEmptyString(name)) c.at((name as Node) ?? g, `groups[${gi}].name is required`);
    else {
      const value = String((name as { value: unknown }).value);
      if (seen.has(value)) c.at(name as Node, `groups[${gi}].name '${value}' is used twice`);
      seen.add(value);
    }
    const rules = g.get('rules', true);
    if (rules === undefined) return c.at(g, `groups[${gi}].rules is required (a list of rules)`);
    if (!isSeq(rules)) return c.at(rules as Node, `groups[${gi}].rules must be a list of rules`);
    rules.items.forEach((r, ri) => {
      const path = `groups[${gi}].rules[${ri}]`;
      if (!isMap(r)) return c.at(r as Node, `${path} must be a mapping with alert or record, and expr`);
      const alert = r.get('alert', true);
      const record = r.get('record', true);
      if (alert === undefined && record === undefined) c.at(r, `${path} needs alert or record`);
      else if (alert !== undefined && record !== undefined) c.at(r, `${path} must have alert or record, not both`);
      else if (!nonEmptyString(alert ?? record)) c.at((alert ?? record) as Node, `${path}.${alert !== undefined ? 'alert' : 'record'} must be a non-empty name`);
      const expr = r.get('expr', true);
      if (expr === undefined) c.at(r, `${path}.expr is required`);
      else if (!nonEmptyString(expr)) c.at(expr as Node, `${path}.expr must be a non-empty expression`);
    });
  });
  return c.problems;
}

/** Checks the whole configuration: bounds, names, YAML and structure. Empty list = valid. */
export function checkAlertingFiles(input: AlertingFilesInput): AlertingProblem[] {
  const problems: AlertingProblem[] = [];
  const total = [input.alertingConfig, ...Object.values(input.ruleFiles ?? {}), ...Object.values(input.templateFiles ?? {})]
    .filter((v): v is string => typeof v === 'string')
    .reduce((sum, v) => sum + Buffer.byteLength(v, 'utf8'), 0);
  if (total > ALERTING_MAX_TOTAL_BYTES) {
    return [{ file: 'body', message: `holds ${Math.ceil(total / 1024)} KiB of YAML; at most ${ALERTING_MAX_TOTAL_BYTES / 1024} KiB per request` }];
  }
  const sizeOk = (file: string, text: string) => {
    if (Buffer.byteLength(text, 'utf8') > ALERTING_MAX_FILE_BYTES) {
      problems.push({ file, message: `is larger than ${ALERTING_MAX_FILE_BYTES / 1024} KiB` });
      return false;
    }
    return true;
  };
  if (input.alertingConfig !== undefined && input.alertingConfig !== null) {
    if (typeof input.alertingConfig !== 'string') problems.push({ file: 'alertingConfig', message: 'must be a YAML string' });
    else if (input.alertingConfig.trim().length > 0 && sizeOk('alertingConfig', input.alertingConfig))
      problems.push(...checkAlertingConfig(input.alertingConfig));
  }
  for (const kind of ['ruleFiles', 'templateFiles'] as const) {
    const files = input[kind];
    if (files === undefined || files === null) continue;
    if (typeof files !== 'object' || Array.isArray(files)) {
      problems.push({ file: kind, message: 'must be an object mapping file names to contents' });
      continue;
    }
    const entries = Object.entries(files);
    if (entries.length > ALERTING_MAX_FILES) {
      problems.push({ file: kind, message: `holds ${entries.length} files; at most ${ALERTING_MAX_FILES} are allowed` });
      continue;
    }
    for (const [name, content] of entries) {
      const file = `${kind}.${name}`;
      if (!ALERTING_FILE_NAME.test(name)) {
        problems.push({ file, message: `file name '${name}' must be 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit` });
        continue;
      }
      if (typeof content !== 'string') {
        problems.push({ file, message: 'must be a string' });
        continue;
      }
      if (!sizeOk(file, content)) continue;
      if (kind === 'templateFiles') {
        if (content.trim().length === 0) problems.push({ file, message: 'must not be empty' });
      } else problems.push(...checkRuleFile(content, file));
    }
  }
  return problems;
}
