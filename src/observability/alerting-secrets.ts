import { Alias, isAlias, isMap, isScalar, isSeq, Node, parseDocument, Scalar } from 'yaml';
import { SECRET_PLACEHOLDER } from '../common/secret-text';
import { ALERTMANAGER_SECRET_PATHS, KNOWN_RECEIVER_INTEGRATIONS, UNKNOWN_INTEGRATION_PUBLIC_KEYS } from './alertmanager-secret-paths';

/**
 * Redaction and restoration of the secrets of an Alertmanager configuration (its YAML parsed): pure and synchronous,
 * no Nest, no I/O. Only the executor's worker threads load this file (it parses user YAML); the secret places are
 * data in alertmanager-secret-paths.ts, which the main thread reads too.
 */

// --------------------------------------------------------------------------------------- path matching

interface PathNode {
  /** Everything below is secret. */
  secret?: boolean;
  children: Map<string, PathNode>;
  /** `*`: any key or index. */
  any?: PathNode;
  /** Under a receiver: lists of integrations this file does not know (`<type>_configs`). */
  unknownIntegrations?: boolean;
  /** Inside an unknown integration: every key is secret but these. */
  allSecretExcept?: readonly string[];
}

const node = (): PathNode => ({ children: new Map() });

function buildTree(paths: readonly string[]): PathNode {
  const root = node();
  for (const path of paths) {
    let at = root;
    for (const step of path.split('.')) {
      if (step === '*') at = at.any ??= node();
      else {
        if (!at.children.has(step)) at.children.set(step, node());
        at = at.children.get(step)!;
      }
    }
    at.secret = true;
  }
  root.children.get('receivers')!.any!.unknownIntegrations = true;
  return root;
}

const TREE = buildTree(ALERTMANAGER_SECRET_PATHS);
const UNKNOWN_INTEGRATION: PathNode = { children: new Map(), any: { children: new Map(), allSecretExcept: UNKNOWN_INTEGRATION_PUBLIC_KEYS } };
const SECRET: PathNode = { children: new Map(), secret: true };

/** The tree node a key leads to from `at`, or null when nothing secret lies below. */
function step(at: PathNode, key: string): PathNode | null {
  if (at.secret) return at;
  if (at.allSecretExcept) return at.allSecretExcept.includes(key) ? null : SECRET;
  const exact = at.children.get(key);
  if (exact) return exact;
  if (at.unknownIntegrations && /_configs$/.test(key) && !KNOWN_RECEIVER_INTEGRATIONS.includes(key)) return UNKNOWN_INTEGRATION;
  return at.any ?? null;
}

interface FoundSecret {
  node: Scalar;
  /** Keys and indexes from the root, for messages (`receivers.1.email_configs.0.auth_password`). */
  path: (string | number)[];
  /** The same place with receivers named rather than counted, so reordering receivers keeps their secrets. */
  key: string;
}

/** Map keys are compared as text (YAML keys here are plain scalars). */
const keyText = (k: unknown): string => String(isScalar(k) ? k.value : k);

/**
 * The secret scalars of a parsed document. Aliases are followed (the anchored value is what is secret) and merge
 * keys (`<<`) are read as part of the map that holds them; a node is visited once.
 */
function findSecrets(doc: ReturnType<typeof parseDocument>): FoundSecret[] {
  const found: FoundSecret[] = [];
  const seenScalars = new Set<Node>();
  // A collection reached again through an alias or merge key is walked again only from another place in the tree.
  const seen = new Map<Node, Set<PathNode>>();
  const visit = (n: unknown, at: PathNode, path: (string | number)[], key: string, depth: number): void => {
    if (depth > 64 || n === null || n === undefined) return;
    const resolved = isAlias(n) ? (n as Alias).resolve(doc) : n;
    if (!resolved) return;
    if (isScalar(resolved)) {
      if (at.secret && resolved.value !== null && resolved.value !== '' && !seenScalars.has(resolved)) {
        seenScalars.add(resolved);
        found.push({ node: resolved, path, key });
      }
      return;
    }
    const from = seen.get(resolved as Node) ?? new Set<PathNode>();
    if (from.has(at)) return;
    seen.set(resolved as Node, from.add(at));
    if (isMap(resolved)) {
      for (const pair of resolved.items) {
        const k = keyText(pair.key);
        if (k === '<<') {
          visit(pair.value, at, path, key, depth + 1);
          continue;
        }
        const next = step(at, k);
        if (next) visit(pair.value, next, [...path, k], `${key}.${k}`, depth + 1);
      }
    } else if (isSeq(resolved)) {
      resolved.items.forEach((item, i) => {
        const next = step(at, String(i));
        if (!next) return;
        // A receiver is found by its name, so the order of receivers does not matter.
        const name = path.length === 1 && path[0] === 'receivers' && isMap(item) ? item.get('name') : undefined;
        visit(item, next, [...path, i], `${key}.${typeof name === 'string' ? `name=${name}` : i}`, depth + 1);
      });
    }
  };
  visit(doc.contents, TREE, [], '', 0);
  return found;
}

/**
 * The library's unique-key check is quadratic in a mapping's size (seconds for a 128 KiB map); stored documents were
 * checked for duplicates when written (alerting-validation.ts), and a repeated key is searched like any other.
 */
const PARSE_OPTIONS = { uniqueKeys: false } as const;

/** Whether the text holds the document-wide placeholder (what an unparsable document is shown as). */
const isWholePlaceholder = (text: string) => text.trim() === SECRET_PLACEHOLDER;

/**
 * The configuration with every secret value replaced by `<secret>` (for callers who may not read them). A document
 * that does not parse cannot be searched: it is shown as `<secret>` whole.
 */
export function redactAlertingSecrets(text: string): string {
  if (!text.trim()) return text;
  const doc = parseDocument(text, PARSE_OPTIONS);
  if (doc.errors.length) return SECRET_PLACEHOLDER;
  const found = findSecrets(doc);
  if (!found.length) return text;
  for (const f of found) f.node.value = SECRET_PLACEHOLDER;
  return doc.toString();
}

/**
 * A configuration sent back with `<secret>` where a secret was shown redacted keeps the stored value at the same
 * place (receivers matched by name). Returns the merged text, or the paths of placeholders with no stored value.
 */
export function restoreAlertingSecrets(text: string, stored: string | null): { text: string; missing: string[] } {
  if (isWholePlaceholder(text)) return stored ? { text: stored, missing: [] } : { text, missing: ['(whole document)'] };
  if (!text.includes(SECRET_PLACEHOLDER)) return { text, missing: [] };
  const doc = parseDocument(text, PARSE_OPTIONS);
  if (doc.errors.length) return { text, missing: [] };
  const placeholders = findSecrets(doc).filter((f) => f.node.value === SECRET_PLACEHOLDER);
  if (!placeholders.length) return { text, missing: [] };
  const storedDoc = stored ? parseDocument(stored, PARSE_OPTIONS) : null;
  const storedSecrets = new Map<string, unknown>();
  if (storedDoc && !storedDoc.errors.length) {
    for (const s of findSecrets(storedDoc)) {
      storedSecrets.set(s.key, s.node.value);
      storedSecrets.set(`#${s.path.join('.')}`, s.node.value);
    }
  }
  const missing: string[] = [];
  for (const p of placeholders) {
    const value = storedSecrets.get(p.key) ?? storedSecrets.get(`#${p.path.join('.')}`);
    if (value !== undefined && value !== SECRET_PLACEHOLDER) p.node.value = value;
    else missing.push(p.path.join('.'));
  }
  return { text: missing.length ? text : doc.toString(), missing };
}
