import type { OpenAPIObject } from '@nestjs/swagger';
import { PLAIN_TEXT_SENTENCE } from './names';
import { SecretExtension, secretSentence } from './secret-fields';
import { getMetadataStorage } from 'class-validator';
import { toOpenApi31 } from './openapi-31';
import { addExamples } from './openapi-examples';

/**
 * Document-wide finishing touches on the generated OpenAPI document. Each operation's own facts are declared on
 * its handler (@ApiDoc, @ApiPageResponse, @ApiStandardErrors, @ApiParam, @ApiSecurity, @ApiTags), and what
 * its guards imply (who may call it, paging, READ_ONLY, 401/403, `security: []` when public) is generated from
 * the route metadata by route-docs.ts. What remains here is what a decorator cannot express, or could only by
 * repeating the same decorator on every operation or parameter:
 * - the document-level objects: tag order and descriptions, `servers`, the error examples and headers under
 *   `components`, and the security schemes of the alert webhook's own tenant token;
 * - rules over every operation: the one error body and example per status; 400/404/500 everywhere; 413 and 415
 *   where a body is taken; Retry-After on 429; the RateLimit headers on every metered answer;
 * - rules over every path parameter of a name: slugs typed with their pattern and a coherent example set,
 *   `...Identity` as UUIDs (one rule per name instead of an @ApiParam copy in each controller);
 * - bounds stated from facts: what the class-validator decorators of request DTOs enforce, UUID and path
 *   parameter lengths, integer formats and ranges (applyBounds).
 */

/**
 * Tag order in Swagger UI: the order a newcomer needs them, with what each group is for. What a cluster names comes
 * before it (environments, cloud accounts, maintenance schedules), so that going through the page backwards, as
 * `terraform destroy` and test/browser's DELETEs do, deletes the cluster before what it used.
 */
export const TAGS: { name: string; description: string }[] = [
  { name: 'Organisations', description: 'Organisations, their quotas, compute and agreements (OWNER deletes, ADMIN changes)' },
  { name: 'Organisation members', description: 'Members and their roles (OWNER, ADMIN, MEMBER, VIEWER)' },
  { name: 'Personal access tokens', description: "The caller's own tokens (FULL_ACCESS or READ_ONLY)" },
  { name: 'Users', description: 'User search, and adding users (platform administrators)' },
  { name: 'Catalog', description: 'Cloud providers, regions, node types, cloud profiles, cluster versions and update channels: what a cluster can be made of' },
  { name: 'Environments', description: 'Environments of an organisation and their member overrides' },
  { name: 'Cloud accounts', description: 'Cloud accounts and their credentials (ADMIN changes)' },
  { name: 'Maintenance schedules', description: 'Weekly maintenance windows with time zones and exclusions' },
  { name: 'Clusters', description: 'Clusters: create, change, stop, start and delete; provisioning moves them through their states' },
  { name: 'Node pools', description: 'Node pools of a cluster' },
  { name: 'Scheduled cluster upgrades', description: 'Upgrades planned by the scheduler or an administrator, and their states' },
  { name: 'Observability', description: 'Monitoring tenants, alerting configuration, alerts and silences' },
  { name: 'Integrations', description: 'Dashboard and organisation integrations' },
  { name: 'Webhooks', description: 'Signed CloudEvents to outside receivers, at least once' },
  { name: 'Audit events', description: 'The full audit trail of an organisation and its clusters' },
  { name: 'Activity', description: 'The human-readable activity feed' },
  { name: 'Usage and statements', description: 'Usage from the ledger, priced with the price book, and monthly statements (VIEWER reads)' },
  { name: 'Platform administration', description: 'Operations for platform administrators only (/admin/v1)' },
  { name: 'Health', description: 'Liveness and readiness for orchestrators (no credential needed)' },
];

