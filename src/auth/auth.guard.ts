import { ExecutionContext, ForbiddenException, Injectable, UnauthorizedException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import { IS_PUBLIC, PLATFORM_ADMIN_ONLY, Principal } from './principal';

/** The one global guard: authenticates every route not marked @Public(). */
@Injectable()
export class ApiAuthGuard extends AuthGuard('credential') {
  constructor(private readonly reflector: Reflector) {
    super();
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;
    await super.canActivate(context);
    const request = context.switchToHttp().getRequest();
    const principal = request.user as Principal;
    if (principal.token?.type === 'READ_ONLY' && !['GET', 'HEAD', 'OPTIONS'].includes(request.method)) {
      throw new ForbiddenException('This personal access token is READ_ONLY: it may only read (GET).');
    }
    if (this.reflector.getAllAndOverride<boolean>(PLATFORM_ADMIN_ONLY, targets) && !principal.user.platformAdmin) {
      throw new ForbiddenException('This operation is reserved to platform administrators.');
    }
    return true;
  }

  override handleRequest<TUser = Principal>(err: unknown, user: TUser | false): TUser {
    if (err) throw err;
    if (!user) throw new UnauthorizedException('Authentication required.');
    return user;
  }
}
