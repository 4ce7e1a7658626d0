import Ajv2020, { ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as fs from 'fs';
import * as path from 'path';
import { isCompatRequest } from '../../src/compat/compat';
import { CONFORMANCE_EXCEPTIONS } from './openapi-conformance-exceptions';

/**
 * Every response an e2e test receives obeys the committed OpenAPI document (docs/openapi.json).
 *
 * startTestApp installs `recordResponses` on the app (an onSend hook, tests only): each response is checked against
 * the operation the route serves (method + Fastify's URL template, `request.routeOptions.url`):
 * - its status is one the operation documents (an undocumented error code is a violation too);
 * - a status documented without a body answers none;
 * - its Content-Type is one the response documents; a JSON body is validated with Ajv (JSON Schema 2020-12, the
 *   dialect of OpenAPI 3.1) and ajv-formats against the response's schema; other media types (YAML, text,
 *   metrics) are checked for status and Content-Type only.
 * Violations are collected here, and test/support/openapi-conformance.setup.ts fails the test that received them
 * (afterEach). Known, explained gaps are listed in openapi-conformance-exceptions.ts.
 *
 * Responses of routes the document does not describe are not checked: the Swagger UI and the document itself,
 * the redirect from `/`, and unknown paths (404 from the router). `/compat/...` answers the plain representation
 * the document describes in its introduction (not as separate paths), so it is not checked against the
 * interface's schemas either.
 */
const DOCUMENT_FILE = path.resolve(__dirname, '../../docs/openapi.json');
const DOC_ID = 'openapi.json';

type Media = { schema?: unknown };
type Response = { content?: Record<string, Media> };
type Operation = { responses: Record<string, Response> };
type Document = { paths: Record<string, Record<string, Operation>>; components?: Record<string, unknown> };

/**
 * Routes served outside the document, not API operations: the Swagger UI and the document itself, the redirect from
 * `/` to it, and the Prometheus scrape endpoint (text exposition format, excluded from the API document).
 */
const UNDOCUMENTED_ROUTES = [/^\/$/, /^\/swagger-ui/, /^\/v3\/api-docs/, /^\/metrics$/];

let state: { doc: Document; ajv: Ajv2020; validators: Map<string, ValidateFunction> } | undefined;

function load() {
  if (state) return state;
  const doc = JSON.parse(fs.readFileSync(DOCUMENT_FILE, 'utf8')) as Document;
  // strict: false, because OpenAPI adds its own keywords (example, discriminator, x-...) to JSON Schema.
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema({ $id: DOC_ID, components: doc.components ?? {} });
  state = { doc, ajv, validators: new Map() };
  return state;
}

/** `#/components/...` in a schema taken out of the document, made absolute so Ajv resolves it against the document. */
function absoluteRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(absoluteRefs);
  if (!node || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `${DOC_ID}${v}` : absoluteRefs(v)]),
  );
}

function validatorFor(key: string, schema: unknown): ValidateFunction {
  const s = load();
  let v = s.validators.get(key);
  if (!v) {
    v = s.ajv.compile(absoluteRefs(schema) as object);
    s.validators.set(key, v);
  }
  return v;
}

export interface ObservedResponse {
  method: string;
  /** Fastify's URL template of the route: `/api/v1/orgs/:organisationSlug`. */
  route: string;
  /** The URL requested, for messages. */
  url: string;
  status: number;
  contentType?: string;
  body?: string;
}

const isJson = (mediaType: string) => mediaType === 'application/json' || /\+json$/.test(mediaType);

/** The OpenAPI path of a Fastify route template: `/a/:b` -> `/a/{b}`. */
export const openApiPath = (route: string) => route.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/**
 * A route the document leaves out on purpose (@ApiExcludeEndpoint: e.g. the catch-all that names the valid platforms
 * for an unknown credentials platform) may only answer errors, with the one error body.
 */
function routeOutsideDocument(r: ObservedResponse, where: string): string[] {
  if (r.status < 400) return [`${where}: the document has no operation ${r.method} ${openApiPath(r.route)}`];
  const validate = validatorFor('error body', { $ref: '#/components/schemas/ErrorBodyDto' });
  let value: unknown;
  try {
    value = JSON.parse(r.body ?? '');
  } catch {
    return [`${where}: an error of a route outside the document without the JSON error body: ${(r.body ?? '').slice(0, 300)}`];
  }
  return validate(value) ? [] : [`${where}: not the error body: ${JSON.stringify(validate.errors?.slice(0, 4))}`];
}

