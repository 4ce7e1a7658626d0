import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import type { ModulesContainer } from '@nestjs/core';
import { ORG_ROLE } from '../../src/common/route-access';
import { IS_PUBLIC, PLATFORM_ADMIN_ONLY } from '../../src/common/route-access';
import { OPERATION_DOC, OperationDoc } from '../../src/common/api-docs';
import { PAGING_DOC, PagingDoc } from '../../src/common/paging';

/**
 * Checks what an operation's text claims about the code (who may call it, its paging, its page form, its 401 and
 * 403 answers) against what its route declares, read here straight from the route metadata the guards read.
 * The claims are the forms the project writes them in (see src/common/operation-descriptions.ts and the
 * summaries): "Needs the X role", "(X or above)", "X and above", "(X" opening a parenthesis, "Platform
 * administrators only", "(platform administrators", "Any authenticated user may call it", "Needs no user
 * credential", "A READ_ONLY personal access token gets 403", "sortable by a, b", "page (form A)" / "page form A".
 */

const ROLES = ['VIEWER', 'MEMBER', 'ADMIN', 'OWNER'] as const;
type Role = (typeof ROLES)[number];

export interface DeclaredRoute {
  operationId: string;
  method: string;
  path: string;
  isPublic: boolean;
  platformAdminOnly: boolean;
  orgRole?: { least: Role; platformAdmin?: boolean };
  paging?: PagingDoc;
  doc?: OperationDoc;
}

export interface DocumentedOperation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  responses: Record<string, { description?: string; content?: Record<string, { schema?: unknown }> }>;
}

const meta = <T>(key: string, handler: object, controller: object): T | undefined =>
  (Reflect.getMetadata(key, handler) ?? Reflect.getMetadata(key, controller)) as T | undefined;

/** Every route of the running app, keyed "method /path" like the document. */
export function declaredRoutes(modules: ModulesContainer): Map<string, DeclaredRoute> {
  const out = new Map<string, DeclaredRoute>();
  for (const mod of modules.values()) {
    for (const wrapper of mod.controllers.values()) {
      const type = wrapper.metatype as (new (...a: never[]) => unknown) | undefined;
      if (!type?.prototype) continue;
      for (const name of Object.getOwnPropertyNames(type.prototype)) {
        const handler = (type.prototype as Record<string, unknown>)[name];
        if (name === 'constructor' || typeof handler !== 'function') continue;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (method === undefined) continue;
        const path = ('/' + [Reflect.getMetadata(PATH_METADATA, type), Reflect.getMetadata(PATH_METADATA, handler)]
          .map((p) => String(p ?? '').replace(/^\/+|\/+$/g, ''))
          .filter(Boolean)
          .join('/')).replace(/:(\w+)/g, '{$1}');
        const route: DeclaredRoute = {
          operationId: `${type.name}_${name}`,
          method: RequestMethod[method].toLowerCase(),
          path,
          isPublic: meta<boolean>(IS_PUBLIC, handler, type) === true,
          platformAdminOnly: meta<boolean>(PLATFORM_ADMIN_ONLY, handler, type) === true,
          orgRole: meta(ORG_ROLE, handler, type),
          paging: Reflect.getMetadata(PAGING_DOC, handler),
          doc: Reflect.getMetadata(OPERATION_DOC, handler),
        };
        out.set(`${route.method} ${path}`, route);
      }
    }
  }
  return out;
}

const all = (text: string, re: RegExp) => [...text.matchAll(re)];

