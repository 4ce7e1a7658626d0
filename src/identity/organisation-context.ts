import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { OrganisationRole } from '../common/organisation-roles';
import type { OrganisationMemberEntity } from './organisation-member.entity';
import type { OrganisationEntity } from './organisation.entity';

/** The organisation named in the path and the caller's role in it (resolved by the access guard, src/auth). */
export interface OrganisationContext {
  organisation: OrganisationEntity;
  member: OrganisationMemberEntity | null;
  role: OrganisationRole;
}

/** The organisation context of the request, on a handler declared with @RequireOrgRole. */
export const OrgContext = createParamDecorator((_: unknown, ctx: ExecutionContext): OrganisationContext => {
  const ctxValue = ctx.switchToHttp().getRequest().organisationContext as OrganisationContext | undefined;
  if (!ctxValue) throw new Error('OrgContext used on a handler without @RequireOrgRole');
  return ctxValue;
});
