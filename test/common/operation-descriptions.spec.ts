import * as fs from 'fs';
import * as path from 'path';
import {
  accessSentence,
  forbiddenDescription,
  pagingSentence,
  RouteAccess,
  UNAUTHORIZED,
} from '../../src/common/operation-descriptions';
import { composeDescription, RouteDoc } from '../../src/common/route-docs';
import { contradictions, DeclaredRoute, DocumentedOperation } from './operation-claims';

/**
 * The generated sentences, and the checker test/common/operation-docs.e2e-spec.ts runs over every operation:
 * it must refuse text that contradicts the route and accept what route-docs.ts composes.
 */
type Operation = { operationId?: string; summary?: string; description?: string };

const doc = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
};
const operations = Object.entries(doc.paths).flatMap(([p, methods]) =>
  Object.entries(methods).map(([method, op]) => ({ id: `${method.toUpperCase()} ${p}`, op })),
);

/** A route as the checker sees it, and the same route as route-docs.ts sees it. */
function routeOf(access: RouteAccess, method: string, extra: Partial<DeclaredRoute> = {}): { declared: DeclaredRoute; doc: RouteDoc } {
  const declared: DeclaredRoute = {
    operationId: 'ProbeController_probe',
    method,
    path: '/api/v1/orgs/{organisationSlug}/probes',
    isPublic: access.kind === 'public',
    platformAdminOnly: access.kind === 'platform-admin',
    ...(access.kind === 'organisation' ? { orgRole: { least: access.least, platformAdmin: access.platformAdmin } } : {}),
    ...extra,
  };
  return { declared, doc: { operation: declared.operationId, method, path: declared.path, access, paging: declared.paging, doc: declared.doc } };
}

/** The operation route-docs.ts would write for the route: composed description, 401/403 from the guards, a page when paged. */
function documented(route: { declared: DeclaredRoute; doc: RouteDoc }, own = 'Does the probing.'): DocumentedOperation {
  const forbidden = forbiddenDescription(route.doc.access, route.doc.method);
  const form = route.declared.paging?.form;
  return {
    summary: 'Probe',
    description: composeDescription(route.doc, own),
    responses: {
      '200': form ? { content: { 'application/json': { schema: { allOf: [{ $ref: `#/components/schemas/PageForm${form}Dto` }] } } } } : {},
      ...(route.declared.isPublic ? {} : { '401': { description: UNAUTHORIZED } }),
      ...(forbidden ? { '403': { description: forbidden } } : {}),
    } as DocumentedOperation['responses'],
  };
}

const MEMBER: RouteAccess = { kind: 'organisation', least: 'MEMBER', platformAdmin: false };
const paging = { form: 'B' as const, sortable: ['name', 'createdAt'] };

