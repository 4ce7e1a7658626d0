import type { OpenAPIObject } from '@nestjs/swagger';
import type { SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import fastJsonStringify from 'fast-json-stringify';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { isDeepStrictEqual } from 'util';
import { documentRoutes, successJsonSchemas } from './openapi-routes';

/**
 * Answers serialised by fast-json-stringify (what Fastify uses for a route with a response schema), compiled from
 * the OpenAPI document's own 2xx schemas, so the document and the serialiser cannot drift apart.
 *
 * fast-json-stringify writes the properties its schema names and coerces values to the declared type; a gap in
 * the schema would silently lose or change data. The schemas are therefore rewritten first (`serializerSchema`):
 * - every `$ref` is inlined, `allOf` of objects merged; a reference that holds itself becomes free-form;
 * - every typed value may also be null (a null is written as null whatever the document says), `nullable`,
 *   `oneOf`/`anyOf` with a `{type: 'null'}` branch and type arrays all read the same;
 * - objects without `properties`, with `patternProperties`, and any other `oneOf`/`anyOf`/`not`/`if`, are
 *   free-form (`{}`: written by JSON.stringify), as are maps (`additionalProperties`) where the schema says so;
 * - `required`, `default`, `const`, `enum` and formats other than `date-time` are dropped: they would make it throw,
 *   invent values or format a Date otherwise than JSON.stringify.
 * A value of another type than declared (a string where an integer is declared) makes the compiled function throw
 * instead of coercing, and the answer is then written by JSON.stringify (logged once per route): the compiled
 * function never answers differently from JSON.stringify except for properties its object schemas do not name.
 * With `check` (the test suite), each answer is also written by JSON.stringify and compared, and any difference
 * (or fallback) fails the request with 500, so every e2e test checks the schemas of the routes it calls.
 */

type Json = Record<string, unknown>;
export type Serializer = (payload: unknown) => string;


const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The types a schema declares, with null for `nullable: true`; undefined when it names none. */
function declaredTypes(s: Json): string[] | undefined {
  const t = s.type;
  // Without a type, `properties` or `items` say what it is (as in a page's `allOf` member naming `content`).
  const implied = isObject(s.properties) ? ['object'] : isObject(s.items) ? ['array'] : undefined;
  const types = typeof t === 'string' ? [t] : Array.isArray(t) ? (t as string[]) : implied;
  if (!types) return undefined;
  return s.nullable === true && !types.includes('null') ? [...types, 'null'] : types;
}

class SchemaRewriter {
  constructor(private readonly components: Record<string, SchemaObject>) {}

  /** `schema` as fast-json-stringify should see it (see above); `seen` holds the references being inlined. */
  rewrite(schema: unknown, seen: ReadonlySet<string> = new Set()): Json {
    if (!isObject(schema)) return {};
    if (typeof schema.$ref === 'string') {
      const name = /^#\/components\/schemas\/(.+)$/.exec(schema.$ref)?.[1];
      if (!name || seen.has(name) || !this.components[name]) return {};
      const { $ref: _ref, ...siblings } = schema;
      const inner = this.rewrite(this.components[name], new Set([...seen, name]));
      // Siblings of a $ref (OpenAPI 3.1) only add documentation or nullability here.
      return siblings.nullable === true || declaredTypes(siblings)?.includes('null') ? orNull(inner) : inner;
    }
    for (const key of ['oneOf', 'anyOf'] as const) {
      const branches = schema[key];
      if (!Array.isArray(branches)) continue;
      const others = branches.filter((b) => !(isObject(b) && b.type === 'null'));
      // X or null (how a nullable reference is written in OpenAPI 3.1); anything else stays free-form.
      if (others.length !== 1) return {};
      const { [key]: _branches, ...rest } = schema;
      return orNull(this.rewrite({ ...rest, ...(others[0] as Json), nullable: true }, seen));
    }
    if (schema.not !== undefined || schema.if !== undefined) return {};
    if (Array.isArray(schema.allOf)) {
      const { allOf, ...rest } = schema;
      const nullable = rest.nullable === true || declaredTypes(rest)?.includes('null') === true;
      // The siblings of allOf are a member only when they declare structure; otherwise they document (a
      // description, `nullable`, a `type: object` hint).
      const structural = rest.properties !== undefined || rest.items !== undefined || rest.additionalProperties !== undefined;
      const parts = [...(allOf as unknown[]), ...(structural ? [rest] : [])].map((p) => this.rewrite(p, seen));
      if (!parts.length || parts.some(isFree)) return {};
      const merged = mergeObjects(parts);
      if (!merged) return {};
      return nullable ? orNull(merged) : merged;
    }
    const types = declaredTypes(schema);
    if (!types || types.some((t) => !['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'].includes(t))) return {};
    const nonNull = types.filter((t) => t !== 'null');
    if (nonNull.length > 1 && (nonNull.includes('object') || nonNull.includes('array'))) return {};
    const out: Json = { type: [...nonNull, 'null'] };
    if (nonNull.includes('string') && schema.format === 'date-time') out.format = 'date-time';
    if (nonNull[0] === 'object') {
      if (!isObject(schema.properties) || schema.patternProperties !== undefined) return {};
      out.properties = Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, this.rewrite(v, seen)]));
      const extra = schema.additionalProperties;
      if (extra === true || isObject(extra)) out.additionalProperties = extra === true ? true : this.rewrite(extra, seen);
    }
    if (nonNull[0] === 'array') {
      if (schema.items !== undefined && !isObject(schema.items)) return {};
      out.items = this.rewrite(schema.items, seen);
    }
    return out;
  }
}

