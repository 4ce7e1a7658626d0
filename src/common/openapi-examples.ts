import type { OpenAPIObject } from '@nestjs/swagger';

/**
 * Example values a person can read. Swagger UI samples a number from its schema's `maximum` when no example is
 * given, so documented bounds (int32 and int64 maxima, see applyBounds) would show as `2147483647`; and it shows a
 * page with one sampled item whatever its counts say. So, after the bounds are in place:
 * - every integer or number with a `maximum` and no example gets one: a realistic value for its property name
 *   (NUMBER_EXAMPLES), else the smallest value its range allows from 1;
 * - every response that is a page gets a whole example: two items sampled from the item schema, with the counts
 *   that go with them (numberOfElements 2, totalElements 2, one page).
 */

type Schema = Record<string, unknown> & {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  additionalProperties?: Schema | boolean;
};

/** Realistic values for the numeric properties (and parameters, headers) of the document, by name. */
const NUMBER_EXAMPLES: Record<string, number> = {
  id: 42,
  cpu: 4,
  memory: 16384,
  clusterCount: 3,
  offset: 0,
  page: 0,
  pageNumber: 0,
  size: 50,
  pageSize: 50,
  number: 0,
  numberOfElements: 2,
  totalElements: 2,
  totalPages: 1,
  poolID: 7,
  firing: 2,
  resolved: 1,
  suppressed: 0,
  totalClusters: 3,
  totalCpu: 24,
  totalMemory: 98304,
  actorId: 7,
  clusterId: 12,
  clusterNodePoolId: 31,
  customerId: 3,
  environmentId: 5,
  duration: 240,
  minSize: 1,
  maxSize: 3,
  nodeCount: 3,
  revoked: 2,
  truncatedAlerts: 0,
  attempts: 1,
  count: 3,
  status: 200,
  'RateLimit-Limit': 600,
  'RateLimit-Remaining': 599,
  'RateLimit-Reset': 42,
  'Retry-After': 30,
};

/** Realistic values for text properties without an example, format or enum, by name (the demo organisation's world). */
const STRING_EXAMPLES: Record<string, string> = {
  name: 'web',
  description: 'Serves the public website',
  version: '1.31.6',
  kubeletVersion: 'v1.31.6',
  environmentSlug: 'production',
  clusterSlug: 'web',
  slug: 'web',
  customerSlug: 'acme',
  customer: 'acme',
  username: 'jane.doe',
  displayName: 'Main account',
  clusterName: 'web',
  cloudAccountName: 'Main account',
  billingEmail: 'billing@acme.example',
  contactEmail: 'ops@acme.example',
  email: 'jane.doe@acme.example',
  phoneNumber: '+31 20 123 4567',
  vatCode: 'NL123456789B01',
  companyName: 'Acme B.V.',
  companyAddress: 'Keizersgracht 1, 1015 AA Amsterdam',
  organisationName: 'Acme',
  message: 'Done',
  poolName: 'default',
  clusterNodePoolName: 'default',
  region: 'eu-west-1',
  availabilityZone: 'eu-west-1a',
  nodeSize: 'm5.xlarge',
  purpose: 'Customer-facing services',
  reason: 'A newer patch version is available',
  disabledReason: 'Disabled by a platform administrator',
  ipWhiteList: '203.0.113.0/24',
  ipRestriction: '203.0.113.0/24',
  address: '203.0.113.10',
  datasourcePrefix: 'acme',
  statusMessage: 'Reachable',
  url: 'https://dashboards.acme.example',
  comment: 'Planned maintenance of the ingress',
  receiver: 'acme-production',
  lastError: 'connect ECONNREFUSED 203.0.113.10:443',
};

/** The int32 and int64 (JSON-safe) maxima: never an example. */
export const NUMERIC_MAXIMA = [2147483647, 9007199254740991, 9223372036854775807];

const isNumeric = (s: Schema) =>
  s.type === 'integer' || s.type === 'number' || (Array.isArray(s.type) && (s.type.includes('integer') || s.type.includes('number')));

function numberExample(name: string | undefined, schema: Schema): number {
  const min = typeof schema.minimum === 'number' ? schema.minimum : undefined;
  const max = typeof schema.maximum === 'number' ? schema.maximum : undefined;
  const named = name !== undefined ? NUMBER_EXAMPLES[name] : undefined;
  let value = named ?? Math.max(1, min ?? 1);
  if (min !== undefined && value < min) value = min;
  if (max !== undefined && value > max) value = max;
  return value;
}

