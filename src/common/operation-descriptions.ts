import type { OrganisationRole } from './organisation-roles';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, PagingDoc } from './paging';

/**
 * The sentences of an operation's description that the code already knows, built from what a route declares:
 * who may call it (@Public, @PlatformAdminOnly, @RequireOrgRole), the READ_ONLY token rule of the auth guard,
 * and its paging declaration (@ApiPageResponse). src/common/route-docs.ts puts them on every operation of the
 * document; the text written on the handler (@ApiDoc) says only what the code cannot.
 */

/** Who may call a route, as its guards see it. */
export type RouteAccess =
  | { kind: 'public' }
  | { kind: 'authenticated' }
  | { kind: 'platform-admin' }
  | { kind: 'organisation'; least: OrganisationRole; platformAdmin: boolean };

export const VIEWER_ACCESS = 'Any member of the organisation may call it (VIEWER or above); platform administrators may read every organisation.';
export const AUTHENTICATED_ACCESS = 'Any authenticated user may call it; it is not tied to an organisation.';
export const PLATFORM_ADMIN_ACCESS = 'Platform administrators only; everyone else gets 403.';
export const PUBLIC_ACCESS = 'Needs no user credential (no personal access token or OIDC token).';
export const READ_ONLY_REFUSED = 'A READ_ONLY personal access token gets 403.';
/** For the few operations that say it: the guard answers a non-member 403 whether or not the organisation exists. */
export const NOT_MEMBER_REFUSED = 'A caller who is not a member of the organisation gets 403.';
export const UNAUTHORIZED = 'Missing, unknown, revoked or expired credential';

/** The sentence saying who may call an operation. */
export function accessSentence(access: RouteAccess): string {
  switch (access.kind) {
    case 'public':
      return PUBLIC_ACCESS;
    case 'authenticated':
      return AUTHENTICATED_ACCESS;
    case 'platform-admin':
      return PLATFORM_ADMIN_ACCESS;
    case 'organisation': {
      if (access.least === 'VIEWER') return VIEWER_ACCESS;
      const also = access.platformAdmin ? '; platform administrators may call it too' : '';
      return access.least === 'OWNER'
        ? `Needs the OWNER role in the organisation${also}.`
        : `Needs the ${access.least} role or above in the organisation${also}.`;
    }
  }
}

/** The auth guard refuses a READ_ONLY token on every authenticated request that is not a read. */
export function readOnlyRefused(access: RouteAccess, method: string): boolean {
  return access.kind !== 'public' && !['get', 'head', 'options'].includes(method.toLowerCase());
}

/** The text of the 403 answer, from the guards that can refuse the operation; undefined when none can. */
export function forbiddenDescription(access: RouteAccess, method: string): string | undefined {
  const reasons: string[] = [];
  if (access.kind === 'organisation') reasons.push('not a member of the organisation', 'the role does not allow it');
  if (access.kind === 'platform-admin') reasons.push('not a platform administrator');
  if (readOnlyRefused(access, method)) reasons.push('the token is READ_ONLY');
  if (!reasons.length) return undefined;
  const text = reasons.length === 1 ? reasons[0] : `${reasons.slice(0, -1).join(', ')}, or ${reasons[reasons.length - 1]}`;
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Paging text: form A answers `sort` as an object, form B as an array of orders. */
export function pagingSentence(paging: PagingDoc): string {
  const sort = paging.sortable.length
    ? ` Sortable by ${paging.sortable.join(', ')} (repeat \`sort=property,asc|desc[,ignorecase]\`); any other sort property is 400.`
    : '';
  const order = paging.defaultOrder ? ` Default order: ${paging.defaultOrder}.` : '';
  return (
    `Answers a page (form ${paging.form}): \`page\` is zero-based, \`size\` defaults to ${DEFAULT_PAGE_SIZE} and is capped at ${MAX_PAGE_SIZE}.` +
    `${sort}${order}`
  );
}
