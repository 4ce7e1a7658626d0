import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { ClsService } from 'nestjs-cls';
import type { PersonalAccessTokenEntity } from './personal-access-token.entity';
import type { UserEntity } from './user.entity';

/** Who is calling: the user, and the token used when it was a PAT. */
export interface Principal {
  user: UserEntity;
  kind: 'pat' | 'oidc';
  token?: PersonalAccessTokenEntity;
}

/** The actor recorded on audit and activity rows; `system` for background work. */
export interface Actor {
  id: number | null;
  identity: string | null;
  username: string;
}
export const SYSTEM_ACTOR: Actor = { id: null, identity: null, username: 'system' };
export const actorOf = (p: Principal): Actor => ({ id: p.user.id, identity: p.user.identity, username: p.user.username });

/**
 * Where the authentication guard keeps the request's principal in its CLS context, for code deep inside use cases
 * that acts for the caller without every caller passing it (the policy enforcer's `request.user`).
 */
export const CLS_PRINCIPAL = 'auth.principal';

/** The principal of the request being handled (stored by the guard), or undefined outside a request. */
export const currentPrincipal = (cls: ClsService): Principal | undefined =>
  cls.isActive() ? cls.get<Principal | undefined>(CLS_PRINCIPAL) : undefined;

export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  return ctx.switchToHttp().getRequest().user as Principal;
});
