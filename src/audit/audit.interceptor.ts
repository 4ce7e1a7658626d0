import { CallHandler, ExecutionContext, Injectable, Logger, NestInterceptor, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { from, lastValueFrom, Observable } from 'rxjs';
import { actorOf, Principal, SYSTEM_ACTOR } from '../identity/principal';
import { AuditedTransaction, OWN_TRANSACTION } from './audited-transaction';
import { AuditRecorder } from './audit-recorder';

const MUTATING = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);
export const NO_AUDIT = 'audit:skip';
/** For POST operations that change nothing (e.g. validation). */
export const NoAudit = () => SetMetadata(NO_AUDIT, true);

/**
 * Every mutating request runs in one transaction together with its audit rows (AuditedTransaction): a failed change
 * leaves no audit row, and a failed audit write undoes the change. A route marked OwnTransaction runs its own.
 */
@Injectable()
export class AuditInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Audit');

  constructor(
    private readonly audited: AuditedTransaction,
    private readonly recorder: AuditRecorder,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest();
    if (!MUTATING.has(request.method)) return next.handle();
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(NO_AUDIT, targets)) return next.handle();
    const principal = request.user as Principal | undefined;
    const actor = principal ? actorOf(principal) : SYSTEM_ACTOR;
    const route = () => `${request.method} ${request.routeOptions?.url ?? request.url}`;
    this.recorder.takeAll(); // start clean
    if (this.reflector.getAllAndOverride<boolean>(OWN_TRANSACTION, targets)) {
      return from(
        (async () => {
          const result = await lastValueFrom(next.handle(), { defaultValue: undefined });
          // The use case wrote its entries before its COMMIT. Anything recorded after it is a slip: still written.
          const left = this.recorder.take();
          if (left.length) {
            this.logger.warn(`${route()} recorded ${left.length} audit entries outside its own transaction`);
            await this.audited.run(async () => left.forEach((e) => this.recorder.record(e)), { actor });
          }
          return result;
        })(),
      );
    }
    return from(
      this.audited.run(() => lastValueFrom(next.handle(), { defaultValue: undefined }), {
        actor,
        unrecorded: () => {
          this.logger.warn(`Mutating route without an audit description: ${route()}`);
          return { type: `UNCLASSIFIED_${request.method}`, referencedEntityIdentity: route() };
        },
      }),
    );
  }
}