const ERROR_TEXT: Record<string, [string, string]> = {
  '400': ['Bad Request', 'Invalid request: name must be longer than or equal to 3 characters'],
  '401': ['Unauthorized', 'A valid personal access token or OIDC token is required'],
  '403': ['Forbidden', 'Your role in organisation acme (VIEWER) does not allow this; MEMBER or above is required'],
  '404': ['Not Found', "Cluster 'web' was not found in environment 'production'"],
  '409': ['Conflict', 'The request conflicts with the current state of the resource'],
  '413': ['Payload Too Large', 'The request body is larger than 1048576 bytes'],
  '415': ['Unsupported Media Type', 'Send the body as application/json'],
  '429': ['Too Many Requests', 'Rate limit exceeded; retry after the number of seconds in Retry-After'],
  '500': ['Internal Server Error', 'An unexpected error occurred; quote the X-Request-Id when reporting it'],
  '503': ['Service Unavailable', 'The database is unavailable: the connection to the database was lost (57P01); retry in 2 s.'],
};

/**
 * RateLimit headers (IETF draft "RateLimit header fields for HTTP"), sent when RATE_LIMIT_PER_MINUTE > 0 on the
 * answers to requests that were counted: after authentication the user's budget, on a 401 the address's
 * failed-authentication budget, for anonymous callers the per-address budget (src/auth/request-rate-limits.ts,
 * src/http-hardening.ts). Public operations (health, the alert webhook) are not metered this way and do not list them.
 */
const COUNT = { type: 'integer', format: 'int32', minimum: 0, maximum: 2147483647 };
const RATE_LIMIT_HEADERS: Record<string, { description: string; schema: Record<string, unknown> }> = {
  'RateLimit-Limit': { description: 'Requests the budget allows per window (60 s); sent while rate limiting is on', schema: COUNT },
  'RateLimit-Remaining': { description: 'Requests left in the current window', schema: COUNT },
  'RateLimit-Reset': { description: 'Seconds until the current window ends and the budget is full again', schema: { ...COUNT, maximum: 60 } },
  'Retry-After': { description: 'Seconds until a retry can succeed', schema: { ...COUNT, minimum: 1, maximum: 60 } },
};
const RATE_LIMIT_HEADER_REFS = Object.fromEntries(
  ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'].map((name) => [name, { $ref: `#/components/headers/${name}` }]),
);

/**
 * Security schemes of a credential that is not a user's: the alert webhook checks its tenant's token (its handler
 * names them with @ApiSecurity). The node join token is declared with the user credentials in app.factory.ts.
 */
const OWN_CREDENTIAL_SCHEMES = {
  alertWebhookToken: {
    type: 'http' as const,
    scheme: 'bearer',
    description: "The monitoring tenant's alert webhook token (POST .../monitoring/{tenantSlug}/alert-webhook-token issues it)",
  },
  alertWebhookTokenHeader: {
    type: 'apiKey' as const,
    in: 'header',
    name: 'X-Alert-Token',
    description: "The monitoring tenant's alert webhook token, in X-Alert-Token instead of Authorization",
  },
};

const SLUG_SCHEMA = { type: 'string', pattern: '^[a-z0-9-_]+$', maxLength: 130 };
/** The path parameters that hold a slug (they get SLUG_SCHEMA). */
export const SLUG_PATH_PARAMETERS = ['organisationSlug', 'environmentSlug', 'clusterSlug', 'cluster', 'tenantSlug', 'integrationSlug'] as const;
export type SlugPathParameter = (typeof SLUG_PATH_PARAMETERS)[number];
const isSlugParameter = (name: string): name is SlugPathParameter => (SLUG_PATH_PARAMETERS as readonly string[]).includes(name);

/**
 * Examples of path parameters, registered by the app (src/app.factory.ts hands in the demo organisation's names and
 * identities, src/demo/demo-identities.ts), so that Try it out works on a fresh install. The ground layer does not
 * know the demo: without a registration the parameters simply have no example.
 */
export interface PathParameterExamples {
  slugs: Partial<Record<SlugPathParameter, string>>;
  /** The example of a UUID path parameter of the operation at `path`. */
  identity(path: string, name: string): string | undefined;
}
const NO_EXAMPLES: PathParameterExamples = { slugs: {}, identity: () => undefined };

const REGISTERED_IDENTITY = /^<registered identity: ([A-Za-z]+)>$/;
/**
 * A value of a request body example that is the registered identity of this name (in the document: the demo
 * organisation's, as for the path parameter of the same name), e.g. `cloudAccountIdentity: registeredIdentity('cloudAccountIdentity')`.
 * polishOpenApi fills it in, and drops the property when no identity of that name is registered.
 */
