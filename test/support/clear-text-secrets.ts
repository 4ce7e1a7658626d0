import type { DataSource } from 'typeorm';

/**
 * Rows as the builds before the secret mechanism stored them: an alerting integration's whole config (credentials
 * included) and a webhook subscription whose URL carries its token, both in clear. The next start of the service seals
 * them.
 */
export async function insertClearTextSecrets(
  db: DataSource,
  organisationId: number | string,
  values: { apiKey: string; url: string; createdBy: string },
): Promise<{ webhookIdentity: string }> {
  await db.query(
    `INSERT INTO organisation_integrations (organisation_id, type, display_name, enabled, config, created_at, modified_at)
     VALUES ($1, 'alerting', 'Alerting', true, $2, now(), now())`,
    [organisationId, JSON.stringify({ channel: '#ops', apiKey: values.apiKey })],
  );
  const [hook] = await db.query(
    `INSERT INTO webhook_subscriptions (organisation_id, url, event_types, secret_ciphertext, created_by, created_at, modified_at)
     VALUES ($1, $2, '{*}', 'v1.x.y.z', $3, now(), now()) RETURNING identity`,
    [organisationId, values.url, values.createdBy],
  );
  return { webhookIdentity: hook.identity as string };
}
