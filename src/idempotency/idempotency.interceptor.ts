import { CallHandler, ExecutionContext, Injectable, Logger, NestInterceptor } from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ClsService } from 'nestjs-cls';
import { from, lastValueFrom, Observable } from 'rxjs';
import { OWN_TRANSACTION } from '../audit/audited-transaction';
import { retryReadOnce } from '../database/read-retry';
import type { Principal } from '../identity/principal';
import {
  IDEMPOTENCY_CLAIM,
  IDEMPOTENCY_KEY_HEADER,
  IdempotencyClaim,
  IdempotencyKeyInFlightException,
  IdempotencyKeyReusedException,
  parseIdempotencyKey,
  REPLAYED_HEADER,
  requestHash,
  StoredAnswerFound,
  StoredKey,
} from './idempotency-key';
import { IdempotencyStore } from './idempotency-store';

/** The methods whose requests take an Idempotency-Key (PUT and DELETE are idempotent by their definition). */
export const IDEMPOTENT_METHODS = new Set(['POST', 'PATCH']);

/**
 * Idempotency keys on POST and PATCH (docs/api.md, "Retrying writes"): a request with an `Idempotency-Key` header
 * from an authenticated caller is answered once. The first completed (2xx) answer is stored with the key, the caller
 * and the request's hash, in the change's own transaction (IdempotencyStore); a repeat with the same key and request
 * gets that answer again with `Idempotent-Replayed: true`, whatever happened to the first answer on its way (a 503
 * after COMMIT included); the same key with another request is 422; a repeat while the first is in flight is 409.
 * Errors are not stored: the change did not happen, and a retry runs it. Requests without the header, and public
 * routes (no caller to scope the key to), run as before.
 *
 * Runs inside the secret-response interceptor and outside the audit interceptor (app.factory.ts): what it stores and
 * replays is the handler's answer before its secrets are presented to the reader, as on the first answer.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Idempotency');
  /** Keys served by this process right now: a repeat is 409 before it reaches the database. */
  private readonly inFlight = new Set<string>();

  constructor(
    private readonly store: IdempotencyStore,
    private readonly cls: ClsService,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const header = request.headers[IDEMPOTENCY_KEY_HEADER];
    if (header === undefined || !IDEMPOTENT_METHODS.has(request.method)) return next.handle();
    const caller = (request as { user?: Principal }).user?.user?.identity;
    if (!caller) return next.handle();
    const handler = context.getHandler();
    const claim: IdempotencyClaim = {
      caller,
      key: parseIdempotencyKey(header),
      hash: requestHash(request.method, request.url, request.body),
      method: request.method,
      path: request.url.split('?')[0],
      status: (Reflect.getMetadata(HTTP_CODE_METADATA, handler) as number | undefined) ?? (request.method === 'POST' ? 201 : 200),
      answerInTransaction: !Reflect.getMetadata(OWN_TRANSACTION, handler) && !Reflect.getMetadata(OWN_TRANSACTION, context.getClass()),
      state: 'pending',
    };
    return from(this.serve(claim, context.switchToHttp().getResponse<FastifyReply>(), next));
  }

  private async serve(claim: IdempotencyClaim, reply: FastifyReply, next: CallHandler): Promise<unknown> {
    const scope = `${claim.caller}\n${claim.key}`;
    if (this.inFlight.has(scope)) throw new IdempotencyKeyInFlightException();
    this.inFlight.add(scope);
    try {
      // A read before the handler (and outside its transaction): run once more if its connection was lost.
      const stored = await retryReadOnce(() => this.store.find(claim.caller, claim.key), 'idempotency key lookup');
      if (stored && stored.requestHash !== claim.hash) throw new IdempotencyKeyReusedException(stored);
      if (stored?.status != null) return this.replay(claim, stored, reply);
      this.cls.set(IDEMPOTENCY_CLAIM, claim);
      let body: unknown;
      try {
        body = await lastValueFrom(next.handle(), { defaultValue: undefined });
      } catch (err) {
        if (err instanceof StoredAnswerFound) return this.replay(claim, err.stored, reply);
        throw err;
      } finally {
        this.cls.set(IDEMPOTENCY_CLAIM, undefined);
      }
      // Answered after COMMIT (@OwnTransaction), or without a transaction of the audit mechanism (a route that
      // changes nothing): stored now. If that fails the caller still gets the answer; a retry runs the request again.
      if (claim.state === 'committed' || claim.state === 'pending')
        await this.store.storeAfter(claim, body).catch((err: unknown) => this.logger.warn({ err }, 'The answer of an Idempotency-Key could not be stored'));
      return body;
    } finally {
      this.inFlight.delete(scope);
    }
  }

  private replay(claim: IdempotencyClaim, stored: StoredKey, reply: FastifyReply): unknown {
    void reply.header(REPLAYED_HEADER, 'true');
    void reply.status(stored.status!);
    return this.store.open(claim, stored);
  }
}