export const registeredIdentity = (name: string): string => `<registered identity: ${name}>`;

/** Fills the registered identities into an example value (in place, so each property keeps its place). */
function fillRegisteredIdentities(value: unknown, path: string, examples: PathParameterExamples): void {
  if (!value || typeof value !== 'object') return;
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    const name = typeof v === 'string' ? REGISTERED_IDENTITY.exec(v)?.[1] : undefined;
    if (!name) fillRegisteredIdentities(v, path, examples);
    else {
      const identity = examples.identity(path, name);
      if (identity === undefined) delete (value as Record<string, unknown>)[key];
      else (value as Record<string, unknown>)[key] = identity;
    }
  }
}

type Schema = Record<string, unknown> & { type?: string | string[]; properties?: Record<string, Schema>; items?: Schema };

/**
 * The UUID properties of a request body schema (followed through references, `allOf` and arrays) that name a
 * registered identity (`maintenanceScheduleIdentity`, `clusterIdentity`, ...) and have no example get it, so the
 * body Swagger UI builds from the schema addresses the demo's resource instead of a random UUID (and, where the
 * body repeats the path's identity, the same one).
 */
function identityPropertyExamples(doc: OpenAPIObject, root: unknown, path: string, examples: PathParameterExamples): void {
  const schemas = (doc.components?.schemas ?? {}) as Record<string, Schema>;
  const seen = new Set<unknown>();
  // A bare `identity` names the path's resource only at the body's top level (a nested one is another resource's).
  const visit = (node: unknown, top: boolean): void => {
    if (!node || typeof node !== 'object' || seen.has(node)) return;
    seen.add(node);
    const s = node as Schema & { $ref?: string; allOf?: unknown[] };
    if (typeof s.$ref === 'string') return visit(schemas[s.$ref.slice(s.$ref.lastIndexOf('/') + 1)], top);
    for (const part of s.allOf ?? []) visit(part, top);
    visit(s.items, false);
    for (const [name, prop] of Object.entries(s.properties ?? {})) {
      if ((prop.format === 'uuid' || prop.type === 'string') && prop.example === undefined && prop.enum === undefined && (top || name !== 'identity')) {
        const identity = examples.identity(path, name);
        if (identity !== undefined) prop.example = identity;
      }
      visit(prop, false);
    }
  };
  visit(root, true);
}

type Operation = {
  tags?: string[];
  parameters?: { name: string; in: string; schema?: Record<string, unknown>; required?: boolean; example?: unknown }[];
  requestBody?: unknown;
  responses: Record<string, { description?: string; content?: Record<string, { schema?: unknown; example?: unknown; examples?: Record<string, unknown> }>; headers?: Record<string, unknown> }>;
};

/** The header an answer replayed for an Idempotency-Key carries. */
const IDEMPOTENCY_HEADERS = {
  'Idempotent-Replayed': {
    description: 'Present (`true`) when this is the stored answer of an earlier request with the same Idempotency-Key',
    schema: { type: 'string', enum: ['true'] },
  },
};

/**
 * The Idempotency-Key header parameter (IETF httpapi draft; Stripe's behaviour), its 409 and 422 answers and the
 * replay header on its successful answers.
 */
