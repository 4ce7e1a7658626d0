import { DatabaseOutageLog } from './database-outage-log';
import helmet, { HelmetOptions } from 'helmet';
import rateLimit from '@fastify/rate-limit';
import { BadRequestException } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'crypto';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'http';
import { buildErrorBody, requestedPath } from './common/errors';
import type { AppConfig } from './config/app-config';
import { MetricsService } from './metrics/metrics.service';
import { readRoutes } from './common/route-docs';

/** Bounds on the shape of a JSON body, checked before any validator walks it. */
export const BODY_SHAPE_LIMITS = { depth: 32, keysPerObject: 256, values: 20_000 };

class BodyShapeError extends BadRequestException {}

/**
 * Walks a parsed JSON value once, iteratively, stopping at the first bound it passes: nesting depth, own
 * keys of one object, values in all. Returns the refusal message, or null when the body is within bounds.
 * Cheap even for a 1 MiB body, so a crafted body costs the event loop almost nothing.
 */
export function bodyShapeViolation(value: unknown, limits = BODY_SHAPE_LIMITS): string | null {
  let values = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (++values > limits.values) return `The request body holds more than ${limits.values} values.`;
    if (depth > limits.depth) return `The request body is nested more than ${limits.depth} levels deep.`;
    if (!v || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      for (const child of v) stack.push([child, depth + 1]);
      continue;
    }
    let keys = 0;
    for (const key in v as object) {
      if (!Object.prototype.hasOwnProperty.call(v, key)) continue;
      if (++keys > limits.keysPerObject) {
        return `An object in the request body has more than ${limits.keysPerObject} properties.`;
      }
      stack.push([(v as Record<string, unknown>)[key], depth + 1]);
    }
  }
  return null;
}

const UNMETERED = new Set(['/health', '/health/ready', '/metrics']);

/**
 * `METHOD /fastify/:path` of every route the authentication guard meters (every controller route not marked
 * @Public(), read from the same metadata the guard reads). Only a request with a credential on one of these
 * skips the per-address limit: the guard counts it against its user instead. Unmatched routes (404s), the API
 * document and Swagger UI, and public routes that take their own token (alert webhook, node registration) stay
 * under the per-address limit whatever Authorization header they carry (else a made-up header would lift it).
 */
function guardedRoutes(app: NestFastifyApplication): Set<string> {
  const keys = new Set<string>();
  for (const route of readRoutes(app.get(ModulesContainer)).values()) {
    if (route.access.kind === 'public') continue;
    keys.add(`${route.method.toUpperCase()} ${route.path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1')}`);
  }
  return keys;
}

/** Helmet's settings: Swagger UI needs inline styles and data: images; everything else stays on 'self'. */
const HELMET_OPTIONS: HelmetOptions = {
  contentSecurityPolicy: {
    directives: {
      defaultSrc: ["'self'"],
      styleSrc: ["'self'", "'unsafe-inline'"],
      imgSrc: ["'self'", 'data:', 'validator.swagger.io'],
      scriptSrc: ["'self'", "'unsafe-inline'"],
    },
  },
  crossOriginEmbedderPolicy: false,
};

/**
 * The security headers helmet sets for `options`, computed once. With static directives (no nonces) they are the
 * same for every response; @fastify/helmet built helmet's middleware anew on every request (parsing the policy
 * again) behind an async hook, which cost each request more than the headers themselves.
 */
export function securityHeaders(options: HelmetOptions = HELMET_OPTIONS): Record<string, string> {
  const headers: Record<string, string> = {};
  const recorder = {
    setHeader: (name: string, value: unknown) => void (headers[name.toLowerCase()] = String(value)),
    removeHeader: (name: string) => void delete headers[name.toLowerCase()],
  };
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, (err?: unknown) => {
    if (err) throw err;
  });
  return headers;
}