/** The document's verdict on one response: a list of violations (empty when it obeys the document). */
export function checkResponse(r: ObservedResponse): string[] {
  const { doc } = load();
  const method = r.method.toLowerCase();
  if (method === 'head' || method === 'options') return [];
  if (UNDOCUMENTED_ROUTES.some((re) => re.test(r.route))) return [];
  const template = openApiPath(r.route);
  const where = `${r.method} ${template} (${r.url}) answered ${r.status}`;
  const op = doc.paths[template]?.[method];
  if (!op) return routeOutsideDocument(r, where);
  const status = String(r.status);
  const response = op.responses[status] ?? op.responses[`${status[0]}XX`] ?? op.responses.default;
  if (!response) return [`${where}: status ${status} is not documented (documented: ${Object.keys(op.responses).join(', ')})`];
  const body = r.body ?? '';
  const mediaType = (r.contentType ?? '').split(';')[0].trim().toLowerCase();
  if (!response.content || Object.keys(response.content).length === 0) {
    return body.length > 0 ? [`${where}: documented without a body, but sent ${mediaType || 'a body'}: ${body.slice(0, 300)}`] : [];
  }
  if (!mediaType) return [`${where}: sent no Content-Type (documented: ${Object.keys(response.content).join(', ')})`];
  const media = response.content[mediaType];
  if (!media) return [`${where}: Content-Type ${mediaType} is not documented (documented: ${Object.keys(response.content).join(', ')})`];
  if (!isJson(mediaType) || !media.schema) return [];
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return [`${where}: the body is not JSON: ${body.slice(0, 300)}`];
  }
  const validate = validatorFor(`${method} ${template} ${status} ${mediaType}`, media.schema);
  if (validate(value)) return [];
  const errors = (validate.errors ?? []).slice(0, 8).map((e) => `${e.instancePath || '(body)'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`);
  return [`${where}: the body does not match the documented schema:\n    ${errors.join('\n    ')}\n    body: ${body.slice(0, 500)}`];
}

/** Whether an exception explains this violation (see openapi-conformance-exceptions.ts). */
function excepted(r: ObservedResponse): boolean {
  const key = `${r.method.toUpperCase()} ${openApiPath(r.route)}`;
  return CONFORMANCE_EXCEPTIONS.some((e) => e.operation === key && (e.status === undefined || e.status === r.status));
}

const OBSERVED = Symbol.for('cms.openapiConformanceObserved');
type Global = { [OBSERVED]?: ObservedResponse[] };

/**
 * Checks the responses recorded since the last call and returns their violations (the setup file calls it after
 * each test). The checks run here, not while the response is sent, so they add nothing to the service's own timing
 * (tests measure that).
 */
export function takeViolations(): string[] {
  const g = globalThis as Global;
  const observed = g[OBSERVED] ?? [];
  g[OBSERVED] = [];
  const out: string[] = [];
  for (const r of observed) {
    try {
      const violations = checkResponse(r);
      if (violations.length && !excepted(r)) out.push(...violations);
    } catch (e) {
      out.push(`checking ${r.method} ${r.url} failed: ${(e as Error).stack}`);
    }
  }
  return out;
}

/** Records every response of the app, to be checked against the document (an onSend hook; tests only, see startTestApp). */
export function recordResponses(fastify: FastifyInstance): void {
  fastify.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    const route = request.routeOptions?.url;
    if (route && !isCompatRequest(request)) {
      // A stream (files) is not read here: status and Content-Type are still checked.
      const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : payload == null ? '' : undefined;
      const contentType = reply.getHeader('content-type') as string | undefined;
      if (body !== undefined || !/json/.test(String(contentType))) {
        const g = globalThis as Global;
        (g[OBSERVED] ??= []).push({ method: request.method, route, url: request.url, status: reply.statusCode, contentType, body });
      }
    }
    done(null, payload);
  });
}
