import { ApiProperty, ApiPropertyOptions } from '@nestjs/swagger';
import { OrganisationRole, roleAtLeast } from './organisation-roles';
import { redactUrlSecrets, redactUrlsInText, REDACTED, SECRET_PLACEHOLDER, urlHasSecrets } from './secret-text';

export { REDACTED, SECRET_PLACEHOLDER } from './secret-text';

/**
 * The one home of secrets (docs/architecture.md, "Secrets"). A DTO property is declared secret once, with
 * `@Secret(...)`; from that declaration:
 * - its OpenAPI schema carries `x-secret` (and `writeOnly` when it is never answered) and a sentence saying how it
 *   is handled (src/common/openapi-polish.ts);
 * - answers show SECRET_PLACEHOLDER to callers below `readableFrom`, to READ_ONLY tokens and to platform
 *   administrators outside the organisation (SecretResponseInterceptor);
 * - audit rows, activity events, webhook event bodies and log lines show REDACTED (redactForRecord, used by the
 *   audit service, the outbox and the logger);
 * - a write that sends the placeholder back keeps the stored value (keepStoredSecret);
 * - at rest it is sealed with SecretBox by the service that stores it; test/security/secrets.e2e-spec.ts walks
 *   every declaration through every role, token kind and outlet, database included.
 */

/**
 * How a secret is shaped: a single `value`; a `url` whose userinfo, query values and fragment are secret (the rest
 * says where it points); a string `map` whose values are secret except under `publicKeys`; a `document` (YAML) whose
 * secrets sit at the declared `document.paths`.
 */
export type SecretKind = 'value' | 'url' | 'map' | 'document';

export interface SecretDocument {
  /** What the document is, for the description (e.g. "Alertmanager configuration"). */
  format: string;
  /** The secret places: dotted paths, `*` for any key or list index; what lies below a path is secret whole. */
  paths: readonly string[];
}

export interface SecretOptions {
  /**
   * The least organisation role that reads it in clear, through a credential that may write (not a READ_ONLY
   * token). Absent: never answered after it is written (write-only), unless `shownOnce`.
   */
  readableFrom?: OrganisationRole;
  /** Made by the service and answered once, to the caller whose request made it; never stored readable. */
  shownOnce?: boolean;
  kind?: SecretKind;
  /** `map` only: keys whose values are not secret (an allow-list: every other key is). */
  publicKeys?: readonly string[];
  /** `document` only: where its secrets are. */
  document?: SecretDocument;
}

export interface DeclaredSecret {
  /** The DTO class the property is declared on. */
  dto: abstract new (...args: never[]) => unknown;
  property: string;
  options: SecretOptions & { kind: SecretKind };
}

const DECLARED: DeclaredSecret[] = [];

/** Every declared secret property (of every DTO module loaded). */
export function declaredSecrets(): readonly DeclaredSecret[] {
  return DECLARED;
}

/** The OpenAPI extension written on a secret property: how it is handled, for readers and tools. */
export interface SecretExtension {
  kind: SecretKind;
  readableFrom?: OrganisationRole;
  writeOnly?: true;
  shownOnce?: true;
  publicKeys?: readonly string[];
  document?: string;
}

export function secretExtension(options: SecretOptions): SecretExtension {
  const kind = options.kind ?? 'value';
  return {
    kind,
    ...(options.readableFrom ? { readableFrom: options.readableFrom } : {}),
    ...(!options.readableFrom && !options.shownOnce ? { writeOnly: true as const } : {}),
    ...(options.shownOnce ? { shownOnce: true as const } : {}),
    ...(options.publicKeys ? { publicKeys: options.publicKeys } : {}),
    ...(options.document ? { document: options.document.format } : {}),
  };
}

/** The sentence the OpenAPI document adds to a secret property's description. */
export function secretSentence(x: SecretExtension): string {
  const what =
    x.kind === 'url'
      ? 'The userinfo, query values and fragment of this URL are secret'
      : x.kind === 'map'
        ? `The values of this map are secret${x.publicKeys?.length ? ` (except under ${x.publicKeys.join(', ')})` : ''}`
        : x.kind === 'document'
          ? `The credentials in this ${x.document ?? 'document'} are secret`
          : 'Secret';
  const shown = x.shownOnce
    ? 'answered once, to the caller whose request made it, and never again'
    : x.readableFrom
      ? `answered to ${x.readableFrom} and above with a credential that may write; other roles, READ_ONLY tokens and platform ` +
        `administrators outside the organisation get \`${SECRET_PLACEHOLDER}\`, and sending \`${SECRET_PLACEHOLDER}\` back keeps the stored value`
      : 'write-only: never answered';
  const atRest = x.shownOnce ? 'stored only sealed or as a hash' : 'sealed at rest';
  return `${what}: ${atRest}, ${shown}; audit, activity, webhook events and logs show \`${REDACTED}\`.`;
}

