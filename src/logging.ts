import { randomUUID } from 'crypto';
import type { LoggerService } from '@nestjs/common';
import { ClsServiceManager } from 'nestjs-cls';
import type { Params } from 'nestjs-pino';
import pino, { Logger as PinoInstance } from 'pino';
import { CLS_REQUEST_ID } from './common/request-id';
import { secretPropertyNames } from './common/secret-fields';
import { REDACTED, redactUrlsInText } from './common/secret-text';
import type { AppConfig } from './config/app-config';

/**
 * What the logger redacts: credential headers, and every declared secret property (src/common/secret-fields.ts) up to
 * three levels deep in a logged object.
 */
function redactPaths(): string[] {
  const names = secretPropertyNames().flatMap((n) => [n, `*.${n}`, `*.*.${n}`]);
  return ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-alert-token"]', 'res.headers["set-cookie"]', ...names];
}

/** Log messages (the text argument of a log call) carry no URL credentials. */
const logMethod: NonNullable<pino.LoggerOptions['hooks']>['logMethod'] = function (this: PinoInstance, args, method) {
  method.apply(
    this,
    args.map((a) => (typeof a === 'string' ? redactUrlsInText(a) : a)) as Parameters<typeof method>,
  );
};

/** Structured JSON logs with a request id on every line; credentials never logged. */
export function loggerOptions(config: AppConfig, destination?: NodeJS.WritableStream): Params {
  return {
    pinoHttp: {
      ...(destination ? { stream: destination } : {}),
      level: config.LOG_LEVEL,
      // The id is assigned by Fastify (see http-hardening.ts) and shared with pino-http here.
      genReqId: (req) => (req as { id?: string }).id ?? randomUUID(),
      redact: { paths: redactPaths(), censor: REDACTED },
      hooks: { logMethod },
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
export function requestLogger(config: AppConfig, destination?: NodeJS.WritableStream): PinoInstance {
  const http = loggerOptions(config).pinoHttp as { level: string; redact: { paths: string[]; censor: string }; hooks: pino.LoggerOptions['hooks'] };
  const options = { level: http.level, redact: http.redact, hooks: http.hooks, base: { service: 'cluster-management-service' } };
  return destination ? pino(options, destination) : pino(options);
}

/**
 * The process's own lines (the start-up banner, a signal received, a shutdown that took too long): JSON on stdout like
 * every other line, written synchronously (they come right before an exit) and whatever LOG_LEVEL says.
 */
export function processLogger(): PinoInstance {
  return pino({ base: { service: 'cluster-management-service' }, hooks: { logMethod } }, pino.destination({ dest: 1, sync: true }));
}

/** Nest's own start-up chatter (module wiring, one line per route): useful when debugging, noise otherwise. */
const FRAMEWORK_CONTEXTS = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestFactory', 'NestApplication']);

/** The id of the request being handled, or undefined outside a request (start-up, background work). */
function currentRequestId(): string | undefined {
  const cls = ClsServiceManager.getClsService();
  return cls.isActive() ? cls.get<string | undefined>(CLS_REQUEST_ID) : undefined;
}

/** A stack trace given as a string (how Nest's exception handlers call `error`). */
const isStack = (v: unknown): v is string => typeof v === 'string' && /\n\s*at /.test(v);

/**
 * The arguments of a log call with the request id added as `reqId`, inside a request. nestjs-pino's own request
 * context is not used: its pino-http middleware does not run here (its route pattern matches no route of this
 * Nest version), and it would make a child logger per request. The id is added only when a line is written.
 */
function withRequestId(message: unknown, optionalParams: unknown[]): [unknown, unknown[]] {
  const reqId = currentRequestId();
  if (!reqId) return [message, optionalParams];
  if (message instanceof Error) return [{ reqId, err: message }, optionalParams];
  if (typeof message === 'object' && message !== null) return [{ reqId, ...message }, optionalParams];
  // (message, stack, context): how Nest's exception handlers and `Logger.error(message, stack)` call it.
  if (optionalParams.length === 2 && isStack(optionalParams[0])) {
    const err = new Error(String(message));
    err.stack = optionalParams[0];
    return [{ reqId, err }, optionalParams.slice(1)];
  }
  // (message, context) or (message); a text with format arguments is left as it is.
  if (optionalParams.length <= 1) return [{ reqId, msg: message }, optionalParams];
  return [message, optionalParams];
}

/**
 * The application logger: nestjs-pino's, with Nest's framework lines moved down to debug, and the request id on
 * every line written while a request is handled.
 */
export class ApplicationLogger implements LoggerService {
  constructor(private readonly inner: LoggerService) {}

  log(message: unknown, ...optionalParams: unknown[]): void {
    const context = optionalParams[optionalParams.length - 1];
    if (typeof context === 'string' && FRAMEWORK_CONTEXTS.has(context)) this.inner.debug?.(message, ...optionalParams);
    else this.inner.log(...this.args(message, optionalParams));
  }
  error(message: unknown, ...optionalParams: unknown[]): void {
    this.inner.error(...this.args(message, optionalParams));
  }
  warn(message: unknown, ...optionalParams: unknown[]): void {
    this.inner.warn(...this.args(message, optionalParams));
  }
  debug(message: unknown, ...optionalParams: unknown[]): void {
    this.inner.debug?.(...this.args(message, optionalParams));
  }
  verbose(message: unknown, ...optionalParams: unknown[]): void {
    this.inner.verbose?.(...this.args(message, optionalParams));
  }
  fatal(message: unknown, ...optionalParams: unknown[]): void {
    this.inner.fatal?.(...this.args(message, optionalParams));
  }

  private args(message: unknown, optionalParams: unknown[]): [unknown, ...unknown[]] {
    const [m, rest] = withRequestId(message, optionalParams);
    return [m, ...rest];
  }
}

type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
type LogFn = (...args: unknown[]) => void;
type Bindings = Record<string, unknown>;

/**
 * Fastify's logger of one request (`request.log`, bound to its request id), made when first needed: a pino child
 * costs each request an allocation of about 17 KB (the redaction serialises its bindings), although at
 * LOG_LEVEL=warn most requests write nothing. It becomes the real child at its first line of an enabled level, or
 * when asked for a child of its own; until then levels are read from its parent.
 */
export class LazyRequestLogger {
  private real?: PinoInstance;

  constructor(
    private readonly parent: PinoInstance,
    private readonly own: Bindings,
    private readonly options: pino.ChildLoggerOptions,
  ) {}

  private logger(): PinoInstance {
    return (this.real ??= this.parent.child(this.own, this.options));
  }

  private write(level: LogLevel, args: unknown[]): void {
    if (!(this.real ?? this.parent).isLevelEnabled(level)) return;
    (this.logger()[level] as LogFn)(...args);
  }

  get level(): string {
    return (this.real ?? this.parent).level;
  }
  set level(level: string) {
    this.logger().level = level;
  }
  isLevelEnabled(level: string): boolean {
    return (this.real ?? this.parent).isLevelEnabled(level);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  silent(): void {}
  child(bindings: Bindings, options?: pino.ChildLoggerOptions): PinoInstance {
    return this.logger().child(bindings, options);
  }
  bindings(): Bindings {
    return this.real ? this.real.bindings() : { ...this.parent.bindings(), ...this.own };
  }
}

/** Fastify's `childLoggerFactory`: each request's logger is a LazyRequestLogger. */
export function lazyRequestLoggerFactory(logger: unknown, bindings: Bindings, options: pino.ChildLoggerOptions): LazyRequestLogger {
  return new LazyRequestLogger(logger as PinoInstance, bindings, options);
}
