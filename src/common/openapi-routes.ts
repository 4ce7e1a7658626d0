import type { OpenAPIObject } from '@nestjs/swagger';
import type { OperationObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';

/** The HTTP methods of the document's operations. */
export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** `/api/v1/orgs/{organisationSlug}` -> `/api/v1/orgs/:organisationSlug`, as Fastify names the route. */
export const fastifyPath = (path: string) => path.replace(/\{([^}]+)\}/g, ':$1');

/** Each operation of the document with its Fastify route key (`GET /api/v1/orgs/:organisationSlug/clusters`). */
export function* documentRoutes(document: OpenAPIObject): Generator<{ route: string; operation: OperationObject }> {
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (operation) yield { route: `${method.toUpperCase()} ${fastifyPath(path)}`, operation };
    }
  }
}

/** The JSON schemas of an operation's successful (2xx) answers, by status, in the document's order. */
export function successJsonSchemas<S = unknown>(operation: { responses?: Record<string, unknown> }): [string, S][] {
  const out: [string, S][] = [];
  for (const [status, response] of Object.entries(operation.responses ?? {})) {
    if (!/^2\d\d$/.test(status)) continue;
    const schema = (response as { content?: Record<string, { schema?: S }> }).content?.['application/json']?.schema;
    if (schema) out.push([status, schema]);
  }
  return out;
}