/**
 * Declares a DTO property secret (see the file comment). Put it beside the property's `@ApiProperty`; the order
 * does not matter.
 */
export function Secret(options: SecretOptions = {}): PropertyDecorator {
  return (target, key) => {
    const declared: DeclaredSecret = {
      dto: target.constructor as DeclaredSecret['dto'],
      property: String(key),
      options: { ...options, kind: options.kind ?? 'value' },
    };
    DECLARED.push(declared);
    const extension = secretExtension(options);
    ApiProperty({ 'x-secret': extension, ...(extension.writeOnly ? { writeOnly: true } : {}) } as ApiPropertyOptions)(target, key);
  };
}

/** The declarations of a class, its own and inherited, by property name. */
export function secretsOf(dto: DeclaredSecret['dto']): Map<string, DeclaredSecret> {
  const out = new Map<string, DeclaredSecret>();
  const chain: unknown[] = [];
  for (let c: unknown = dto; typeof c === 'function' && c !== Function.prototype; c = Object.getPrototypeOf(c)) chain.unshift(c);
  for (const c of chain) for (const d of DECLARED) if (d.dto === c) out.set(d.property, d);
  return out;
}

// ----------------------------------------------------------------------------------------------- who reads

/** What decides whether a caller reads a secret: the caller's own membership role and the kind of credential. */
export interface SecretReader {
  /** The caller's role as a member of the organisation (null outside one, platform administrators included). */
  role: OrganisationRole | null;
  /** A READ_ONLY personal access token: never reads a secret. */
  readOnly: boolean;
}

export const NO_SECRET_READER: SecretReader = { role: null, readOnly: true };

/** The reader of a request: its organisation context (set by the organisation guard) and its credential. */
export function secretReaderOf(request: {
  organisationContext?: { member?: { role: OrganisationRole } | null } | null;
  user?: { token?: { type?: string } | null } | null;
}): SecretReader {
  return {
    // The member role, not the guard's effective one: a platform administrator outside the organisation reads as a VIEWER there.
    role: request.organisationContext?.member?.role ?? null,
    readOnly: request.user?.token?.type === 'READ_ONLY',
  };
}

/** Whether the reader may see the secret in clear. */
export function mayReadSecret(options: SecretOptions, reader: SecretReader): boolean {
  if (options.shownOnce) return true;
  if (!options.readableFrom || reader.readOnly || !reader.role) return false;
  return roleAtLeast(reader.role, options.readableFrom);
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isSet = (v: unknown) => v !== null && v !== undefined && v !== '';

/** A map with its secret values replaced by `marker` (keys stay: they name what is configured). */
function maskMap(value: unknown, publicKeys: readonly string[] | undefined, marker: string): unknown {
  if (!isRecord(value)) return isSet(value) ? marker : value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, publicKeys?.includes(k) || !isSet(v) ? v : marker]));
}

/**
 * The value as the reader may see it. `document` secrets are returned unchanged: their service redacts them where
 * YAML may be parsed (off the event loop), asking mayReadSecret with the same declaration.
 */
export function presentSecret(options: SecretOptions, value: unknown, reader: SecretReader): unknown {
  if (mayReadSecret(options, reader) || !isSet(value)) return value;
  switch (options.kind ?? 'value') {
    case 'url':
      return typeof value === 'string' ? redactUrlSecrets(value, SECRET_PLACEHOLDER) : SECRET_PLACEHOLDER;
    case 'map':
      return maskMap(value, options.publicKeys, SECRET_PLACEHOLDER);
    case 'document':
      return value;
    default:
      return SECRET_PLACEHOLDER;
  }
}

// ------------------------------------------------------------------------------------------ write round trip

export interface KeptSecret<T> {
  value: T;
  /** Where a placeholder was sent but nothing is stored (a 400 for the caller), as `field` or `field.key`. */
  missing: string[];
}

/**
 * A written value with placeholders put back: a placeholder (or, for a URL, the URL as the placeholder form shows
 * it) keeps the stored value; a placeholder where nothing is stored is `missing`.
 */
