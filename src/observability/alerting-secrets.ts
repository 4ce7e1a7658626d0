import { Alias, isAlias, isMap, isScalar, isSeq, Node, parseDocument, Scalar } from 'yaml';
import { SECRET_PLACEHOLDER } from '../common/secret-text';

/**
 * Where an Alertmanager configuration holds credentials: the fields Alertmanager itself types as `Secret` or
 * `SecretURL` (and so shows as `<secret>` in its own API), written out here as data. Pure and synchronous: no
 * Nest, no I/O, so a worker thread may import it.
 */
export { SECRET_PLACEHOLDER };

/**
 * The credential fields of an HTTP client configuration (Prometheus' common `http_config`), relative to it:
 * basic auth password, authorization credentials, the deprecated bearer token, the OAuth2 client secret (and
 * the TLS key and proxy of its own token client), the TLS client key, header values listed as `secrets`, and
 * proxy CONNECT headers. `proxy_url` is listed too: its userinfo may hold a password (Alertmanager masks that).
 */
const HTTP_CLIENT_SECRETS = [
  'basic_auth.password',
  'authorization.credentials',
  'bearer_token',
  'oauth2.client_secret',
  'oauth2.tls_config.key',
  'oauth2.proxy_url',
  'oauth2.proxy_connect_header',
  'tls_config.key',
  'proxy_url',
  'proxy_connect_header',
  'http_headers.*.secrets',
];

/**
 * Each receiver integration (`receivers[].<type>`) and its own credential fields; every one of them may also carry
 * an `http_config` (HTTP_CLIENT_SECRETS). Chat webhooks are credentials by their URL alone.
 */
const RECEIVER_SECRETS: Record<string, readonly string[]> = {
  discord_configs: ['webhook_url'],
  email_configs: ['auth_password', 'auth_secret', 'tls_config.key'],
  incidentio_configs: ['alert_source_token'],
  jira_configs: [],
  mattermost_configs: ['webhook_url'],
  msteams_configs: ['webhook_url'],
  msteamsv2_configs: ['webhook_url'],
  opsgenie_configs: ['api_key'],
  pagerduty_configs: ['routing_key', 'service_key'],
  pushover_configs: ['user_key', 'token'],
  rocketchat_configs: ['token', 'token_id'],
  slack_configs: ['api_url'],
  sns_configs: ['sigv4.secret_key'],
  telegram_configs: ['bot_token'],
  victorops_configs: ['api_key'],
  webex_configs: [],
  webhook_configs: ['url'],
  wechat_configs: ['api_secret'],
};

/** The defaults under `global` that receivers inherit. */
const GLOBAL_SECRETS = [
  'smtp_auth_password',
  'smtp_auth_secret',
  'smtp_tls_config.key',
  'slack_api_url',
  'opsgenie_api_key',
  'victorops_api_key',
  'wechat_api_secret',
  'rocketchat_token',
  'rocketchat_token_id',
  ...HTTP_CLIENT_SECRETS.map((p) => `http_config.${p}`),
];

/**
 * A receiver integration this list does not know (a newer Alertmanager's): every value in it is treated as secret
 * except these keys, an allow-list being the smaller set there.
 */
export const UNKNOWN_INTEGRATION_PUBLIC_KEYS = ['send_resolved', 'max_alerts', 'timeout'] as const;

/**
 * Every secret place of an Alertmanager configuration, as a dotted path from the document root (`*`: any map key or
 * list index). What lies below such a place is secret whole (a list of header secrets, a map of proxy headers).
 */
export const ALERTMANAGER_SECRET_PATHS: readonly string[] = [
  ...GLOBAL_SECRETS.map((p) => `global.${p}`),
  ...Object.entries(RECEIVER_SECRETS).flatMap(([type, own]) =>
    [...own, ...HTTP_CLIENT_SECRETS.map((p) => `http_config.${p}`)].map((p) => `receivers.*.${type}.*.${p}`),
  ),
];

/** The receiver integration types the list knows. */
export const KNOWN_RECEIVER_INTEGRATIONS: readonly string[] = Object.keys(RECEIVER_SECRETS);

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
