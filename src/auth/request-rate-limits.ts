import { HttpException, HttpStatus, Injectable } from '@nestjs/common';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import type { Principal } from '../identity/principal';

/**
 * The budget that applied to a request, for the RateLimit-Limit / RateLimit-Remaining / RateLimit-Reset
 * response headers (IETF draft "RateLimit header fields for HTTP"): the budget's size, what is left of it in
 * the current window, and the seconds until the window resets.
 */
export type RateLimitState = { limit: number; remaining: number; resetSeconds: number };

export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return {
    'ratelimit-limit': String(state.limit),
    'ratelimit-remaining': String(Math.max(0, state.remaining)),
    'ratelimit-reset': String(Math.max(0, state.resetSeconds)),
  };
}

function stateOf(limiter: RateLimiterMemory, res: RateLimiterRes): RateLimitState {
  return { limit: limiter.points, remaining: res.remainingPoints, resetSeconds: Math.ceil(res.msBeforeNext / 1000) };
}

/** 429 with Retry-After (seconds) and the RateLimit headers of the exhausted budget, in the service's error body. */
export class TooManyRequestsException extends HttpException {
  readonly headers: Record<string, string>;

  constructor(message: string, retryAfterMs: number, limit?: number) {
    super(message, HttpStatus.TOO_MANY_REQUESTS);
    const retryAfter = Math.max(1, Math.ceil(retryAfterMs / 1000));
    this.headers = {
      'retry-after': String(retryAfter),
      ...(limit !== undefined ? rateLimitHeaders({ limit, remaining: 0, resetSeconds: retryAfter }) : {}),
    };
  }
}

/**
 * Rate limits that need to know who is calling, applied by the authentication guard:
 * - authenticated requests are counted per user, whatever credential they carry (every spelling of it, every
 *   personal access token of the user, OIDC tokens): one budget of RATE_LIMIT_PER_MINUTE per user, so creating
 *   tokens does not multiply it;
 * - failed authentications are counted per client address with the much lower AUTH_FAILURE_LIMIT_PER_MINUTE;
 *   an address over it is refused before its credential costs a database lookup.
 * - node registrations (public, authenticated by a node join token) are counted per token, and their failed
 *   tokens per address like any failed authentication.
 * Budgets are kept in memory per replica (`rate-limiter-flexible`), like the anonymous per-address limit.
 * `consume` and `recordFailure` answer the state of the budget they counted against, which the guard sends
 * as RateLimit headers; both answer nothing when their limit is off (0).
 */
@Injectable()
export class RequestRateLimits {
  private readonly perPrincipal?: RateLimiterMemory;
  private readonly failures?: RateLimiterMemory;
  private readonly nodeRegistrations?: RateLimiterMemory;

  constructor(
    config: AppConfig,
    private readonly metrics: MetricsService,
  ) {
    if (config.RATE_LIMIT_PER_MINUTE > 0) this.perPrincipal = new RateLimiterMemory({ points: config.RATE_LIMIT_PER_MINUTE, duration: 60 });
    if (config.AUTH_FAILURE_LIMIT_PER_MINUTE > 0) {
      this.failures = new RateLimiterMemory({ points: config.AUTH_FAILURE_LIMIT_PER_MINUTE, duration: 60 });
    }
    if (config.NODE_REGISTRATION_LIMIT_PER_MINUTE > 0) {
      this.nodeRegistrations = new RateLimiterMemory({ points: config.NODE_REGISTRATION_LIMIT_PER_MINUTE, duration: 60 });
    }
  }

  /**
   * Counts one node registration made with a node join token (public route, authenticated by that token
   * only); 429 past NODE_REGISTRATION_LIMIT_PER_MINUTE for the token. Answers the token's budget left.
   */
  async consumeNodeRegistration(tokenKey: string): Promise<RateLimitState | undefined> {
    if (!this.nodeRegistrations) return undefined;
    try {
      return stateOf(this.nodeRegistrations, await this.nodeRegistrations.consume(tokenKey));
    } catch (e) {
      if (!(e instanceof RateLimiterRes)) throw e;
      this.metrics.rateLimitRejections.inc({ kind: 'node_registration' });
      throw new TooManyRequestsException(
        `Rate limit of ${this.nodeRegistrations.points} node registrations per minute for this join token exceeded; retry in ${Math.ceil(e.msBeforeNext / 1000)} s.`,
        e.msBeforeNext,
      );
    }
  }

  /** Refuses an address that failed authentication too often, before its credential is looked at. */
  async assertMayAuthenticate(address: string): Promise<void> {
    if (!this.failures) return;
    const state = await this.failures.get(address);
    if (state && state.remainingPoints <= 0) {
      this.metrics.rateLimitRejections.inc({ kind: 'authentication_failures' });
      throw new TooManyRequestsException(
        'Too many failed authentications from this address; retry later with a valid credential.',
        state.msBeforeNext,
        this.failures.points,
      );
    }
  }

  async recordFailure(address: string, reason: string): Promise<RateLimitState | undefined> {
    this.metrics.authenticationFailures.inc({ reason });
    if (!this.failures) return undefined;
    const failures = this.failures;
    const res = await failures.consume(address).catch((e: unknown) => (e instanceof RateLimiterRes ? e : undefined));
    return res ? stateOf(failures, res) : undefined;
  }

  /** Counts one request of an authenticated principal against its user's budget; 429 past it. */
  async consume(principal: Principal): Promise<RateLimitState | undefined> {
    if (!this.perPrincipal) return undefined;
    // Per user, whatever the credential: a new personal access token (itself created by a counted request) shares
    // its user's budget instead of bringing a fresh one, and OIDC tokens count with the user's PATs.
    const key = `user:${principal.user.id}`;
    try {
      return stateOf(this.perPrincipal, await this.perPrincipal.consume(key));
    } catch (e) {
      if (!(e instanceof RateLimiterRes)) throw e;
      this.metrics.rateLimitRejections.inc({ kind: 'principal' });
      throw new TooManyRequestsException(
        `Rate limit of ${this.perPrincipal.points} requests per minute exceeded; retry in ${Math.ceil(e.msBeforeNext / 1000)} s.`,
        e.msBeforeNext,
        this.perPrincipal.points,
      );
    }
  }
}