/**
 * A list answer: an array, or a page (an object whose `content` is an array). Those are written by
 * JSON.stringify, measured: fast-json-stringify builds its output by concatenation, and for a page of 50 clusters
 * (about 100 KB) that allocated 1,385 KB per request against 1,035 KB with JSON.stringify (V8's sampling heap
 * profiler), and cost 9 % more CPU per request (5.08 vs 4.63 ms, three alternating runs of 1,500 requests); for a
 * single cluster the two were equal (1.60 vs 1.58 ms). docs/adr/0087-compiled-response-serialisation.md has the measurement.
 */
function isList(s: Json): boolean {
  const isArray = (x: unknown) => isObject(x) && Array.isArray(x.type) && (x.type as string[]).includes('array');
  return isArray(s) || (isObject(s.properties) && isArray(s.properties.content));
}

/** A schema that declares nothing: free-form, written as JSON.stringify writes it. */
const isFree = (s: Json) => Object.keys(s).length === 0;

function orNull(s: Json): Json {
  if (isFree(s) || !s.type) return s;
  const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
  return types.includes('null') ? s : { ...s, type: [...types, 'null'] };
}

/** allOf members that are all objects (rewritten): one object with every property; else undefined (free-form). */
function mergeObjects(parts: Json[]): Json | undefined {
  if (parts.length === 1) return parts[0];
  if (!parts.length || !parts.every((p) => Array.isArray(p.type) && (p.type as string[]).includes('object') && isObject(p.properties))) return undefined;
  const properties: Json = {};
  let additional: unknown;
  for (const p of parts) {
    for (const [k, v] of Object.entries(p.properties as Json)) {
      // The same property in two members: a later one refines (e.g. a page's `content` items); free-form wins.
      properties[k] = properties[k] !== undefined && isFree(properties[k] as Json) ? {} : v;
    }
    if (p.additionalProperties !== undefined) additional = additional === true ? true : p.additionalProperties;
  }
  return { type: ['object', 'null'], properties, ...(additional !== undefined ? { additionalProperties: additional } : {}) };
}

/** The schema fast-json-stringify compiles for `schema` of `document` (self-contained). */
export function serializerSchema(document: OpenAPIObject, schema: unknown): Json {
  return new SchemaRewriter((document.components?.schemas ?? {}) as Record<string, SchemaObject>).rewrite(schema);
}

export interface SerializerOptions {
  /** Which routes (`GET /api/v1/orgs/:organisationSlug/clusters`) get a compiled serializer (default: every one). */
  include?: (route: string) => boolean;
  /** Compare every compiled answer with JSON.stringify's and fail the request on a difference (tests). */
  check?: boolean;
  warn?: (message: string) => void;
}

