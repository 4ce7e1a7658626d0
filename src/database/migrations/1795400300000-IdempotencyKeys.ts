import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Idempotency keys of POST and PATCH requests (src/idempotency/): per caller and key, the hash of the request and its
 * first completed answer (sealed), written in the change's own transaction; `status` NULL while the change committed
 * but its answer, read after COMMIT, is not stored yet. Rows older than 24 h are deleted by the retention job
 * (`idempotency_keys_created_idx`). A new table only: the previous release ignores it.
 */
export class IdempotencyKeys1795400300000 implements MigrationInterface {
  name = 'IdempotencyKeys1795400300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE idempotency_keys (
        id bigserial PRIMARY KEY,
        caller text NOT NULL,
        idempotency_key text NOT NULL,
        method text NOT NULL,
        path text NOT NULL,
        request_hash text NOT NULL,
        status smallint,
        answer text,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT idempotency_keys_caller_key UNIQUE (caller, idempotency_key)
      )`);
    await q.query(`CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE idempotency_keys`);
  }
}
