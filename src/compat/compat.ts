import type { OpenAPIObject } from '@nestjs/swagger';
import type { DataSource } from 'typeorm';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { REQUESTED_URL } from '../common/errors';
import { documentRoutes, HTTP_METHODS, successJsonSchemas } from '../common/openapi-routes';
import { PlainMapper, PlainRepresentation, SchemaObject } from './plain-representation';
import { WrittenForm, WrittenForms } from './written-forms';

/**
 * The compatibility base path: `/compat/api/v1/...`, `/compat/sts/v1/...` and `/compat/admin/v1/...` are the
 * operations without the prefix (same route, so the same handler, authentication, roles, validation, audit and rate
 * limits), answered in the plain representation the original Go client and Terraform provider decode (see
 * plain-representation.ts). The platform administration API (`/admin/v1`), which the interface does not define,
 * answers plainly under both paths.
 *
 * Two pieces at the edge, nothing in the controllers: Fastify's `rewriteUrl` routes the prefixed URL to the
 * interface's route before routing, and a `preSerialization` hook maps the answer object with the mapper derived
 * from the route's response schema in the OpenAPI document.
 */
export const COMPAT_BASE_PATH = '/compat';
const COMPAT_BASES = ['/api/v1/', '/sts/v1/', '/admin/v1/'];
const ADMIN_BASE = '/admin/v1/';

/** Marks a raw request that came in under `/compat` (other parts of the stack may rewrite `originalUrl`). */
const COMPAT_REQUEST = Symbol('compatRequest');

/** Fastify's `rewriteUrl`: `/compat/<base>/...` is routed as `/<base>/...`; every other URL as it is. */
export function routeCompatUrl(req: { url?: string; [COMPAT_REQUEST]?: boolean; [REQUESTED_URL]?: string }): string {
  const url = req.url ?? '/';
  if (!url.startsWith(`${COMPAT_BASE_PATH}/`)) return url;
  const rest = url.slice(COMPAT_BASE_PATH.length);
  if (!COMPAT_BASES.some((base) => rest.startsWith(base))) return url;
  req[COMPAT_REQUEST] = true;
  // Error bodies name the path the client requested (src/common/errors.ts).
  req[REQUESTED_URL] = url;
  return rest;
}

/** A request that came in under `/compat`. */
export function isCompatRequest(request: { raw: object }): boolean {
  return (request.raw as { [COMPAT_REQUEST]?: boolean })[COMPAT_REQUEST] === true;
}

/** For each route (`GET /api/v1/orgs/:organisationSlug/clusters`) whose answer is not plain already: its mapper. */
export function plainMappersByRoute(document: OpenAPIObject): Map<string, PlainMapper> {
  const plain = new PlainRepresentation((document.components?.schemas ?? {}) as Record<string, SchemaObject>);
  const out = new Map<string, PlainMapper>();
  for (const { route, operation } of documentRoutes(document)) {
    // The first 2xx answer with a JSON body.
    const mapper = plain.mapperOf(successJsonSchemas<SchemaObject>(operation)[0]?.[1]);
    if (mapper) out.set(route, mapper);
  }
  return out;
}

/** What a `/compat` cluster write wrote in the client's words (set before the handler, kept after it succeeds). */
const WRITTEN_FORM = Symbol('compatWrittenForm');

/**
 * Answers `/compat` requests, and every `/admin/v1` request, in the plain representation. The mapping works on the
 * answer object before serialisation; a `/compat` answer is then serialised as plain JSON rather than with a
 * serializer the route may have compiled from the interface's schema (which would expect the Slug objects).
 * Under `/compat` a cluster also reads back in the words its client wrote (written-forms.ts), and a membership
 * carries the `id` the original clients read (its organisation's identity).
 */
