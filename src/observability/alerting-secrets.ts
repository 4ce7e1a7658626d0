import { isScalar, parseDocument, Scalar, visit } from 'yaml';

/** What Alertmanager's own API shows instead of a secret. */
export const SECRET_PLACEHOLDER = '<secret>';

/**
 * Keys of an alert-manager configuration whose values are credentials: passwords, keys and tokens, and the
 * URLs of webhook-style receivers (a Slack or chat webhook URL is itself the credential).
 */
const SECRET_KEY = /^(smtp_auth_password|smtp_auth_secret|auth_password|password|password_file|routing_key|service_key|api_key|api_secret|bearer_token|token|bot_token|user_key|client_secret|secret|credentials|[a-z_]*_url|url)$/;

function secretPairs(text: string) {
  const doc = parseDocument(text);
  const found: { path: (string | number)[]; node: Scalar }[] = [];
  if (doc.errors.length) return { doc, found };
  visit(doc, {
    Pair(_key, pair, path) {
      if (!isScalar(pair.key) || !SECRET_KEY.test(String(pair.key.value)) || !isScalar(pair.value)) return;
      if (pair.value.value === null || pair.value.value === '') return;
      // The path from the document root: map keys and sequence indexes, for finding the same pair elsewhere.
      const keys: (string | number)[] = [];
      let parent: unknown = doc.contents;
      for (const step of path.slice(1)) {
        if (step && typeof step === 'object' && 'key' in (step as object)) {
          keys.push(String((step as { key: { value: unknown } }).key.value));
          parent = (step as { value: unknown }).value;
        } else if (parent && typeof parent === 'object' && 'items' in (parent as object)) {
          const index = (parent as { items: unknown[] }).items.indexOf(step);
          if (index >= 0) keys.push(index);
          parent = step;
        } else parent = step;
      }
      keys.push(String(pair.key.value));
      found.push({ path: keys, node: pair.value });
    },
  });
  return { doc, found };
}

/** The configuration with every secret value replaced by `<secret>` (for roles that may not see them). */
export function redactAlertingSecrets(text: string): string {
  const { doc, found } = secretPairs(text);
  if (!found.length) return text;
  for (const f of found) f.node.value = SECRET_PLACEHOLDER;
  return doc.toString();
}

/**
 * A configuration sent back with `<secret>` where a secret was shown redacted keeps the stored value at the
 * same place. Returns the merged text, or the paths of placeholders that have no stored value.
 */
export function restoreAlertingSecrets(text: string, stored: string | null): { text: string; missing: string[] } {
  const { doc, found } = secretPairs(text);
  const placeholders = found.filter((f) => f.node.value === SECRET_PLACEHOLDER);
  if (!placeholders.length) return { text, missing: [] };
  const old = stored ? parseDocument(stored) : null;
  const missing: string[] = [];
  for (const p of placeholders) {
    const value = old?.getIn(p.path);
    if (typeof value === 'string' && value !== SECRET_PLACEHOLDER) p.node.value = value;
    else missing.push(p.path.join('.'));
  }
  return { text: missing.length ? text : doc.toString(), missing };
}
