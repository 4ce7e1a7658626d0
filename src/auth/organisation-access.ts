import { isUuid } from '../common/uuid';
import {
  CanActivate,
  ExecutionContext,
  ForbiddenException,
  NotFoundException,
  Injectable,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { OrganisationEntity } from '../identity/organisation.entity';
import { OrganisationMemberEntity } from '../identity/organisation-member.entity';
import { OrganisationRole, roleAtLeast } from '../common/organisation-roles';
import type { OrganisationPrefetch } from '../tokens/tokens.service';
import type { Principal } from '../identity/principal';
import type { OrganisationContext } from '../identity/organisation-context';
import { ORG_ROLE, OrgRoleMeta } from '../common/route-access';
import { retryReadOnce } from '../database/read-retry';

const SLUG_PARAMS = ['organisationSlug', 'organizationSlug'];

/**
 * Resolves membership of the organisation in the path. A non-member gets 403 whether or not the
 * organisation exists, so slugs do not leak. Platform administrators may read every organisation, so they
 * get 404 for one that does not exist (nothing leaks to someone who may list them all).
 */
@Injectable()
export class OrganisationAccessGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly dataSource: DataSource,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const meta = this.reflector.getAllAndOverride<OrgRoleMeta | undefined>(ORG_ROLE, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (!meta) return true;
    const request = context.switchToHttp().getRequest();
    const principal = request.user as Principal;
    const params = (request.params ?? {}) as Record<string, string>;
    let where: string;
    let value: string | undefined;
    if (meta.identityParam) {
      value = params[meta.identityParam];
      where = 'o.identity = $1';
      if (!value || !isUuid(value)) throw this.notMember(value);
    } else {
      value = SLUG_PARAMS.map((p) => params[p]).find((v) => v !== undefined);
      where = 'o.slug = $1';
    }
    if (!value) throw this.notMember(value);
    const prefetch = request.organisationPrefetch as OrganisationPrefetch | undefined;
    let org: OrganisationEntity | null;
    let member: OrganisationMemberEntity | null;
    if (!meta.identityParam && prefetch && prefetch.slug === value) {
      // Resolved together with the personal access token: from the principal cache, or in the one statement of a miss.
      ({ organisation: org, member } = prefetch);
    } else {
      // One statement for the organisation and the caller's membership; run once more if its connection was lost.
      const found = await retryReadOnce(
        () =>
          this.dataSource
            .getRepository(OrganisationEntity)
            .createQueryBuilder('o')
            .leftJoinAndMapOne('o.callerMembership', OrganisationMemberEntity, 'm', 'm.organisation_id = o.id AND m.user_id = :uid', {
              uid: principal.user.id,
            })
            .where(where.replace('$1', ':v'), { v: value })
            .getOne(),
        'organisation access',
      );
      member = (found as (OrganisationEntity & { callerMembership?: OrganisationMemberEntity }) | null)?.callerMembership ?? null;
      if (found) delete (found as { callerMembership?: unknown }).callerMembership;
      org = found;
    }
    // Platform administrators may read every organisation, so for them a missing one is simply not found.
    if (!org && principal.user.platformAdmin) throw new NotFoundException(`Organisation '${value}' does not exist.`);
    if (!org) throw this.notMember(value);
    let role: OrganisationRole | null = member?.role ?? null;
    if (principal.user.platformAdmin) {
      // Platform administrators see every organisation; they change one only where a route allows it.
      if (meta.platformAdmin) role = 'OWNER';
      else if (!role) role = 'VIEWER';
    }
    if (!role) throw this.notMember(value);
    if (!roleAtLeast(role, meta.least)) {
      throw new ForbiddenException(`This operation needs the ${meta.least} role in organisation '${org.slug}'; you are ${role}.`);
    }
    request.organisationContext = { organisation: org, member, role } satisfies OrganisationContext;
    return true;
  }

  private notMember(value: string | undefined): ForbiddenException {
    return new ForbiddenException(`You are not a member of organisation '${value ?? ''}'.`);
  }
}