/** Walks schemas, with the property (or parameter, header) name each one describes. */
function walkNamed(node: unknown, name: string | undefined, visit: (schema: Schema, name: string | undefined) => void): void {
  if (Array.isArray(node)) {
    for (const n of node) walkNamed(n, name, visit);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const obj = node as Schema;
  visit(obj, name);
  for (const [key, value] of Object.entries(obj)) {
    if (key === 'properties' && value && typeof value === 'object') {
      for (const [prop, schema] of Object.entries(value as Record<string, unknown>)) walkNamed(schema, prop, visit);
    } else if (key === 'parameters' && Array.isArray(value)) {
      for (const p of value as { name?: string; schema?: unknown }[]) walkNamed(p.schema, p.name, visit);
    } else if (key === 'headers' && value && typeof value === 'object') {
      for (const [header, h] of Object.entries(value as Record<string, { schema?: unknown }>)) walkNamed(h?.schema, header, visit);
    } else if (['items', 'allOf', 'oneOf', 'anyOf', 'schema', 'additionalProperties'].includes(key)) walkNamed(value, name, visit);
    else if (!['example', 'examples', 'default', 'enum', 'const'].includes(key) && !key.startsWith('x-')) walkNamed(value, undefined, visit);
  }
}

// ---- Sampling a value from a schema (for page examples) ------------------------------------------------------

const SECOND_UUID_SUFFIX = 'b7e2';
const RENAMED_SECOND: Record<string, string> = { web: 'api', production: 'staging', default: 'batch', 'm5.xlarge': 'm5.2xlarge', '2026-11': '2026-10' };

/** A second, different value of a sampled string (the second item of a page). */
function secondString(key: string | undefined, value: string, format: unknown): string {
  if (format === 'uuid' && /^[0-9a-f-]{36}$/i.test(value)) return value.slice(0, 32) + SECOND_UUID_SUFFIX;
  if (key && /^(name|slug|slugValue|displayName|username|clusterSlug|poolName|type|period)$/.test(key)) return RENAMED_SECOND[value] ?? `${value}-2`;
  if (key === 'version' && /^v?\d+\.\d+\.\d+$/.test(value)) return value.replace(/\d+$/, (patch) => String(Number(patch) + 1));
  return value;
}

const STRING_BY_FORMAT: Record<string, string> = {
  'date-time': '2026-11-23T10:00:00.000Z',
  date: '2026-11-23',
  uuid: '8f0d1c52-3b1e-4a52-9d0e-5c7a1e2f4b60',
  email: 'ops@acme.example',
  uri: 'https://dashboards.acme.example',
  url: 'https://dashboards.acme.example',
  ipv4: '203.0.113.10',
};

class Sampler {
  constructor(private readonly schemas: Record<string, Schema>) {}

  sample(schema: Schema | undefined, key: string | undefined, second: boolean, depth = 0): unknown {
    if (!schema || depth > 12) return undefined;
    if (schema.$ref) return this.sample(this.schemas[schema.$ref.slice(schema.$ref.lastIndexOf('/') + 1)], key, second, depth + 1);
    const nullable = (Array.isArray(schema.type) && schema.type.includes('null')) || schema.oneOf?.some((s) => s.type === 'null');
    // What has not happened yet reads as null (a live resource has no deletedAt).
    if (nullable && key && /^(deleted|ended|ends|revoked|expired)/.test(key)) return null;
    if (schema.example !== undefined) {
      const ex = schema.example;
      if (!second) return ex;
      if (typeof ex === 'string') return secondString(key, ex, schema.format);
      if (typeof ex === 'number' && key === 'id') return ex + 1;
      return ex;
    }
    if (schema.allOf) {
      const parts = schema.allOf.map((s) => this.sample(s, key, second, depth + 1));
      if (parts.every((p) => p && typeof p === 'object' && !Array.isArray(p))) return Object.assign({}, ...parts);
      return parts.find((p) => p !== undefined);
    }
    for (const alt of [schema.oneOf, schema.anyOf]) {
      if (alt) return this.sample(alt.find((s) => s.type !== 'null') ?? alt[0], key, second, depth + 1);
    }
    if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum.find((v) => v !== null) ?? null;
    if (schema.default !== undefined) return schema.default;
    const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
    if (type === 'object' || schema.properties) {
      const out: Record<string, unknown> = {};
      for (const [prop, s] of Object.entries(schema.properties ?? {})) {
        const v = this.sample(s, prop, second, depth + 1);
        if (v !== undefined) out[prop] = v;
      }
      return out;
    }
    if (type === 'array') {
      const item = this.sample(schema.items, key, second, depth + 1);
      return item === undefined ? [] : [item];
    }
    if (type === 'string') {
      const v = (typeof schema.format === 'string' && STRING_BY_FORMAT[schema.format]) || 'string';
      return second ? secondString(key, v, schema.format) : v;
    }
    if (type === 'integer' || type === 'number') {
      const v = numberExample(key, schema);
      return second && key === 'id' ? v + 1 : v;
    }
    if (type === 'boolean') return true;
    return undefined;
  }
}

/** A page schema as ApiPageResponse writes it: allOf [envelope, {properties: {content: {items}}}]. */
function pageItems(schema: Schema | undefined): Schema | undefined {
  const parts = schema?.allOf;
  if (!parts || parts.length !== 2 || !parts[0].$ref || !/\/PageForm[AB]Dto$/.test(parts[0].$ref)) return undefined;
  return parts[1].properties?.content?.items;
}

/** Adds the examples described above to the document, in place. */
export function addExamples(doc: OpenAPIObject): void {
  const schemas = (doc.components?.schemas ?? {}) as Record<string, Schema>;
  const numbers = (schema: Schema, name: string | undefined) => {
    if (isNumeric(schema) && schema.maximum !== undefined && schema.example === undefined && schema.default === undefined) {
      schema.example = numberExample(name, schema);
    }
  };
  const text = (schema: Schema, name: string | undefined) => {
    const type = schema.type;
    const isText = type === 'string' || (Array.isArray(type) && type.includes('string'));
    if (!isText || !name || !(name in STRING_EXAMPLES) || schema.example !== undefined) return;
    if (schema.enum !== undefined || schema.format !== undefined || schema.default !== undefined || schema.pattern !== undefined) return;
    const value = STRING_EXAMPLES[name];
    if (typeof schema.maxLength === 'number' && value.length > schema.maxLength) return;
    if (typeof schema.minLength === 'number' && value.length < schema.minLength) return;
    schema.example = value;
  };
  for (const visit of [numbers, text]) {
    walkNamed(doc.components, undefined, visit);
    walkNamed(doc.paths, undefined, visit);
  }
  const sampler = new Sampler(schemas);
  for (const item of Object.values(doc.paths)) {
    for (const op of Object.values(item as Record<string, { responses?: Record<string, { content?: Record<string, Schema> }> }>)) {
      for (const response of Object.values(op?.responses ?? {})) {
        const media = response.content?.['application/json'];
        const items = pageItems(media?.schema as Schema | undefined);
        if (!media || !items || media.example !== undefined) continue;
        const envelope = sampler.sample(media.schema as Schema, undefined, false) as Record<string, unknown>;
        media.example = {
          ...envelope,
          content: [sampler.sample(items, undefined, false), sampler.sample(items, undefined, true)],
          empty: false,
          first: true,
          last: true,
          number: 0,
          numberOfElements: 2,
          size: 50,
          totalElements: 2,
          totalPages: 1,
        };
      }
    }
  }
}

/**
 * The moment the document's time examples are written relative to (silences from 10:00 to 12:00, an upgrade window
 * the next night, a token expiring a month later). The committed document keeps them; Swagger UI gets them moved by
 * the time since then (shiftTimeExamples), so its pre-filled times are as far in the future when it is opened as
 * they were on that day.
 */
export const EXAMPLE_TIME_BASE = '2026-11-23T10:00:00Z';

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?Z$/;

/** A copy of the document with every date-time example (and instant in an example value) moved to be relative to `now`. */
export function shiftTimeExamples<T extends object>(doc: T, now: number): T {
  const delta = Math.floor((now - Date.parse(EXAMPLE_TIME_BASE)) / 60_000) * 60_000;
  const shift = (v: string) => {
    const moved = new Date(Date.parse(v) + delta).toISOString();
    return v.includes('.') ? moved : moved.replace(/\.\d{3}Z$/, 'Z');
  };
  const walk = (node: unknown, inExample: boolean): unknown => {
    if (typeof node === 'string') return inExample && ISO_INSTANT.test(node) ? shift(node) : node;
    if (Array.isArray(node)) return node.map((n) => walk(n, inExample));
    if (!node || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) out[k] = walk(v, inExample || k === 'example' || k === 'examples' || k === 'default');
    return out;
  };
  return walk(doc, false) as T;
}

let shifted: { minute: number; source: object; doc: object } | undefined;
/** shiftTimeExamples for the current minute, computed once per minute (Swagger UI loads the document on every visit). */
export function shiftTimeExamplesNow<T extends object>(doc: T, now = Date.now()): T {
  const minute = Math.floor(now / 60_000);
  if (shifted?.minute !== minute || shifted.source !== doc) shifted = { minute, source: doc, doc: shiftTimeExamples(doc, now) };
  return shifted.doc as T;
}