/** The compiled serializer of one schema, with the fallback and the check described above. */
export function compileSerializer(route: string, schema: Json, opts: Pick<SerializerOptions, 'check' | 'warn'> = {}): Serializer {
  const compiled = fastJsonStringify(schema) as (v: unknown) => string;
  let warned = false;
  const fallback = (payload: unknown, e: unknown): string => {
    if (opts.check) throw new Error(`Compiled serializer of ${route} failed: ${(e as Error).message}`);
    if (!warned) {
      warned = true;
      opts.warn?.(`Compiled serializer of ${route} failed (${(e as Error).message}); its answers are written by JSON.stringify when that happens`);
    }
    return JSON.stringify(payload);
  };
  if (!opts.check) {
    return (payload) => {
      try {
        return compiled(payload);
      } catch (e) {
        return fallback(payload, e);
      }
    };
  }
  return (payload) => {
    let out: string;
    try {
      out = compiled(payload);
    } catch (e) {
      return fallback(payload, e);
    }
    const expected = JSON.stringify(payload);
    if (!isDeepStrictEqual(JSON.parse(out), expected === undefined ? undefined : JSON.parse(expected))) {
      throw new Error(`Compiled serializer of ${route} differs from JSON.stringify: ${firstDifference(JSON.parse(out), JSON.parse(expected))}`);
    }
    return out;
  };
}

/** Where two JSON values first differ (a path and both values), for the check's message. */
export function firstDifference(a: unknown, b: unknown, path = '$'): string {
  if (isDeepStrictEqual(a, b)) return '';
  if (isObject(a) && isObject(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const d = firstDifference(a[k], b[k], `${path}.${k}`);
      if (d) return d;
    }
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    for (let i = 0; i < a.length; i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d) return d;
    }
  }
  return `${path}: compiled ${JSON.stringify(a)?.slice(0, 200)}, JSON.stringify ${JSON.stringify(b)?.slice(0, 200)}`;
}

/**
 * For each included operation of `document` with a 2xx JSON schema: status -> serializer, by route. Each one is
 * compiled when it first serialises an answer: compiling every route's serializer at start cost about 4 MB of heap
 * (and more process memory) for routes an instance may never serve. Which statuses get one is decided here (a
 * free-form schema gets none); the rewritten schema is made again at that first use instead of being kept.
 */
export function compileResponseSerializers(document: OpenAPIObject, opts: SerializerOptions): Map<string, Map<string, Serializer>> {
  const rewriter = new SchemaRewriter((document.components?.schemas ?? {}) as Record<string, SchemaObject>);
  const out = new Map<string, Map<string, Serializer>>();
  for (const { route, operation } of documentRoutes(document)) {
    if (opts.include && !opts.include(route)) continue;
    const byStatus = new Map<string, Serializer>();
    for (const [status, schema] of successJsonSchemas(operation)) {
      const rewritten = rewriter.rewrite(schema);
      if (isFree(rewritten)) continue; // free-form: JSON.stringify is what fast-json-stringify would call anyway
      if (isList(rewritten)) continue; // a page or an array: JSON.stringify costs less (see isList)
      let compiled: Serializer | undefined;
      const compile = (): Serializer => {
        try {
          return compileSerializer(route, rewriter.rewrite(schema), opts);
        } catch (e) {
          // At first use a schema that does not compile would fail every answer: it falls back (the check fails it).
          if (opts.check) throw e;
          opts.warn?.(`Compiled serializer of ${route} (${status}) did not compile (${(e as Error).message}); its answers are written by JSON.stringify`);
          return (payload) => JSON.stringify(payload);
        }
      };
      byStatus.set(status, (payload) => (compiled ??= compile())(payload));
    }
    if (byStatus.size) out.set(route, byStatus);
  }
  return out;
}

/**
 * Attaches the compiled serializers to their routes as Fastify's response serializers (an onRoute hook: register
 * it before the routes are, i.e. before `app.init()`). Fastify then uses them for answers of those statuses; other
 * statuses (errors) and `reply.serializer(...)` overrides (the /compat representation) are unaffected.
 */
export function useCompiledResponseSerializers(fastify: FastifyInstance, document: OpenAPIObject, opts: SerializerOptions): Map<string, Map<string, Serializer>> {
  const serializers = compileResponseSerializers(document, opts);
  fastify.addHook('onRoute', (route: RouteOptions) => {
    if (Array.isArray(route.method) || route.method === 'HEAD') return;
    const byStatus = serializers.get(`${route.method} ${route.url}`);
    if (!byStatus) return;
    route.schema = { ...(route.schema ?? {}), response: Object.fromEntries([...byStatus.keys()].map((s) => [s, { type: 'object' }])) };
    route.serializerCompiler = ({ httpStatus }: { httpStatus?: string }) => byStatus.get(String(httpStatus)) ?? JSON.stringify;
  });
  return serializers;
}
