import { MigrationInterface, QueryRunner } from 'typeorm';

/** A cluster policy may name the operations it applies to (CREATE, UPDATE, DELETE); null: every operation (ADR 0172). */
export class PolicyOperations1795400171000 implements MigrationInterface {
  name = 'PolicyOperations1795400171000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE cluster_policies ADD COLUMN operations text[]`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE cluster_policies DROP COLUMN operations`);
  }
}