/** Security headers, rate limiting (per user on authenticated routes, else per client address) and latency metrics. */
export async function hardenHttp(app: NestFastifyApplication, config: AppConfig): Promise<void> {
  const metrics = app.get(MetricsService);
  const headers = securityHeaders();
  // Every answer (errors and 404s included) carries them, set first as helmet's hook did.
  app.getHttpAdapter().getInstance().addHook('onRequest', (_request, reply, done) => {
    void reply.headers(headers);
    done();
  });

  if (config.RATE_LIMIT_PER_MINUTE > 0) {
    const guarded = guardedRoutes(app);
    // Routing happens before onRequest, so the matched route (none for a 404) is known here.
    const meteredByGuard = (req: FastifyRequest) =>
      !!req.headers.authorization && !!req.routeOptions?.url && guarded.has(`${req.method === 'HEAD' ? 'GET' : req.method} ${req.routeOptions.url}`);
    await app.register(rateLimit, {
      global: true,
      max: config.RATE_LIMIT_PER_MINUTE,
      timeWindow: 60_000,
      // Requests with a credential to a guarded route are limited per user (and failed authentications per address)
      // by the authentication guard (src/auth/request-rate-limits.ts); this limit covers every other request per
      // address: anonymous callers, unmatched routes, the API document, public routes with their own token.
      allowList: (req: FastifyRequest) => UNMETERED.has(req.url.split('?')[0]) || meteredByGuard(req),
      keyGenerator: (req: FastifyRequest) => `ip:${req.ip}`,
      // RateLimit-Limit / -Remaining / -Reset (the IETF draft names), as the guard sends for credentials.
      enableDraftSpec: true,
      onExceeded: () => metrics.rateLimitRejections.inc({ kind: 'address' }),
      errorResponseBuilder: (req, context) => {
        const body = buildErrorBody(
          429,
          `Rate limit of ${context.max} requests per minute exceeded; retry in ${Math.ceil(context.ttl / 1000)} s.`,
          requestedPath(req),
        );
        return Object.assign(body, { statusCode: 429 });
      },
    });
    // The plugin hooks every route; an unmatched request (404) has none, so the same limit (same store and
    // options) runs for every request at the root too, before any route's own work. It runs once per request.
    const instance = app.getHttpAdapter().getInstance();
    instance.addHook('onRequest', instance.rateLimit());
  }

  const fastify = app.getHttpAdapter().getInstance();
  // One request id (the caller's X-Request-Id when sane) for the response header and every log line.
  fastify.addHook('onRequest', (request, reply, done) => {
    let id = request.id;
    if (!/^[\w.-]{1,128}$/.test(id)) id = request.id = randomUUID();
    (request.raw as { id?: string }).id = id;
    void reply.header('x-request-id', id);
    done();
  });
  // Deep, wide or huge JSON would make the validators (and their error lists) cost seconds of the one
  // event loop: refuse it with a short 400 before they run.
  fastify.addHook('preValidation', (request, _reply, done) => {
    const violation = request.body === undefined ? null : bodyShapeViolation(request.body);
    done(violation ? new BodyShapeError(violation) : undefined);
  });

  // A database outage is logged as a few summary lines instead of one line per failed request.
  const outage = new DatabaseOutageLog(fastify.log, metrics);
  fastify.addHook('onClose', (_instance, done) => {
    outage.close();
    done();
  });
  // The request line holds only the fields below (no headers, no bodies, no query string), so it is written without
  // the logger's redaction, which walks every secret property path on each line, and without making the request's
  // child logger: about 25 of the 28 µs a line cost (at LOG_LEVEL=info every request writes one; under a flood of
  // refusals every refusal does).
  const requestLines = (fastify.log as FastifyBaseLogger).child({}, { redact: { paths: [] } });
  fastify.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions?.url ?? 'unmatched';
    const status = reply.statusCode;
    metrics.httpDuration.observe({ method: request.method, route, status: String(status) }, reply.elapsedTime / 1000);
    if (outage.observe(request, status)) return done();
    // One line per request: 5xx error, 4xx warn (401/404 storms show), the rest info. No headers, no bodies.
    const level = status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info';
    const log = requestLines as FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean };
    // At a level that writes nothing (info lines at LOG_LEVEL=warn) the line is not even built.
    if (log.isLevelEnabled?.(level) !== false) {
      const params = (request.params ?? {}) as Record<string, string | undefined>;
      const principal = (request as { user?: { user?: { identity?: string }; token?: { id?: number } } }).user;
      const line = {
        reqId: request.id,
        method: request.method,
        route,
        status,
        durationMs: Math.round(reply.elapsedTime * 10) / 10,
        principal: principal?.user?.identity,
        tokenId: principal?.token?.id,
        organisation: params.organisationSlug ?? params.organizationSlug,
      };
      log[level](line, level === 'error' ? 'request failed' : level === 'warn' ? 'request refused' : 'request completed');
    }
    done();
  });
}
