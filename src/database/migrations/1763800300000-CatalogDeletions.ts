import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Remembers catalog entries a platform administrator deleted through /admin/v1, so the start-up
 * catalog load (data/catalog.yaml) does not bring them back. Creating the entry again clears it.
 */
export class CatalogDeletions1763800300000 implements MigrationInterface {
  name = 'CatalogDeletions1763800300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE catalog_deletions (
        kind text NOT NULL CHECK (kind IN ('cluster_version', 'update_channel')),
        key text NOT NULL,
        deleted_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (kind, key)
      )
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE catalog_deletions`);
  }
}
