import { randomUUID } from 'crypto';
import type { Params } from 'nestjs-pino';
import type { AppConfig } from './config/app-config';

/** Structured JSON logs with a request id on every line; credentials never logged. */
export function loggerOptions(config: AppConfig): Params {
  return {
    pinoHttp: {
      level: config.LOG_LEVEL,
      genReqId: (req, res) => {
        const incoming = req.headers['x-request-id'];
        const id = typeof incoming === 'string' && /^[\w.-]{1,128}$/.test(incoming) ? incoming : randomUUID();
        res.setHeader('x-request-id', id);
        return id;
      },
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
