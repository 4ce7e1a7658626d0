import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Secrets that were stored in clear get a sealed column (SecretBox, src/common/secret-fields.ts):
 * - an organisation integration's `config` keeps its public settings in `config`; the values of every other key (the
 *   alerting product's credentials) are sealed together in `secret_config_ciphertext`;
 * - a webhook subscription whose URL carries credentials (userinfo, query, fragment) keeps it sealed in
 *   `url_ciphertext`, and `url` holds it redacted (the redacted form may be longer: `url` becomes text).
 * Rows written before this migration are sealed when the service starts (the key is not in the database), by the
 * services owning them: OrganisationIntegrationsService and WebhooksService.
 */
export class SealedIntegrationSecrets1795400052817 implements MigrationInterface {
  name = 'SealedIntegrationSecrets1795400052817';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE organisation_integrations ADD COLUMN secret_config_ciphertext text;
      ALTER TABLE webhook_subscriptions ADD COLUMN url_ciphertext text, ALTER COLUMN url TYPE text;
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE organisation_integrations DROP COLUMN secret_config_ciphertext;
      ALTER TABLE webhook_subscriptions DROP COLUMN url_ciphertext;
    `);
  }
}