describe('operation descriptions', () => {
  it('gives every operation of the committed document a description that says more than its summary', () => {
    const missing = operations.filter(({ op }) => !op.description?.trim() || op.description.trim() === op.summary?.trim()).map(({ id }) => id);
    expect(operations.length).toBeGreaterThan(130);
    expect(missing).toEqual([]);
  });

  it('says who may call an operation from its guard', () => {
    expect(accessSentence({ kind: 'organisation', least: 'VIEWER', platformAdmin: false })).toMatch(/\(VIEWER or above\)/);
    expect(accessSentence(MEMBER)).toBe('Needs the MEMBER role or above in the organisation.');
    expect(accessSentence({ kind: 'organisation', least: 'OWNER', platformAdmin: true })).toBe(
      'Needs the OWNER role in the organisation; platform administrators may call it too.',
    );
    expect(accessSentence({ kind: 'platform-admin' })).toBe('Platform administrators only; everyone else gets 403.');
    expect(accessSentence({ kind: 'public' })).toMatch(/^Needs no user credential/);
    expect(forbiddenDescription(MEMBER, 'get')).toBe('Not a member of the organisation, or the role does not allow it');
    expect(forbiddenDescription(MEMBER, 'delete')).toBe('Not a member of the organisation, the role does not allow it, or the token is READ_ONLY');
    expect(forbiddenDescription({ kind: 'authenticated' }, 'get')).toBeUndefined();
    expect(forbiddenDescription({ kind: 'public' }, 'post')).toBeUndefined();
    expect(pagingSentence({ form: 'A', sortable: ['name'], defaultOrder: 'name' })).toBe(
      'Answers a page (form A): `page` is zero-based, `size` defaults to 50 and is capped at 500. ' +
        'Sortable by name (repeat `sort=property,asc|desc[,ignorecase]`); any other sort property is 400. Default order: name.',
    );
  });

  it('accepts what route-docs.ts composes, for every kind of route', () => {
    const kinds: RouteAccess[] = [
      { kind: 'public' },
      { kind: 'authenticated' },
      { kind: 'platform-admin' },
      ...(['VIEWER', 'MEMBER', 'ADMIN', 'OWNER'] as const).map((least) => ({ kind: 'organisation' as const, least, platformAdmin: least === 'OWNER' })),
    ];
    for (const access of kinds) {
      for (const method of ['get', 'post', 'patch', 'delete']) {
        for (const extra of [{}, { paging }]) {
          const route = routeOf(access, method, extra);
          expect({ access, method, problems: contradictions(documented(route), route.declared) }).toEqual({ access, method, problems: [] });
        }
      }
    }
  });

  it('refuses text that contradicts the guard', () => {
    const route = routeOf(MEMBER, 'get');
    const op = documented(route, 'Any member of the organisation may call it (VIEWER or above).');
    expect(contradictions(op, route.declared)).toEqual([
      'says "(VIEWER or above)" but the route needs MEMBER',
      'says "(VIEWER" but the route needs MEMBER',
      'says any member may call it, but the route needs MEMBER',
    ]);
    expect(contradictions({ ...documented(route), summary: 'Probe (ADMIN)' }, route.declared)).toEqual(['says "(ADMIN" but the route needs MEMBER']);
    expect(contradictions(documented(route, 'Platform administrators only.'), route.declared)).toEqual([
      'says platform administrators only, but the route is not @PlatformAdminOnly',
    ]);
    const admin = routeOf({ kind: 'platform-admin' }, 'get');
    expect(contradictions(documented(admin, 'Needs the ADMIN role or above in the organisation.'), admin.declared)).toEqual([
      'says "Needs the ADMIN role" but the route needs no organisation role',
    ]);
  });

  it('refuses a sort property or page form the paging declaration does not have', () => {
    const route = routeOf(MEMBER, 'get', { paging });
    expect(contradictions(documented(route, 'Sortable by name, createdAt, status.'), route.declared)).toEqual([
      'says sortable by name, createdAt, status, but the list sorts by name, createdAt',
    ]);
    expect(contradictions({ ...documented(route), summary: 'Probes (page form A)' }, route.declared)).toEqual([
      'says page form A, but the list declares form B',
    ]);
    const unpaged = routeOf(MEMBER, 'get');
    expect(contradictions(documented(unpaged, 'Sortable by name.'), unpaged.declared)).toEqual(['names sort properties (name) but declares no paging']);
    const wrongSchema = documented(route);
    wrongSchema.responses['200'] = { content: { 'application/json': { schema: { allOf: [{ $ref: '#/components/schemas/PageFormADto' }] } } } };
    expect(contradictions(wrongSchema, route.declared)).toEqual(['declares page form B, but its 200 schema is form A']);
  });

  it('refuses missing or extra guard answers and token rules', () => {
    const post = routeOf(MEMBER, 'post');
    const op = documented(post);
    op.description = op.description!.replace(' A READ_ONLY personal access token gets 403.', '');
    delete op.responses['403'];
    expect(contradictions(op, post.declared)).toEqual([
      'does not say that a READ_ONLY token gets 403',
      'has no 403 though a guard can refuse it',
    ]);
    const read = routeOf({ kind: 'authenticated' }, 'get');
    const extra = documented(read);
    extra.responses['403'] = {};
    expect(contradictions(extra, read.declared)).toEqual(['has a 403 though nothing refuses it']);
    const guarded = routeOf(MEMBER, 'get', { doc: { summary: 'Probe', access: 'Only probers.' } });
    expect(contradictions(documented(guarded), guarded.declared)).toContain(
      'states its own `access`, but the route has a role guard or is public (the guard says who may call it)',
    );
  });
});