/** What the operation's text and answers say that its route does not; empty when they agree. */
export function contradictions(op: DocumentedOperation, route: DeclaredRoute): string[] {
  const problems: string[] = [];
  const text = `${op.summary ?? ''}\n${op.description ?? ''}`;
  const description = op.description ?? '';
  const say = (p: string) => problems.push(p);
  const least = route.orgRole?.least;
  const isRead = ['get', 'head', 'options'].includes(route.method);
  const authenticatedOnly = !route.isPublic && !route.platformAdminOnly && !least;

  // Who may call it.
  const roleClaims: [RegExp, string][] = [
    [/Needs the (\w+) role/g, 'Needs the $ role'],
    [/\((\w+) or above\)/g, '($ or above)'],
    [/\b(\w+) and above\b/g, '$ and above'],
    [/\((VIEWER|MEMBER|ADMIN|OWNER)\b/g, '($'],
  ];
  for (const [re, form] of roleClaims) {
    for (const m of all(text, re)) {
      if (!ROLES.includes(m[1] as Role)) continue;
      if (m[1] !== least) say(`says "${form.replace('$', m[1])}" but the route needs ${least ?? 'no organisation role'}`);
    }
  }
  if (/Any member of the organisation may call it/.test(text) && least !== 'VIEWER') say(`says any member may call it, but the route needs ${least ?? 'no organisation role'}`);
  if (/Platform administrators only|\(platform administrators\b/i.test(text) && !route.platformAdminOnly) say('says platform administrators only, but the route is not @PlatformAdminOnly');
  if (/Any authenticated user may call it/.test(text) && !authenticatedOnly) say('says any authenticated user may call it, but the route has a role guard or is public');
  if (/Needs no user credential/.test(text) && !route.isPublic) say('says it needs no credential, but the route is not @Public');
  if (route.doc?.access !== undefined && !authenticatedOnly) say('states its own `access`, but the route has a role guard or is public (the guard says who may call it)');
  const expected = route.isPublic
    ? 'Needs no user credential'
    : route.platformAdminOnly
      ? 'Platform administrators only'
      : least === 'VIEWER'
        ? '(VIEWER or above)'
        : least
          ? `Needs the ${least} role`
          : (route.doc?.access ?? 'Any authenticated user may call it');
  if (!description.includes(expected)) say(`does not say who may call it ("${expected}")`);
  const readOnlyClaim = /READ_ONLY personal access token gets 403/.test(description);
  const readOnlyApplies = !route.isPublic && !isRead;
  if (readOnlyClaim !== readOnlyApplies) say(readOnlyApplies ? 'does not say that a READ_ONLY token gets 403' : 'says a READ_ONLY token gets 403, but the guard lets it read');

  // Paging.
  for (const m of all(text, /sortable by ([A-Za-z]+(?:, [A-Za-z]+)*)/gi)) {
    if (!route.paging) say(`names sort properties (${m[1]}) but declares no paging`);
    else if (m[1] !== route.paging.sortable.join(', ')) say(`says sortable by ${m[1]}, but the list sorts by ${route.paging.sortable.join(', ')}`);
  }
  for (const m of all(text, /page \(form ([AB])\)|page form ([AB])\b/gi)) {
    const form = m[1] ?? m[2];
    if (!route.paging) say(`says page form ${form} but declares no paging`);
    else if (form !== route.paging.form) say(`says page form ${form}, but the list declares form ${route.paging.form}`);
  }
  const ok = JSON.stringify(op.responses['200'] ?? {});
  const envelope = /PageForm([AB])Dto/.exec(ok)?.[1];
  if (route.paging && envelope !== route.paging.form) say(`declares page form ${route.paging.form}, but its 200 schema is ${envelope ? `form ${envelope}` : 'not a page'}`);
  if (!route.paging && envelope) say(`answers a page (form ${envelope}) without a paging declaration`);
  if (route.paging && !description.includes(`Answers a page (form ${route.paging.form})`)) say('declares paging, but the description does not describe it');

  // The answers of the guards.
  const credential = !route.isPublic || (op.security ?? []).length > 0;
  if (!!op.responses['401'] !== credential) say(credential ? 'has no 401 though a credential is checked' : 'has a 401 though no credential is checked');
  const refusable = !!least || route.platformAdminOnly || readOnlyApplies || route.doc?.access !== undefined;
  if (!!op.responses['403'] !== refusable) say(refusable ? 'has no 403 though a guard can refuse it' : 'has a 403 though nothing refuses it');
  if (route.path.startsWith('/admin/') !== (op.tags ?? []).includes('Platform administration')) {
    say('an /admin path belongs to the "Platform administration" tag, and only those');
  }
  if (!description.trim() || description.trim() === op.summary?.trim()) say('has no description beyond its summary');
  return problems;
}
