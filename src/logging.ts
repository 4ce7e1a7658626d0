import { randomUUID } from 'crypto';
import type { Params } from 'nestjs-pino';
import pino, { Logger as PinoInstance } from 'pino';
import type { AppConfig } from './config/app-config';

/** Structured JSON logs with a request id on every line; credentials never logged. */
export function loggerOptions(config: AppConfig): Params {
  return {
    pinoHttp: {
      level: config.LOG_LEVEL,
      // The id is assigned by Fastify (see http-hardening.ts) and shared with pino-http here.
      genReqId: (req) => (req as { id?: string }).id ?? randomUUID(),
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.cookie',
          'req.headers["x-alert-token"]',
          'res.headers["set-cookie"]',
          '*.token',
          '*.apiToken',
          '*.accessKeySecret',
          '*.password',
          '*.clientSecret',
          '*.secret',
        ],
        censor: '[redacted]',
      },
      customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
      serializers: {
        req: (req: { id: string; method: string; url: string; remoteAddress?: string }) => ({
          id: req.id,
          method: req.method,
          url: req.url,
          remoteAddress: req.remoteAddress,
        }),
      },
    },
  };
}

/**
 * The pino instance Fastify logs requests with: "incoming request" / "request completed" lines carrying
 * `reqId` (the X-Request-Id), with the same level and redaction as the rest of the logs.
 */
export function requestLogger(config: AppConfig): PinoInstance {
  const http = loggerOptions(config).pinoHttp as { level: string; redact: { paths: string[]; censor: string } };
  return pino({ level: http.level, redact: http.redact, base: { service: 'cluster-management-service' } });
}
