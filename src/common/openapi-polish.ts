import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import { IS_PUBLIC } from '../auth/principal';
import { OPERATION_DESCRIPTIONS } from './operation-descriptions';

/**
 * Finishing touches on the generated OpenAPI document, applied in one place rather than on every
 * controller: descriptions of operations the code only summarises (operation-descriptions.ts), declared and
 * ordered tags, one group for platform administration, typed path parameters,
 * `security: []` on public operations, and per-status error examples including 413/415 on operations
 * that take a body.
 */

/** Tag order in Swagger UI: the order a newcomer needs them, with what each group is for. */
export const TAGS: { name: string; description: string }[] = [
  { name: 'Organisations', description: 'Organisations, their quotas, compute and agreements (OWNER deletes, ADMIN changes)' },
  { name: 'Organisation members', description: 'Members and their roles (OWNER, ADMIN, MEMBER, VIEWER)' },
  { name: 'Personal access tokens', description: "The caller's own tokens (FULL_ACCESS or READ_ONLY)" },
  { name: 'Users', description: 'User search, and adding users (platform administrators)' },
  { name: 'Catalog', description: 'Cloud providers, regions, node types, cloud profiles, cluster versions and update channels: what a cluster can be made of' },
  { name: 'Environments', description: 'Environments of an organisation and their member overrides' },
  { name: 'Cloud accounts', description: 'Cloud accounts and their credentials (ADMIN changes)' },
  { name: 'Clusters', description: 'Clusters: create, change, stop, start and delete; provisioning moves them through their states' },
  { name: 'Node pools', description: 'Node pools of a cluster' },
  { name: 'Maintenance schedules', description: 'Weekly maintenance windows with time zones and exclusions' },
  { name: 'Scheduled cluster upgrades', description: 'Upgrades planned by the scheduler or an administrator, and their states' },
  { name: 'Observability', description: 'Monitoring tenants, alerting configuration, alerts and silences' },
  { name: 'Integrations', description: 'Dashboard and organisation integrations' },
  { name: 'Webhooks', description: 'Signed CloudEvents to outside receivers, at least once' },
  { name: 'Audit events', description: 'The full audit trail of an organisation and its clusters' },
  { name: 'Activity', description: 'The human-readable activity feed' },
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
  '503': ['Service Unavailable', 'The database is unreachable; retry shortly'],
};

const SLUG_SCHEMA = { type: 'string', pattern: '^[a-z0-9-_]+$', maxLength: 130 };
const SLUG_PARAMS = new Set(['organisationSlug', 'environmentSlug', 'clusterSlug', 'tenantSlug', 'integrationSlug', 'cluster']);

type Operation = {
  operationId?: string;
  description?: string;
  tags?: string[];
  parameters?: { name: string; in: string; schema?: Record<string, unknown>; required?: boolean }[];
  requestBody?: unknown;
  responses: Record<string, { description?: string; content?: Record<string, { schema?: unknown; example?: unknown; examples?: Record<string, unknown> }>; headers?: Record<string, unknown> }>;
  security?: unknown[];
};

/** "METHOD /path/{param}" of every route marked @Public(). */
export function publicOperations(modules: ModulesContainer): Set<string> {
  const out = new Set<string>();
  for (const mod of modules.values()) {
    for (const wrapper of mod.controllers.values()) {
      const type = wrapper.metatype as (new (...a: never[]) => unknown) | undefined;
      if (!type?.prototype) continue;
      const classPublic = Reflect.getMetadata(IS_PUBLIC, type) === true;
      const base = String(Reflect.getMetadata(PATH_METADATA, type) ?? '');
      for (const name of Object.getOwnPropertyNames(type.prototype)) {
        const handler = (type.prototype as Record<string, unknown>)[name];
        if (name === 'constructor' || typeof handler !== 'function') continue;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (method === undefined) continue;
        if (!classPublic && Reflect.getMetadata(IS_PUBLIC, handler) !== true) continue;
        const sub = String(Reflect.getMetadata(PATH_METADATA, handler) ?? '');
        const full = `/${[base, sub].map((p) => p.replace(/^\/+|\/+$/g, '')).filter(Boolean).join('/')}`.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
        out.add(`${RequestMethod[method].toLowerCase()} ${full}`);
      }
    }
  }
  return out;
}

export function polishOpenApi(doc: OpenAPIObject, publicOps: Set<string>): OpenAPIObject {
  const used = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, raw] of Object.entries(item as Record<string, Operation>)) {
      if (!raw || typeof raw !== 'object' || !('responses' in raw)) continue;
      const op = raw;
      // A description written in the code wins; the others come from operation-descriptions.ts.
      if (!op.description && op.operationId && OPERATION_DESCRIPTIONS[op.operationId]) op.description = OPERATION_DESCRIPTIONS[op.operationId];
      if (path.startsWith('/admin/')) op.tags = ['Platform administration'];
      for (const t of op.tags ?? []) used.add(t);
      for (const p of op.parameters ?? []) {
        if (p.in !== 'path') continue;
        const schema = { ...(p.schema ?? {}) };
        if (SLUG_PARAMS.has(p.name)) Object.assign(schema, { ...SLUG_SCHEMA, ...schema, type: 'string' });
        else if (/Identity$/.test(p.name)) Object.assign(schema, { type: 'string', format: 'uuid' });
        else if (!schema.type) schema.type = 'string';
        p.schema = schema;
        p.required = true;
      }
      // Public: no personal access token (the alert webhook still checks its own tenant token and keeps its 401).
      if (publicOps.has(`${method} ${path}`)) op.security = [];
      if (op.requestBody) {
        op.responses['413'] ??= { description: 'The body is larger than BODY_LIMIT_BYTES' };
        op.responses['415'] ??= { description: 'The body is not JSON (Content-Type must be application/json)' };
      }
      if (op.responses['429']) {
        op.responses['429'].headers = { 'Retry-After': { description: 'Seconds until a retry can succeed', schema: { type: 'integer', minimum: 0 } } };
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
  doc.servers = [{ url: '/', description: 'This service' }];
  return doc;
}