export function servePlainRepresentation(fastify: FastifyInstance, document: OpenAPIObject, db: DataSource): void {
  const forms = new WrittenForms(db);
  const mappers = plainMappersByRoute(document);
  fastify.addHook('preHandler', async (request: FastifyRequest) => {
    if (!isCompatRequest(request)) return;
    await forms.completePoolReplace(request.method, request.routeOptions.url, request.params, request.body);
    if (!forms.isClusterWrite(request.method, request.routeOptions.url)) return;
    const form = await forms.takeRequest(request.method, request.body);
    if (form) (request as unknown as { [WRITTEN_FORM]?: WrittenForm })[WRITTEN_FORM] = form;
  });
  fastify.addHook('preSerialization', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const route = request.routeOptions.url;
    const compat = isCompatRequest(request);
    if (!compat && !route?.startsWith(ADMIN_BASE)) return payload;
    if (compat) reply.serializer(JSON.stringify);
    const ok = reply.statusCode < 300;
    const mapper = ok && route ? mappers.get(`${request.method} ${route}`) : undefined;
    let out = mapper ? mapper(payload) : payload;
    if (!compat || !ok) return out;
    const form = (request as unknown as { [WRITTEN_FORM]?: WrittenForm })[WRITTEN_FORM];
    if (form && typeof (out as { identity?: unknown } | null)?.identity === 'string') await forms.remember(out as Record<string, unknown>, form);
    out = await forms.answer(out);
    if (request.method === 'GET' && route === MEMBERSHIPS) out = withMembershipIds(out);
    return out;
  });
}

const MEMBERSHIPS = '/api/v1/memberships';

/** The original clients' Membership has an `id`: the organisation's identity (the provider's organisation data source). */
function withMembershipIds(page: unknown): unknown {
  const content = (page as { content?: unknown } | null)?.content;
  if (!Array.isArray(content)) return page;
  return {
    ...(page as object),
    content: content.map((m: Record<string, unknown>) => (m && typeof m === 'object' && !('id' in m) ? { ...m, id: m.organisationIdentity } : m)),
  };
}

const COMPAT_NOTE =
  '\n\nThe original Go client and Terraform provider: every operation under `/api/v1`, `/sts/v1` and `/admin/v1` is also served ' +
  'under the base path `/compat` (`/compat/api/v1/...`, `/compat/sts/v1/...`, `/compat/admin/v1/...`): the same operation, with ' +
  'the same authentication, roles, validation, audit and rate limits, answered in the representation those clients decode: ' +
  'Slug `{slugValue}` and Email `{email}` objects as plain strings, and every page in form A. Names stay as documented here ' +
  '(provider types `platform_1`..`platform_7`, the neutral path words), and requests take both forms on either path. Point ' +
  'the client\'s `APIUrl` or the provider\'s `acloud_api` at `https://<host>/compat`. The platform administration operations ' +
  '(`/admin/v1`) answer this plain representation on both paths, as documented.';

/**
 * The published document: the interface's document, with the platform administration operations' answers in their
 * plain schemas (derived components `<Name>Plain`) and the `/compat` base path described in the info text.
 */
export function documentPlainRepresentation(document: OpenAPIObject): OpenAPIObject {
  const out = structuredClone(document);
  const schemas = (out.components?.schemas ?? {}) as Record<string, SchemaObject>;
  const plain = new PlainRepresentation(structuredClone(schemas));
  const derived: Record<string, SchemaObject> = {};
  for (const [path, item] of Object.entries(out.paths)) {
    if (!path.startsWith(ADMIN_BASE)) continue;
    for (const method of HTTP_METHODS) {
      for (const [status, response] of Object.entries(item[method]?.responses ?? {})) {
        const media = /^2\d\d$/.test(status)
          ? (response as { content?: Record<string, { schema?: SchemaObject; example?: unknown }> }).content?.['application/json']
          : undefined;
        if (!media?.schema) continue;
        // A whole example (a page's) is shown in the plain representation too.
        const mapper = media.example !== undefined ? plain.mapperOf(media.schema) : null;
        if (mapper) media.example = mapper(media.example);
        media.schema = plain.plainSchemaOf(media.schema, derived);
      }
    }
  }
  Object.assign(schemas, derived);
  out.info.description = `${out.info.description ?? ''}${COMPAT_NOTE}`;
  return out;
}
