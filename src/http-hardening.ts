import helmet from '@fastify/helmet';
import rateLimit from '@fastify/rate-limit';
import { BadRequestException } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createHash, randomUUID } from 'crypto';
import type { FastifyRequest } from 'fastify';
import { buildErrorBody } from './common/errors';
import type { AppConfig } from './config/app-config';
import { MetricsService } from './metrics/metrics.service';

const MAX_BODY_DEPTH = 32;

class BodyTooDeepError extends BadRequestException {
  constructor() {
    super(`The request body is nested more than ${MAX_BODY_DEPTH} levels deep.`);
  }
}

/** Depth of a parsed JSON value, walked iteratively and stopping once past `limit`. */
export function nestingDepth(value: unknown, limit: number): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (d > max) max = d;
    if (max > limit) return max;
    if (v && typeof v === 'object') for (const child of Object.values(v as object)) stack.push([child, d + 1]);
  }
  return max;
}

const UNMETERED = new Set(['/health', '/health/ready', '/metrics']);

/** Security headers, rate limiting (per credential, else per client address) and latency metrics. */
export async function hardenHttp(app: NestFastifyApplication, config: AppConfig): Promise<void> {
  await app.register(helmet, {
    // Swagger UI needs inline styles and data: images; everything else stays on 'self'.
    contentSecurityPolicy: {
      directives: {
        defaultSrc: ["'self'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:', 'validator.swagger.io'],
        scriptSrc: ["'self'", "'unsafe-inline'"],
      },
    },
    crossOriginEmbedderPolicy: false,
  });

  if (config.RATE_LIMIT_PER_MINUTE > 0) {
    await app.register(rateLimit, {
      global: true,
      max: config.RATE_LIMIT_PER_MINUTE,
      timeWindow: 60_000,
      allowList: (req: FastifyRequest) => UNMETERED.has(req.url.split('?')[0]),
      // A credential is counted as itself (hashed, never kept in clear); anonymous callers per address.
      keyGenerator: (req: FastifyRequest) => {
        const auth = req.headers.authorization;
        return auth ? 'cred:' + createHash('sha256').update(auth).digest('hex').slice(0, 32) : `ip:${req.ip}`;
      },
      errorResponseBuilder: (req, context) => {
        const body = buildErrorBody(
          429,
          `Rate limit of ${context.max} requests per minute exceeded; retry in ${Math.ceil(context.ttl / 1000)} s.`,
          req.url.split('?')[0],
        );
        return Object.assign(body, { statusCode: 429 });
      },
    });
  }

  const metrics = app.get(MetricsService);
  const fastify = app.getHttpAdapter().getInstance();
  // One request id (the caller's X-Request-Id when sane) for the response header and every log line.
  fastify.addHook('onRequest', (request, reply, done) => {
    let id = request.id;
    if (!/^[\w.-]{1,128}$/.test(id)) id = request.id = randomUUID();
    (request.raw as { id?: string }).id = id;
    void reply.header('x-request-id', id);
    done();
  });
  // Deeply nested JSON would exhaust the stack of the validators: refuse it before they run.
  fastify.addHook('preValidation', (request, _reply, done) => {
    if (request.body !== undefined && nestingDepth(request.body, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
      done(new BodyTooDeepError());
      return;
    }
    done();
  });

  fastify.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions?.url ?? 'unmatched';
    metrics.httpDuration.observe(
      { method: request.method, route, status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
    done();
  });
}
