import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { CallHandler, ExecutionContext, Injectable, Logger, NestInterceptor, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { from, lastValueFrom, Observable } from 'rxjs';
import { actorOf, Principal, SYSTEM_ACTOR } from '../auth/principal';
import { AuditRecorder } from './audit-recorder';
import { AuditService } from './audit.service';

const MUTATING = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);
export const NO_AUDIT = 'audit:skip';
/** For POST operations that change nothing (e.g. validation). */
export const NoAudit = () => SetMetadata(NO_AUDIT, true);

/**
 * Every mutating request runs in one transaction together with its audit rows: a failed change
 * leaves no audit row, and a failed audit write undoes the change.
 */
@Injectable()
export class AuditInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Audit');

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly recorder: AuditRecorder,
    private readonly audit: AuditService,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest();
    if (!MUTATING.has(request.method)) return next.handle();
    if (this.reflector.getAllAndOverride<boolean>(NO_AUDIT, [context.getHandler(), context.getClass()])) return next.handle();
    const principal = request.user as Principal | undefined;
    const actor = principal ? actorOf(principal) : SYSTEM_ACTOR;
    return from(
      this.txHost.withTransaction(async () => {
        this.recorder.take(); // start clean
        const result = await lastValueFrom(next.handle(), { defaultValue: undefined });
        const entries = this.recorder.take();
        if (entries.length === 0) {
          const route = `${request.method} ${request.routeOptions?.url ?? request.url}`;
          this.logger.warn(`Mutating route without an audit description: ${route}`);
          entries.push({ type: `UNCLASSIFIED_${request.method}`, referencedEntityIdentity: route });
        }
        for (const entry of entries) await this.audit.write(entry, actor);
        return result;
      }),
    );
  }
}
