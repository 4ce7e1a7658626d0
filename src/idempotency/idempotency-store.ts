import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import { DataSource, EntityManager } from 'typeorm';
import { AuditedTransactionHooks } from '../audit/audited-transaction';
import { SecretBox } from '../common/secret-box';
import {
  IDEMPOTENCY_CLAIM,
  IDEMPOTENCY_KEY_TTL_HOURS,
  IdempotencyClaim,
  IdempotencyKeyInFlightException,
  IdempotencyKeyReusedException,
  lockKey,
  StoredAnswerFound,
  StoredKey,
} from './idempotency-key';

type Queryable = Pick<EntityManager | DataSource, 'query'>;

const FIND = `
  SELECT request_hash AS "requestHash", method, path, status, answer FROM idempotency_keys
   WHERE caller = $1 AND idempotency_key = $2 AND created_at > now() - make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS})`;

/**
 * The idempotency keys' rows. Inside the change's transaction (AuditedTransaction's hooks): `began` takes the key
 * (a transaction-scoped advisory lock: a second request with the key while this one is in flight is 409 at once,
 * on any replica) and looks again for an answer stored meanwhile; `committing` writes the key's row with the answer,
 * so the row commits if and only if the change does. Answers are sealed (SecretBox): they may hold a secret shown once.
 */
@Injectable()
export class IdempotencyStore {
  constructor(
    private readonly dataSource: DataSource,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly cls: ClsService,
    private readonly box: SecretBox,
    hooks: AuditedTransactionHooks,
  ) {
    hooks.began.register(() => this.claim());
    hooks.committing.register((result) => this.commit(result));
  }

  /** The key's row of the last 24 h, outside any transaction. */
  find(caller: string, key: string, db: Queryable = this.dataSource): Promise<StoredKey | undefined> {
    return db.query(FIND, [caller, key]).then((rows: StoredKey[]) => rows[0]);
  }

  /** The stored answer's body. */
  open(claim: Pick<IdempotencyClaim, 'caller' | 'key'>, stored: StoredKey): unknown {
    return (JSON.parse(this.box.open(stored.answer!, context(claim))) as { body: unknown }).body;
  }

  /** Stores the answer of a request whose change committed without it (read after COMMIT), or that changed nothing in a transaction of its own. */
  async storeAfter(claim: IdempotencyClaim, body: unknown): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO idempotency_keys (caller, idempotency_key, method, path, request_hash, status, answer)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (caller, idempotency_key) DO UPDATE SET status = EXCLUDED.status, answer = EXCLUDED.answer
        WHERE idempotency_keys.request_hash = EXCLUDED.request_hash AND idempotency_keys.status IS NULL`,
      [claim.caller, claim.key, claim.method, claim.path, claim.hash, claim.status, this.seal(claim, body)],
    );
  }

  private current(): IdempotencyClaim | undefined {
    return this.cls.isActive() ? this.cls.get<IdempotencyClaim | undefined>(IDEMPOTENCY_CLAIM) : undefined;
  }

  private async claim(): Promise<void> {
    const claim = this.current();
    if (!claim || claim.state !== 'pending') return;
    const tx = this.txHost.tx;
    const [{ locked }] = (await tx.query('SELECT pg_try_advisory_xact_lock($1::bigint) AS locked', [lockKey(claim.caller, claim.key)])) as {
      locked: boolean;
    }[];
    if (!locked) throw new IdempotencyKeyInFlightException();
    const stored = await this.find(claim.caller, claim.key, tx);
    if (stored && stored.requestHash !== claim.hash) throw new IdempotencyKeyReusedException(stored);
    if (stored?.status != null) throw new StoredAnswerFound(stored);
    // No row, an expired one, or a change that committed before its answer was stored: this transaction goes on.
    claim.state = 'claimed';
  }

  private async commit(result: unknown): Promise<void> {
    const claim = this.current();
    if (!claim || claim.state !== 'claimed') return;
    const answer = claim.answerInTransaction ? this.seal(claim, result) : null;
    await this.txHost.tx.query(
      `INSERT INTO idempotency_keys (caller, idempotency_key, method, path, request_hash, status, answer)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (caller, idempotency_key) DO UPDATE
         SET method = EXCLUDED.method, path = EXCLUDED.path, request_hash = EXCLUDED.request_hash,
             status = EXCLUDED.status, answer = EXCLUDED.answer, created_at = now()`,
      [claim.caller, claim.key, claim.method, claim.path, claim.hash, answer === null ? null : claim.status, answer],
    );
    claim.state = answer === null ? 'committed' : 'stored';
  }

  private seal(claim: IdempotencyClaim, body: unknown): string {
    return this.box.seal(JSON.stringify({ body: body ?? null }), context(claim));
  }
}

const context = (claim: Pick<IdempotencyClaim, 'caller' | 'key'>) => `idempotency:${claim.caller}:${claim.key}`;
