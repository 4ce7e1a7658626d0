import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import { ORG_ROLE, OrgRoleOptions } from './route-access';
import { IS_PUBLIC, PLATFORM_ADMIN_ONLY } from './route-access';
import type { OrganisationRole } from './organisation-roles';
import { OPERATION_DOC, OperationDoc } from './api-docs';
import {
  accessSentence,
  forbiddenDescription,
  pagingSentence,
  READ_ONLY_REFUSED,
  readOnlyRefused,
  RouteAccess,
  UNAUTHORIZED,
} from './operation-descriptions';
import { PAGING_DOC, PagingDoc } from './paging';

/**
 * What each route declares, read from Nest's route metadata (the same metadata the guards read), and the
 * parts of the document generated from it: the description around the handler's own text, `security: []` on
 * public routes, and the 401 and 403 answers.
 */
export interface RouteDoc {
  /** `<Controller>_<handler>`, the operationId the document gives the route. */
  operation: string;
  /** Lower case, as in the document. */
  method: string;
  /** OpenAPI form: `/api/v1/orgs/{organisationSlug}`. */
  path: string;
  access: RouteAccess;
  paging?: PagingDoc;
  doc?: OperationDoc;
}

/** Routes by "method /path", the way the document's paths are keyed. */
export type RouteDocs = Map<string, RouteDoc>;

type Target = object;

/** The handler's value, else the controller's (Reflector.getAllAndOverride, as the guards resolve it). */
function declared<T>(key: string, handler: Target, controller: Target): T | undefined {
  return (Reflect.getMetadata(key, handler) ?? Reflect.getMetadata(key, controller)) as T | undefined;
}

function accessOf(handler: Target, controller: Target): RouteAccess {
  if (declared<boolean>(IS_PUBLIC, handler, controller) === true) return { kind: 'public' };
  if (declared<boolean>(PLATFORM_ADMIN_ONLY, handler, controller) === true) return { kind: 'platform-admin' };
  const role = declared<OrgRoleOptions & { least: OrganisationRole }>(ORG_ROLE, handler, controller);
  if (role) return { kind: 'organisation', least: role.least, platformAdmin: role.platformAdmin === true };
  return { kind: 'authenticated' };
}

const joinPath = (...parts: string[]) =>
  `/${parts.map((p) => p.replace(/^\/+|\/+$/g, '')).filter(Boolean).join('/')}`.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/** Every route of every controller with what it declares. */
export function readRoutes(modules: ModulesContainer): RouteDocs {
  const out: RouteDocs = new Map();
  for (const mod of modules.values()) {
    for (const wrapper of mod.controllers.values()) {
      const type = wrapper.metatype as (new (...a: never[]) => unknown) | undefined;
      if (!type?.prototype) continue;
      const base = String(Reflect.getMetadata(PATH_METADATA, type) ?? '');
      for (const name of Object.getOwnPropertyNames(type.prototype)) {
        const handler = (type.prototype as Record<string, unknown>)[name];
        if (name === 'constructor' || typeof handler !== 'function') continue;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (method === undefined) continue;
        const route: RouteDoc = {
          operation: `${type.name}_${name}`,
          method: RequestMethod[method].toLowerCase(),
          path: joinPath(base, String(Reflect.getMetadata(PATH_METADATA, handler) ?? '')),
          access: accessOf(handler, type),
          paging: Reflect.getMetadata(PAGING_DOC, handler) as PagingDoc | undefined,
          doc: Reflect.getMetadata(OPERATION_DOC, handler) as OperationDoc | undefined,
        };
        out.set(`${route.method} ${route.path}`, route);
      }
    }
  }
  return out;
}

/** "method /path" of every route marked @Public(). */
export function publicOperations(routes: RouteDocs): Set<string> {
  return new Set([...routes].filter(([, r]) => r.access.kind === 'public').map(([key]) => key));
}

/** The description of an operation: its own text, then what its route declares, then its own error cases. */
export function composeDescription(route: RouteDoc, own: string | undefined): string {
  return [
    own,
    route.paging && pagingSentence(route.paging),
    route.doc?.access ?? accessSentence(route.access),
    readOnlyRefused(route.access, route.method) ? READ_ONLY_REFUSED : undefined,
    route.doc?.errors,
  ]
    .map((part) => part?.trim())
    .filter(Boolean)
    .join(' ');
}

type Operation = {
  description?: string;
  security?: Record<string, unknown>[];
  responses: Record<string, { description?: string }>;
};

/** Writes what the routes declare into the operations of the document Nest generated. */
export function describeOperations(doc: OpenAPIObject, routes: RouteDocs): OpenAPIObject {
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, raw] of Object.entries(item as Record<string, Operation>)) {
      const route = routes.get(`${method} ${path}`);
      if (!route || !raw || typeof raw !== 'object' || !('responses' in raw)) continue;
      const op = raw;
      op.description = composeDescription(route, op.description);
      // Public: no personal access token. A credential of the operation's own (a join token, a tenant token) stays.
      if (route.access.kind === 'public') op.security = (op.security ?? []).filter((req) => !('token' in req) && !('bearer' in req));
      if ((op.security ?? doc.security ?? []).length > 0) op.responses['401'] ??= { description: UNAUTHORIZED };
      const forbidden = forbiddenDescription(route.access, route.method);
      // An operation whose service refuses more (it states `access`) declares its own 403.
      if (forbidden) op.responses['403'] ??= { description: forbidden };
    }
  }
  return doc;
}
