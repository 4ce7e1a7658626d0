import { SetMetadata } from '@nestjs/common';
import type { OrganisationRole } from './organisation-roles';

/**
 * Who may call a route, as the route declares it. Declarations only: the guards of src/auth enforce them, and
 * src/common/route-docs.ts writes them into each operation's description (the same metadata both read), like the
 * other route declarations of this folder (@ApiDoc, @ApiPageResponse).
 */

export const IS_PUBLIC = 'auth:public';
/** Marks the few routes that need no credential (health, docs). */
export const Public = () => SetMetadata(IS_PUBLIC, true);

export const PLATFORM_ADMIN_ONLY = 'auth:platform-admin';
/** Restricts a route (or a controller) to platform administrators. */
export const PlatformAdminOnly = () => SetMetadata(PLATFORM_ADMIN_ONLY, true);

/** Routes that also accept `Authorization: Bearer <METRICS_TOKEN>` (the Prometheus scrape). */
export const METRICS_TOKEN_ACCEPTED = 'auth:metrics-token';
export const MetricsTokenAccepted = () => SetMetadata(METRICS_TOKEN_ACCEPTED, true);

export interface OrgRoleOptions {
  /** Path parameter holding the organisation; slug parameters by default. */
  identityParam?: string;
  /** Lets a platform administrator act without being a member (e.g. delete an organisation). */
  platformAdmin?: boolean;
}
/** What @RequireOrgRole stores under ORG_ROLE. */
export interface OrgRoleMeta extends OrgRoleOptions {
  least: OrganisationRole;
}

export const ORG_ROLE = 'auth:org-role';
/** The least organisation role a handler needs; the caller's membership is resolved once per request. */
export const RequireOrgRole = (least: OrganisationRole, options: OrgRoleOptions = {}) =>
  SetMetadata(ORG_ROLE, { least, ...options } satisfies OrgRoleMeta);
