import { CanActivate, ExecutionContext, ForbiddenException, Injectable, UnauthorizedException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { createHash, timingSafeEqual } from 'crypto';
import type { FastifyRequest } from 'fastify';
import { Authenticator } from 'passport';
import { Strategy as CustomStrategy } from 'passport-custom';
import { ClsService } from 'nestjs-cls';
import { AppConfig } from '../config/app-config';
import { CredentialStrategy } from './credential.strategy';
import { CLS_PRINCIPAL, Principal } from '../identity/principal';
import { IS_PUBLIC, METRICS_TOKEN_ACCEPTED, PLATFORM_ADMIN_ONLY } from '../common/route-access';
import { RateLimitState, rateLimitHeaders, RequestRateLimits } from './request-rate-limits';

/** A metrics label for a 401, from its message. */
function failureReason(message: string): string {
  if (/required/i.test(message)) return 'missing';
  if (/must be "Token/i.test(message)) return 'malformed';
  if (/expired/i.test(message)) return 'expired';
  if (/revoked/i.test(message)) return 'revoked';
  if (/address/i.test(message)) return 'address';
  if (/OIDC|JWT|issuer|audience|signature/i.test(message)) return 'oidc';
  return 'unknown';
}

/** RateLimit-Limit / -Remaining / -Reset on the reply, when a limit is on (anonymous callers get them from @fastify/rate-limit). */
function setRateLimitHeaders(reply: { header(name: string, value: string): unknown }, state: RateLimitState | undefined): void {
  if (!state) return;
  for (const [name, value] of Object.entries(rateLimitHeaders(state))) reply.header(name, value);
}

/**
 * The one global guard: authenticates every route not marked @Public() through passport, with this app's own
 * `Authenticator` instance holding this app's credential strategy. Passport's default instance (which
 * `@nestjs/passport` registers strategies on) is global to the process: with two app instances in one process (the
 * replica tests) both would authenticate with whichever registered last, i.e. with the other app's principal cache.
 */
@Injectable()
export class ApiAuthGuard implements CanActivate {
  private readonly passport = new Authenticator();

  constructor(
    private readonly reflector: Reflector,
    private readonly limits: RequestRateLimits,
    private readonly config: AppConfig,
    private readonly cls: ClsService,
    credentials: CredentialStrategy,
  ) {
    this.passport.use(
      'credential',
      new CustomStrategy((req, done) => {
        credentials.validate(req as unknown as FastifyRequest).then((principal) => done(null, principal), done);
      }),
    );
  }

  /** The principal of the request's Authorization header (passport-custom strategy `credential`, no session). */
  private authenticate(request: FastifyRequest, reply: unknown): Promise<Principal> {
    return new Promise((resolve, reject) => {
      const middleware = this.passport.authenticate('credential', { session: false }, (err: unknown, principal: Principal | false) => {
        if (err) reject(err);
        else if (principal) resolve(principal);
        else reject(new UnauthorizedException('Authentication required: send Authorization: Token <personal access token> or Bearer <token>.'));
      }) as (req: unknown, res: unknown, next: (err?: unknown) => void) => void;
      middleware(request, reply, reject);
    });
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest & { user?: Principal }>();
    if (this.reflector.getAllAndOverride<boolean>(METRICS_TOKEN_ACCEPTED, targets) && this.isMetricsToken(request.headers.authorization)) {
      return true;
    }
    await this.limits.assertMayAuthenticate(request.ip);
    const reply = context.switchToHttp().getResponse<{ header(name: string, value: string): unknown }>();
    let principal: Principal;
    try {
      principal = await this.authenticate(request, reply);
    } catch (e) {
      // A 401 carries the state of the address's failed-authentication budget.
      if (e instanceof UnauthorizedException) setRateLimitHeaders(reply, await this.limits.recordFailure(request.ip, failureReason(e.message)));
      throw e;
    }
    request.user = principal;
    // The CLS context holds the raw request, which does not carry the principal set here.
    if (this.cls.isActive()) this.cls.set(CLS_PRINCIPAL, principal);
    // Every later answer (2xx, 403, 404, ...) carries the state of the principal's budget.
    setRateLimitHeaders(reply, await this.limits.consume(principal));
    if (principal.token?.type === 'READ_ONLY' && !['GET', 'HEAD', 'OPTIONS'].includes(request.method)) {
      throw new ForbiddenException('This personal access token is READ_ONLY: it may only read (GET).');
    }
    if (this.reflector.getAllAndOverride<boolean>(PLATFORM_ADMIN_ONLY, targets) && !principal.user.platformAdmin) {
      throw new ForbiddenException('This operation is reserved to platform administrators.');
    }
    return true;
  }

  private isMetricsToken(header: string | undefined): boolean {
    const expected = this.config.METRICS_TOKEN;
    const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!expected || !match) return false;
    const a = createHash('sha256').update(match[1]).digest();
    const b = createHash('sha256').update(expected).digest();
    return timingSafeEqual(a, b);
  }
}
