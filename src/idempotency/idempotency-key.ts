import { BadRequestException, ConflictException, HttpException, HttpStatus } from '@nestjs/common';
import { createHash } from 'crypto';

/** The request header (IETF httpapi draft "The Idempotency-Key HTTP Header Field"; Stripe's behaviour). */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
/** Set on an answer that is the stored answer of an earlier request with the same key. */
export const REPLAYED_HEADER = 'idempotent-replayed';
/** How long a key and its answer are kept (the retention job deletes older rows). */
export const IDEMPOTENCY_KEY_TTL_HOURS = 24;
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/**
 * The key of a header value: a Structured Field string as the draft writes it (`"8e03978e-..."`) or the bare value
 * Stripe's clients send; 1..255 visible ASCII characters. Anything else is 400.
 */
export function parseIdempotencyKey(header: string | string[]): string {
  const raw = Array.isArray(header) ? header : [header];
  if (raw.length !== 1) throw new BadRequestException('Invalid request: send one Idempotency-Key header.');
  let value = raw[0].trim();
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
  if (!value.length || value.length > IDEMPOTENCY_KEY_MAX_LENGTH || !/^[\x21-\x7e]+$/.test(value))
    throw new BadRequestException(
      `Invalid request: Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters (a UUID is a good key).`,
    );
  return value;
}

/** JSON with object keys sorted, so the same body sent with its properties in another order is the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

/** What makes two requests "the same" for a key: method, path with query, and body. */
export function requestHash(method: string, url: string, body: unknown): string {
  return createHash('sha256').update(`${method}\n${url}\n${canonical(body ?? null)}`).digest('base64url');
}

/** A 64-bit advisory lock key of (caller, key), as the decimal text PostgreSQL's bigint takes. */
export function lockKey(caller: string, key: string): string {
  return createHash('sha256').update(`idempotency\n${caller}\n${key}`).digest().readBigInt64BE(0).toString();
}

/** The request of a key being served: set in the request's CLS store for the transaction hooks. */
export interface IdempotencyClaim {
  caller: string;
  key: string;
  hash: string;
  method: string;
  path: string;
  /** The answer's status code (the route's @HttpCode, else 201 for POST and 200 for PATCH). */
  status: number;
  /** False for a route whose answer is read after its COMMIT (@OwnTransaction): then it is stored after it. */
  answerInTransaction: boolean;
  /**
   * `pending`: no transaction has claimed the key; `claimed`: the change's transaction holds it; `stored`: committed
   * with its answer; `committed`: committed, the answer to be stored after COMMIT.
   */
  state: 'pending' | 'claimed' | 'stored' | 'committed';
}

export const IDEMPOTENCY_CLAIM = Symbol('idempotencyClaim');

/** A stored row of a key. */
export interface StoredKey {
  requestHash: string;
  method: string;
  path: string;
  status: number | null;
  answer: string | null;
}

export const IN_FLIGHT_MESSAGE =
  'A request with this Idempotency-Key is still being processed; retry after it has been answered.';

export class IdempotencyKeyInFlightException extends ConflictException {
  readonly headers = { 'retry-after': '1' };
  constructor() {
    super(IN_FLIGHT_MESSAGE);
  }
}

export class IdempotencyKeyReusedException extends HttpException {
  constructor(stored: Pick<StoredKey, 'method' | 'path'>) {
    super(
      `This Idempotency-Key was used for another request (${stored.method} ${stored.path} with another body) within the last ${IDEMPOTENCY_KEY_TTL_HOURS} h; use a new key for a new request.`,
      HttpStatus.UNPROCESSABLE_ENTITY,
    );
  }
}

/** Thrown inside the change's transaction when the key's answer is found there: the transaction ends, the answer is replayed. */
export class StoredAnswerFound extends Error {
  constructor(readonly stored: StoredKey) {
    super('The request was answered before; its stored answer is replayed');
  }
}
