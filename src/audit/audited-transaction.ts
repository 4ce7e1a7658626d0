import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, SetMetadata } from '@nestjs/common';
import { Hooks } from '../common/hooks';
import type { Actor } from '../identity/principal';
import { AuditEntry, AuditRecorder } from './audit-recorder';
import { AuditService } from './audit.service';

export const OWN_TRANSACTION = 'audit:own-transaction';

/**
 * For a handler whose use case runs its change in AuditedTransaction.run itself: the audit interceptor opens no
 * transaction around the handler, so what the handler does after the use case returns (reading the related rows of
 * its answer) runs after COMMIT and holds none of the change's row locks meanwhile.
 */
export const OwnTransaction = () => SetMetadata(OWN_TRANSACTION, true);

/**
 * Steps other modules run inside each transaction AuditedTransaction opens (not one it joins): `began` first, before
 * the change, and `committing` last, with the change's result, before COMMIT (the idempotency keys, written in the
 * change's own transaction). A step that throws undoes the change. Registered in the registering module's constructor.
 */
@Injectable()
export class AuditedTransactionHooks {
  readonly began = new Hooks<[]>();
  readonly committing = new Hooks<[result: unknown]>();
}

/**
 * The one way a change and its audit rows share a transaction: the audit interceptor wraps a mutating request in it,
 * and a use case that must COMMIT before its handler answers (OwnTransaction) wraps its change in it.
 */
@Injectable()
export class AuditedTransaction {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly recorder: AuditRecorder,
    private readonly audit: AuditService,
    private readonly hooks: AuditedTransactionHooks,
  ) {}

  /**
   * Runs `change` in a transaction and, before its COMMIT, writes the audit entries recorded meanwhile (entries the
   * change wrote in its own statements, AuditService.inStatement, are not written again): a failed change leaves no
   * audit row, and a failed audit write undoes the change. Inside a transaction already (a request the interceptor
   * wraps, a background job), it joins it and leaves its entries to whoever opened it.
   * `unrecorded`: what to record when the change recorded nothing at all.
   */
  async run<T>(change: () => Promise<T>, opts: { actor?: Actor; unrecorded?: () => AuditEntry } = {}): Promise<T> {
    if (this.txHost.isTransactionActive()) return change();
    return this.txHost.withTransaction(async () => {
      await this.hooks.began.run();
      const result = await change();
      const { pending, written } = this.recorder.takeAll();
      if (!pending.length && !written.length && opts.unrecorded) pending.push(opts.unrecorded());
      const actor = opts.actor ?? this.recorder.actor();
      for (const entry of pending) await this.audit.write(entry, actor);
      await this.hooks.committing.run(result);
      return result;
    });
  }
}
