import {
  ArgumentsHost,
  Catch,
  ConflictException,
  ExceptionFilter,
  HttpException,
  HttpStatus,
  Logger,
} from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { ValidationError } from 'class-validator';
import { QueryFailedError } from 'typeorm';
import {
  DATABASE_RETRY_AFTER_SECONDS,
  DatabaseUnavailable,
  databaseUnavailable,
  databaseUnavailableMessage,
  isDatabaseUnavailable,
} from './database-unavailable';

export class FieldErrorDto {
  @ApiProperty({ example: 'name' }) field: string;
  @ApiProperty({ example: 'name must be longer than or equal to 3 characters' }) message: string;
}

/** The one error body of the service (docs/conventions.md, "Errors"). */
export class ErrorBodyDto {
  @ApiProperty({ format: 'date-time' }) timestamp: string;
  @ApiProperty({ type: 'integer', format: 'int32', minimum: 100, maximum: 599, example: 400 }) status: number;
  @ApiProperty({ example: 'Bad Request' }) error: string;
  @ApiProperty({ example: 'Invalid request: name must be longer than or equal to 3 characters' }) message: string;
  @ApiProperty({ example: '/api/v1/orgs/acme/environments' }) path: string;
  @ApiPropertyOptional({ type: [FieldErrorDto] }) errors?: FieldErrorDto[];
}

/** Validation error lists stop here, then one entry says how many more there were. */
export const MAX_FIELD_ERRORS = 20;

function capErrors(errors: FieldErrorDto[]): FieldErrorDto[] {
  if (errors.length <= MAX_FIELD_ERRORS) return errors;
  return [
    ...errors.slice(0, MAX_FIELD_ERRORS),
    { field: '', message: `${errors.length - MAX_FIELD_ERRORS} more errors not listed` },
  ];
}

/** 400 carrying one entry per offending field (at most MAX_FIELD_ERRORS, then a count). */
export class ValidationFailedException extends HttpException {
  public readonly fieldErrors: FieldErrorDto[];

  constructor(fieldErrors: FieldErrorDto[], message?: string) {
    const capped = capErrors(fieldErrors);
    super(message ?? `Invalid request: ${capped.map((e) => e.message).join('; ')}`, HttpStatus.BAD_REQUEST);
    this.fieldErrors = capped;
  }

  static forField(field: string, message: string): ValidationFailedException {
    return new ValidationFailedException([{ field, message }]);
  }
}

/** Flattens class-validator's nested errors into {field, message} with dotted paths. */
export function flattenValidationErrors(errors: ValidationError[], parent = ''): FieldErrorDto[] {
  const out: FieldErrorDto[] = [];
  for (const e of errors) {
    const field = parent ? `${parent}.${e.property}` : e.property;
    const messages = Object.values(e.constraints ?? {});
    // A missing required field is "x is required", not a list of the bounds it would have to meet.
    if (e.value === undefined && messages.length && !e.children?.length) {
      out.push({ field, message: `${field} is required` });
      continue;
    }
    for (const msg of messages) {
      // class-validator names only the leaf property; the dotted path makes nested errors actionable.
      const text = msg.startsWith(e.property) && parent ? `${parent}.${msg}` : msg;
      out.push({ field, message: text });
    }
    if (e.children?.length) out.push(...flattenValidationErrors(e.children, field));
  }
  return out;
}

export class ServiceUnavailableError extends HttpException {
  constructor(message = 'The database is unreachable; try again shortly.') {
    super(message, HttpStatus.SERVICE_UNAVAILABLE);
  }
}

/**
 * 503 for a database that cannot be used now (database-unavailable.ts): the body names the cause and its code,
 * and `Retry-After` says when to try again. Never a 500, whichever statement of the request it hit.
 */
export class DatabaseUnavailableError extends ServiceUnavailableError {
  readonly headers = { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) };

  constructor(readonly unavailable: DatabaseUnavailable) {
    super(databaseUnavailableMessage(unavailable));
  }
}

export { isDatabaseUnavailable };

/** Maps a database error to an HTTP error a client can act on, or null when it is a server fault. */
export function mapDatabaseError(err: unknown): HttpException | null {
  if (err instanceof DatabaseUnavailableError) return err;
  const unavailable = databaseUnavailable(err);
  if (unavailable) return new DatabaseUnavailableError(unavailable);
  if (err instanceof QueryFailedError) {
    const code = (err.driverError as { code?: string } | undefined)?.code;
    const detail = (err.driverError as { detail?: string } | undefined)?.detail;
    if (code === '23505') return new ConflictException(`A resource with the same unique value already exists${detail ? ` (${detail})` : ''}.`);
    if (code === '23514' && /delete_protection/.test(String((err.driverError as { constraint?: string }).constraint ?? '')))
      return new ConflictException('The cluster has deleteProtection enabled or a deletion pending; the change was refused.');
    if (code === '40001' || code === '40P01')
      return new ConflictException('The resource was changed concurrently; retry the request.');
    // Malformed values the validators let through (e.g. a NUL byte in a path segment, a bad uuid).
    if (['22P02', '22003', '22007', '22008', '22021', '22P05', '22001', '54000', '2201B'].includes(code ?? ''))
      return new HttpException('Invalid request: a parameter has the wrong format.', HttpStatus.BAD_REQUEST);
  }
  return null;
}