function addIdempotencyKey(op: Operation): void {
  op.parameters = [
    ...(op.parameters ?? []),
    {
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'Makes a retry of this request safe: the first successful answer is stored for 24 h with the key (per caller) and ' +
        'answered again, with `Idempotent-Replayed: true`, to a repeat with the same key and request, also when the first ' +
        'answer was lost (a 503 after the change committed). The same key with another request is 422; a repeat while the ' +
        'first is in flight is 409. Errors are not stored. 1 to 255 visible ASCII characters, bare or as a quoted string; a UUID per request ' +
        '(e.g. 8e03978e-40d5-43e8-bc93-6894a57f9324) is a good key.',
      // No example: Swagger UI would pre-fill the same key into every operation's Try it out, and every write after the
      // first would be 422 (the key used for another request).
      schema: { type: 'string', minLength: 1, maxLength: 257, pattern: '^[!-~]+$' },
    } as never,
  ];
  const inFlight = 'a request with the same Idempotency-Key is still being processed (retry after Retry-After)';
  const conflict = op.responses['409'];
  if (conflict) conflict.description = `${(conflict.description ?? 'Conflict').replace(/\.$/, '')}; or ${inFlight}`;
  else op.responses['409'] = { description: `The request conflicts: ${inFlight}` };
  op.responses['409'].headers = { ...(op.responses['409'].headers ?? {}), 'Retry-After': { $ref: '#/components/headers/Retry-After' } };
  const reused = 'the Idempotency-Key was used for another request (method, path or body) within the last 24 h';
  const unprocessable = op.responses['422'];
  if (unprocessable) unprocessable.description = `${(unprocessable.description ?? 'Unprocessable').replace(/\.$/, '')}; or ${reused}`;
  else
    op.responses['422'] = {
      description: `Unprocessable: ${reused}`,
      content: {
        'application/json': {
          schema: { $ref: '#/components/schemas/ErrorBodyDto' },
          example: {
            timestamp: '2026-11-23T10:00:00.000Z',
            status: 422,
            error: 'Unprocessable Entity',
            message: 'This Idempotency-Key was used for another request (POST /api/v1/orgs/acme/environments with another body) within the last 24 h; use a new key for a new request.',
            path: '/api/v1/orgs/acme/environments',
          },
        },
      },
    };
  for (const [status, response] of Object.entries(op.responses)) {
    if (/^2/.test(status)) response.headers = { ...(response.headers ?? {}), 'Idempotent-Replayed': { $ref: '#/components/headers/Idempotent-Replayed' } };
  }
}

