/**
 * The roles a member holds in an organisation. Every layer speaks of them: the access guard enforces them, route
 * declarations (@RequireOrgRole) and the OpenAPI descriptions name them, and secret fields are shown by them.
 */
/** Ordered from least to most privileged; a role includes every right of those before it. */
export const ORGANISATION_ROLES = ['VIEWER', 'MEMBER', 'ADMIN', 'OWNER'] as const;
export type OrganisationRole = (typeof ORGANISATION_ROLES)[number];

export function roleAtLeast(role: OrganisationRole, least: OrganisationRole): boolean {
  return ORGANISATION_ROLES.indexOf(role) >= ORGANISATION_ROLES.indexOf(least);
}