export function keepStoredSecret<T>(options: SecretOptions, field: string, incoming: T, stored: T | null | undefined): KeptSecret<T> {
  const kind = options.kind ?? 'value';
  if (kind === 'map' && isRecord(incoming)) {
    const storedMap: Record<string, unknown> = isRecord(stored) ? stored : {};
    const missing: string[] = [];
    const value = Object.fromEntries(
      Object.entries(incoming).map(([k, v]) => {
        if (v !== SECRET_PLACEHOLDER || options.publicKeys?.includes(k)) return [k, v];
        if (isSet(storedMap[k]) && storedMap[k] !== SECRET_PLACEHOLDER) return [k, storedMap[k]];
        missing.push(`${field}.${k}`);
        return [k, v];
      }),
    ) as T;
    return { value, missing };
  }
  if (kind === 'url' && typeof incoming === 'string' && incoming.includes(SECRET_PLACEHOLDER)) {
    if (typeof stored === 'string' && urlHasSecrets(stored) && redactUrlSecrets(stored, SECRET_PLACEHOLDER) === incoming) return { value: stored, missing: [] };
    return { value: incoming, missing: [field] };
  }
  if (incoming === SECRET_PLACEHOLDER) {
    return isSet(stored) && stored !== SECRET_PLACEHOLDER ? { value: stored as T, missing: [] } : { value: incoming, missing: [field] };
  }
  return { value: incoming, missing: [] };
}

// ---------------------------------------------------------------------------------------------- records

/**
 * Names that look like credentials. A property of a request or answer named so must be declared (the secrets
 * test fails otherwise); in records such a name is redacted even where nothing declares it.
 */
const SECRET_LOOKING = /(password|passphrase|secret|token|credentials?|apikey|privatekey|accesskey|secretkey|serviceaccountkey|applicationkey|consumerkey)$/;

export function looksSecret(name: string): boolean {
  return SECRET_LOOKING.test(name.toLowerCase().replace(/[-_]/g, ''));
}

/** How records treat a property name: its declared kind, `value` for names that look secret, or null. */
function recordKindOf(name: string): { kind: SecretKind; publicKeys?: readonly string[] } | null {
  let found: { kind: SecretKind; publicKeys?: readonly string[] } | null = null;
  for (const d of DECLARED) {
    // A document's records are digests of its files (never its text): nothing to redact by name.
    if (d.property !== name || d.options.kind === 'document') continue;
    // The strictest declaration of a name wins (a value beats a map or URL, which keep some parts).
    if (!found || d.options.kind === 'value') found = { kind: d.options.kind, publicKeys: d.options.publicKeys };
  }
  return found ?? (looksSecret(name) ? { kind: 'value' } : null);
}

/** Every leaf replaced by REDACTED (nulls stay null, so "was it set" still shows). */
function redactLeaves(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(redactLeaves);
  if (isRecord(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, redactLeaves(x)]));
  return v === null || v === undefined ? v : REDACTED;
}

/** Audit details wrap each value as {old, new}: a record treatment applies to both sides. */
function eachSide(v: unknown, f: (x: unknown) => unknown): unknown {
  if (isRecord(v) && Object.keys(v).every((k) => k === 'old' || k === 'new') && ('old' in v || 'new' in v)) {
    return { ...('old' in v ? { old: f(v.old) } : {}), ...('new' in v ? { new: f(v.new) } : {}) };
  }
  return f(v);
}

/**
 * A value as records (audit details, activity sentences, webhook event bodies, log fields) may hold it: declared
 * and secret-looking properties redacted by their kind, and (unless `urls` is false: data the service relays, such
 * as alert annotations, keeps its links) the credentials of every URL in any string.
 */
export function redactForRecord(value: unknown, options: { urls?: boolean } = {}, depth = 0): unknown {
  if (depth > 20) return REDACTED;
  if (typeof value === 'string') return options.urls === false ? value : redactUrlsInText(value);
  if (Array.isArray(value)) return value.map((v) => redactForRecord(v, options, depth + 1));
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const declared = recordKindOf(key);
    if (!declared) out[key] = redactForRecord(v, options, depth + 1);
    else if (declared.kind === 'url') out[key] = eachSide(v, (x) => (typeof x === 'string' ? redactUrlSecrets(x) : redactLeaves(x)));
    else if (declared.kind === 'map') out[key] = eachSide(v, (x) => maskMap(x, declared.publicKeys, REDACTED));
    else out[key] = redactLeaves(v);
  }
  return out;
}

/** Property names the logger redacts wherever they appear (declared secrets and the usual credential names). */
export function secretPropertyNames(): string[] {
  const names = new Set(['password', 'token', 'secret', 'apiKey', 'apiToken', 'clientSecret', 'accessKeySecret', 'credentials']);
  for (const d of DECLARED) if (d.options.kind === 'value') names.add(d.property);
  return [...names].sort();
}