export function polishOpenApi(doc: OpenAPIObject, publicOps: Set<string>, examples: PathParameterExamples = NO_EXAMPLES): OpenAPIObject {
  const used = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, raw] of Object.entries(item as Record<string, Operation>)) {
      if (!raw || typeof raw !== 'object' || !('responses' in raw)) continue;
      const op = raw;
      for (const t of op.tags ?? []) used.add(t);
      for (const p of op.parameters ?? []) {
        if (p.in !== 'path') continue;
        const schema = { ...(p.schema ?? {}) };
        if (isSlugParameter(p.name)) {
          Object.assign(schema, { ...SLUG_SCHEMA, ...schema, type: 'string' });
          const slugExample = examples.slugs[p.name];
          if (slugExample !== undefined && p.example === undefined && schema.example === undefined) p.example = slugExample;
        }
        else if (p.name === 'nodePoolIdentity') {
          // The original client addresses node pools by their numeric id; the identity (UUID) works too.
          Object.assign(schema, { type: 'string', pattern: '^([0-9]{1,18}|[0-9a-fA-F-]{36})$', maxLength: 36 });
          delete schema.format;
        } else if (/Identity$/.test(p.name)) Object.assign(schema, { type: 'string', format: 'uuid' });
        else if (!schema.type) schema.type = 'string';
        // UUID parameters pre-fill the demo organisation's resource (created on a fresh install), so Try it out works.
        const identityExample = examples.identity(path, p.name);
        if (identityExample && p.example === undefined && schema.example === undefined) p.example = identityExample;
        p.schema = schema;
        p.required = true;
      }
      // Every operation may answer 400, 404 and 500 (401 and 403 follow from its guards: route-docs.ts).
      op.responses['400'] ??= { description: 'Invalid request (path, query or body); `errors` names each field' };
      op.responses['404'] ??= { description: 'The organisation or a resource named in the path does not exist (or is not visible to the caller)' };
      op.responses['500'] ??= { description: 'Internal server error' };
      if (op.requestBody) {
        for (const media of Object.values((op.requestBody as { content?: Record<string, { schema?: unknown; example?: unknown; examples?: Record<string, { value?: unknown }> }> }).content ?? {})) {
          fillRegisteredIdentities(media.example, path, examples);
          for (const e of Object.values(media.examples ?? {})) fillRegisteredIdentities(e.value, path, examples);
          if (media.example === undefined && media.examples === undefined) identityPropertyExamples(doc, media.schema, path, examples);
        }
        op.responses['413'] ??= { description: 'The body is larger than BODY_LIMIT_BYTES' };
        op.responses['415'] ??= { description: 'The body is not JSON (Content-Type must be application/json)' };
      }
      if (op.responses['429']) {
        op.responses['429'].headers = { 'Retry-After': { $ref: '#/components/headers/Retry-After' } };
      }
      // A database that cannot be used now (lost, refused, read-only, too slow) is a 503 with Retry-After.
      if (op.responses['503']) {
        op.responses['503'].headers = { ...(op.responses['503'].headers ?? {}), 'Retry-After': { $ref: '#/components/headers/Retry-After' } };
      }
      // POST and PATCH take an Idempotency-Key from authenticated callers (src/idempotency/, docs/api.md).
      if ((method === 'post' || method === 'patch') && !publicOps.has(`${method} ${path}`)) addIdempotencyKey(op);
      // Rate limits apply to every operation that needs a credential (see RATE_LIMIT_HEADERS).
      if (!publicOps.has(`${method} ${path}`)) {
        for (const [status, response] of Object.entries(op.responses)) {
          if (/^[24]/.test(status)) response.headers = { ...(response.headers ?? {}), ...RATE_LIMIT_HEADER_REFS };
        }
      }
      for (const [status, response] of Object.entries(op.responses)) {
        if (!ERROR_TEXT[status]) continue;
        response.content = {
          'application/json': { schema: { $ref: '#/components/schemas/ErrorBodyDto' }, examples: { error: { $ref: `#/components/examples/Error${status}` } } },
        };
      }
    }
  }
  doc.components ??= {};
  doc.components.headers = { ...(doc.components.headers ?? {}), ...RATE_LIMIT_HEADERS, ...IDEMPOTENCY_HEADERS };
  doc.components.securitySchemes = { ...(doc.components.securitySchemes ?? {}), ...OWN_CREDENTIAL_SCHEMES };
  doc.components.examples = Object.fromEntries(
    Object.entries(ERROR_TEXT).map(([status, [error, message]]) => [
      `Error${status}`,
      {
        summary: `${status} ${error}`,
        value: {
          timestamp: '2026-11-23T10:00:00.000Z',
          status: Number(status),
          error,
          message,
          path: '/api/v1/orgs/acme/clusters/production/web',
          ...(status === '400' ? { errors: [{ field: 'name', message: 'name must be longer than or equal to 3 characters' }] } : {}),
        },
      },
    ]),
  );
  const known = TAGS.filter((t) => used.has(t.name));
  const extra = [...used].filter((t) => !TAGS.some((k) => k.name === t)).sort().map((name) => ({ name, description: name }));
  doc.tags = [...known, ...extra];
  // One server: the deployment that serves this document, whichever environment that is; the API is for outside callers.
  doc.servers = [
    { url: '/', description: 'The deployment serving this document (production, staging or local alike)', 'x-internal': false } as never,
  ];
  applyBounds(doc);
  addExamples(doc);
  describeMarkedProperties(doc);
  // Last: the document is OpenAPI 3.1 (JSON Schema 2020-12), so `null` is expressed the standard way.
  return toOpenApi31(doc);
}

/**
 * Properties marked by the shared declarations say so in their description: secrets (@Secret, `x-secret`) how the
 * service handles them, plain-text names (@IsPlainText, `x-plain-text`) which characters are refused.
 */
function describeMarkedProperties(doc: OpenAPIObject): void {
  const append = (prop: Schema, sentence: string) => {
    const description = typeof prop.description === 'string' ? prop.description.trim() : '';
    if (!description.includes(sentence)) prop.description = description ? `${description.replace(/\.?$/, '.')} ${sentence}` : sentence;
  };
  for (const schema of Object.values((doc.components?.schemas ?? {}) as Record<string, Schema>)) {
    for (const prop of Object.values(schema.properties ?? {})) {
      const x = prop['x-secret'] as SecretExtension | undefined;
      if (x) append(prop, secretSentence(x));
      if (prop['x-plain-text']) append(prop, PLAIN_TEXT_SENTENCE);
    }
  }
}

