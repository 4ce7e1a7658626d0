import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import type { Observable } from 'rxjs';
import type { Principal } from '../auth/principal';

export const POLICY_CALLER = 'policies.caller';

/**
 * Keeps the authenticated caller in the request's CLS context, so the policy enforcer (called deep inside use
 * cases) can fill `request.user` without every caller passing it. The CLS context holds the raw request, which
 * does not carry the principal the guard set on the framework's request.
 */
@Injectable()
export class PolicyCallerInterceptor implements NestInterceptor {
  constructor(private readonly cls: ClsService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() === 'http' && this.cls.isActive()) {
      const principal = context.switchToHttp().getRequest<{ user?: Principal }>().user;
      if (principal?.user) this.cls.set(POLICY_CALLER, principal);
    }
    return next.handle();
  }
}