export function reasonPhrase(status: number): string {
  const known: Record<number, string> = {
    400: 'Bad Request',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'Not Found',
    405: 'Method Not Allowed',
    406: 'Not Acceptable',
    409: 'Conflict',
    413: 'Payload Too Large',
    414: 'URI Too Long',
    415: 'Unsupported Media Type',
    422: 'Unprocessable Entity',
    429: 'Too Many Requests',
    500: 'Internal Server Error',
    502: 'Bad Gateway',
    503: 'Service Unavailable',
    504: 'Gateway Timeout',
  };
  return known[status] ?? (status >= 500 ? 'Internal Server Error' : 'Error');
}

export function buildErrorBody(status: number, message: string, path: string, errors?: FieldErrorDto[]): ErrorBodyDto {
  const body: ErrorBodyDto = {
    timestamp: new Date().toISOString(),
    status,
    error: reasonPhrase(status),
    message,
    path,
  };
  if (errors && errors.length) body.errors = errors;
  return body;
}

/** Turns anything thrown into {status, body}; a 500 never carries internals. */
export function toErrorResponse(
  exception: unknown,
  path: string,
  logger?: Logger,
  requestId?: string,
): { status: number; body: ErrorBodyDto; headers?: Record<string, string> } {
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const response = exception.getResponse();
    let message: string;
    if (typeof response === 'string') message = response;
    else {
      const m = (response as { message?: unknown }).message;
      message = Array.isArray(m) ? m.join('; ') : typeof m === 'string' ? m : exception.message;
    }
    if (status === 415) message = UNSUPPORTED_MEDIA_TYPE;
    let errors = exception instanceof ValidationFailedException ? exception.fieldErrors : undefined;
    // A failed health check (terminus) names each failing check, e.g. `database` or `shutdown`.
    const failing = (response as { error?: unknown; status?: unknown }).error;
    if (status === 503 && failing && typeof failing === 'object' && (response as { status?: unknown }).status === 'error') {
      errors = Object.entries(failing as Record<string, { message?: string }>).map(([check, info]) => ({
        field: check,
        message: `${check} is down${info?.message ? `: ${info.message}` : ''}`,
      }));
      message = `Not ready: ${errors.map((e) => e.message).join('; ')}.`;
    }
    const headers = (exception as { headers?: Record<string, string> }).headers;
    return { status, body: buildErrorBody(status, message, path, errors), headers };
  }
  const mapped = mapDatabaseError(exception);
  if (mapped) return toErrorResponse(mapped, path, logger, requestId);

  // Fastify's own errors (bad JSON, wrong content type, body too large) carry statusCode.
  const fe = exception as { statusCode?: number; code?: string; message?: string };
  if (fe && typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { status: fe.statusCode, body: buildErrorBody(fe.statusCode, fastifyMessage(fe), path) };
  }
  logger?.error({ err: exception, reqId: requestId, path }, 'Unhandled error');
  return {
    status: 500,
    body: buildErrorBody(500, 'An unexpected error occurred; it has been logged.', path),
  };
}

const UNSUPPORTED_MEDIA_TYPE = 'Unsupported content type: send the body as JSON with the header Content-Type: application/json.';

function fastifyMessage(fe: { statusCode?: number; code?: string; message?: string }): string {
  // Whatever the code (a missing Content-Type, a form, text): the one content type the service reads.
  if (fe.statusCode === 415) return UNSUPPORTED_MEDIA_TYPE;
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return `The request body is not valid JSON: ${fe.message ?? ''}`.trim();
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return UNSUPPORTED_MEDIA_TYPE;
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'The request body is larger than the service accepts.';
    default:
      return fe.message ?? 'Invalid request.';
  }
}

/**
 * Where an edge that rewrites URLs before routing (src/compat) keeps the URL the client requested, on the raw
 * request; error bodies name that path rather than the route's.
 */
export const REQUESTED_URL = Symbol.for('cms.requestedUrl');

/** The path the client requested (before any rewrite), without its query. */
export function requestedPath(request: { url?: string; raw?: object } | undefined): string {
  const raw = request?.raw as { [REQUESTED_URL]?: string } | undefined;
  return String(raw?.[REQUESTED_URL] ?? request?.url ?? '').split('?')[0];
}

@Catch()
export class GlobalExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const reply = ctx.getResponse();
    const request = ctx.getRequest();
    const path = requestedPath(request);
    const { status, body, headers } = toErrorResponse(exception, path, this.logger, request?.id);
    // Nest's "no such route" 404 names the URL as routed; a rewritten one (src/compat) is named as requested.
    const requested = (request?.raw as { [REQUESTED_URL]?: string } | undefined)?.[REQUESTED_URL];
    if (status === 404 && requested && body.message === `Cannot ${request.method} ${request.url}`) body.message = `Cannot ${request.method} ${requested}`;
    // Seen by the request log: an outage is logged once when it starts and once when it ends, with its causes.
    const mapped = status === 503 ? mapDatabaseError(exception) : null;
    if (mapped instanceof DatabaseUnavailableError && request?.raw) {
      request.raw.databaseUnavailable = true;
      request.raw.databaseUnavailableCode = mapped.unavailable.code;
      // The request's own line is left out during an outage (database-outage-log.ts); at debug level this one says
      // which request failed and with what error, next to the read retry's lines of the same request (reqId).
      this.logger.debug({ err: exception, method: request.method, route: request.routeOptions?.url }, 'A request answers 503: the database is unavailable');
    } else if (status === 503 && body.errors?.some((e) => e.field === 'database') && request?.raw) {
      // A readiness probe that found the database down belongs to the same outage.
      request.raw.databaseUnavailable = true;
      request.raw.databaseUnavailableCode = 'readiness';
    }
    if (headers) for (const [k, v] of Object.entries(headers)) reply.header(k, v);
    reply.status(status).header('content-type', 'application/json; charset=utf-8').send(body);
  }
}