// ---- Bounds (OWASP API4:2023, unrestricted resource consumption) -------------------------------------------

/** The longest path parameter the router accepts (`maxParamLength` of the Fastify adapter in app.factory.ts). */
export const MAX_PATH_PARAM_LENGTH = 1000;
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;
/** A UUID in its canonical text form. */
const UUID_LENGTH = 36;

function isType(schema: Schema | undefined, type: string): boolean {
  return !!schema && (schema.type === type || (Array.isArray(schema.type) && schema.type.includes(type)));
}

/** Calls `visit` on every schema object under `node` (properties, items, allOf/oneOf/anyOf, additionalProperties). */
function walkSchemas(node: unknown, visit: (schema: Schema) => void): void {
  if (Array.isArray(node)) {
    for (const n of node) walkSchemas(n, visit);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const schema = node as Schema;
  if (typeof schema.type === 'string' || Array.isArray(schema.type)) visit(schema);
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'example' || key === 'examples' || key === 'default' || key === 'enum') continue;
    walkSchemas(value, visit);
  }
}

/** Every `#/components/schemas/X` reachable from `node`, following references transitively. */
function collectSchemaRefs(node: unknown, schemas: Record<string, unknown>, out: Set<string>): void {
  if (Array.isArray(node)) {
    for (const n of node) collectSchemaRefs(n, schemas, out);
    return;
  }
  if (!node || typeof node !== 'object') return;
  for (const [key, value] of Object.entries(node)) {
    if (key === '$ref' && typeof value === 'string' && value.startsWith('#/components/schemas/')) {
      const name = value.slice('#/components/schemas/'.length);
      if (!out.has(name)) {
        out.add(name);
        collectSchemaRefs(schemas[name], schemas, out);
      }
    } else collectSchemaRefs(value, schemas, out);
  }
}

function operationsOf(doc: OpenAPIObject): Operation[] {
  return Object.values(doc.paths).flatMap((item) =>
    Object.values(item as Record<string, Operation>).filter((op) => !!op && typeof op === 'object' && 'responses' in op),
  );
}

/** Component schemas a client sends: reachable from a request body or a parameter. */
export function requestSchemaNames(doc: OpenAPIObject): Set<string> {
  const schemas = (doc.components?.schemas ?? {}) as Record<string, unknown>;
  const out = new Set<string>();
  for (const op of operationsOf(doc)) {
    collectSchemaRefs(op.requestBody, schemas, out);
    collectSchemaRefs(op.parameters, schemas, out);
  }
  return out;
}

/** Component schemas that only describe answers (no request body or parameter reaches them), sorted. */
export function responseOnlySchemaNames(doc: OpenAPIObject): string[] {
  const requests = requestSchemaNames(doc);
  return Object.keys(doc.components?.schemas ?? {})
    .filter((name) => !requests.has(name))
    .sort();
}

type ValidationMeta = { name?: string; propertyName: string; constraints?: unknown[]; each?: boolean };
type ValidationStorage = {
  validationMetadatas: Map<new (...args: never[]) => unknown, unknown[]>;
  getTargetValidationMetadatas(target: unknown, schema: string, always: boolean, strictGroups: boolean): ValidationMeta[];
};

function setMissing(schema: Schema, key: string, value: unknown): void {
  if (schema[key] === undefined && value !== undefined && value !== null) schema[key] = value;
}

/**
 * Writes the bounds the class-validator decorators of a request DTO enforce (Length, MaxLength, ArrayMaxSize,
 * Min, Max, IsUUID, IsEmail, Matches) into its schema where the @ApiProperty does not state them, so the document says what the
 * service checks, in every module, without repeating each bound in two decorators.
 */
function applyValidatorBounds(schemas: Record<string, Schema>, requests: Set<string>): void {
  const storage = getMetadataStorage() as unknown as ValidationStorage;
  for (const target of storage.validationMetadatas.keys()) {
    const schema = schemas[target.name];
    if (!requests.has(target.name) || !schema?.properties) continue;
    for (const meta of storage.getTargetValidationMetadatas(target, '', true, false)) {
      const prop = schema.properties[meta.propertyName];
      if (!prop || !meta.name) continue;
      const node = meta.each ? (isType(prop, 'array') ? prop.items : undefined) : prop;
      if (!node || node.$ref) continue;
      const [a, b] = meta.constraints ?? [];
      const text = isType(node, 'string');
      const number = isType(node, 'integer') || isType(node, 'number');
      switch (meta.name) {
        case 'maxLength':
          if (text) setMissing(node, 'maxLength', a);
          break;
        case 'isLength':
          if (text) {
            setMissing(node, 'maxLength', b);
            if (typeof a === 'number' && a > 0) setMissing(node, 'minLength', a);
          }
          break;
        case 'isUuid':
          if (text) setMissing(node, 'maxLength', UUID_LENGTH);
          break;
        case 'isEmail':
          if (text) setMissing(node, 'format', 'email');
          break;
        case 'matches':
          // A pattern with flags (e.g. /i) would be stricter in the document than in the service: left out.
          if (text && a instanceof RegExp && !a.flags) setMissing(node, 'pattern', a.source);
          break;
        case 'arrayMaxSize':
          if (isType(prop, 'array')) setMissing(prop, 'maxItems', a);
          break;
        case 'max':
          if (number) setMissing(node, 'maximum', a);
          break;
        case 'min':
          if (number) setMissing(node, 'minimum', a);
          break;
      }
    }
  }
}

/** int32 when the stated range fits in it, else int64; nothing when no range is stated. */
function integerFormat(schema: Schema): 'int32' | 'int64' | undefined {
  const min = schema.minimum as number | undefined;
  const max = schema.maximum as number | undefined;
  if (min === undefined || max === undefined) return undefined;
  return min >= INT32_MIN && max <= INT32_MAX ? 'int32' : 'int64';
}

/**
 * Bounds stated from facts rather than guessed:
 * - request DTOs get the bounds their validators enforce (above);
 * - a string in UUID format is at most 36 characters;
 * - a path parameter is at most MAX_PATH_PARAM_LENGTH characters (the router refuses longer ones);
 * - an integer with a stated range gets the format (int32 or int64) that holds it;
 * - integers of response-only schemas without a range get the natural range of what the service sends:
 *   counts and sizes from 0 (int32 when not stated otherwise, int64 keeps int64) up to the format's maximum
 *   (int64 up to 2^53 - 1, the largest integer a JSON number from this service can carry exactly).
 */
function applyBounds(doc: OpenAPIObject): void {
  const schemas = (doc.components?.schemas ?? {}) as Record<string, Schema>;
  const requests = requestSchemaNames(doc);
  applyValidatorBounds(schemas, requests);
  const uuidAndIntegers = (schema: Schema) => {
    if (isType(schema, 'string') && schema.format === 'uuid') setMissing(schema, 'maxLength', UUID_LENGTH);
    if (isType(schema, 'integer')) setMissing(schema, 'format', integerFormat(schema));
  };
  walkSchemas(schemas, uuidAndIntegers);
  for (const op of operationsOf(doc)) {
    for (const p of op.parameters ?? []) {
      const schema = p.schema as Schema | undefined;
      if (!schema) continue;
      if (p.in === 'path' && isType(schema, 'string')) setMissing(schema, 'maxLength', MAX_PATH_PARAM_LENGTH);
      walkSchemas(schema, uuidAndIntegers);
    }
    walkSchemas(op.requestBody, uuidAndIntegers);
    walkSchemas(op.responses, uuidAndIntegers);
  }
  const responseOnly = responseOnlySchemaNames(doc);
  const natural = (schema: Schema) => {
    if (!isType(schema, 'integer')) return;
    setMissing(schema, 'format', 'int32');
    setMissing(schema, 'minimum', 0);
    setMissing(schema, 'maximum', schema.format === 'int64' ? Number.MAX_SAFE_INTEGER : INT32_MAX);
  };
  for (const name of responseOnly) walkSchemas(schemas[name], natural);
  for (const op of operationsOf(doc)) for (const r of Object.values(op.responses)) walkSchemas(r.content, natural);
}
