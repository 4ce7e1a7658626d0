import { insertClearTextSecrets } from '../support/clear-text-secrets';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * Secrets stored in clear before they were declared (integration config values, webhook URL credentials) are sealed
 * when the service starts: the key is not in the database, so a SQL migration cannot do it.
 */
describe('secrets stored in clear before their declaration', () => {
  let t: TestApp;
  let databaseUrl: string;
  let owner: { token: string };
  const org = 'legacy-org';

  beforeAll(async () => {
    const first = await startTestApp();
    databaseUrl = first.databaseUrl;
    owner = await first.createUser('legacy-owner');
    const { id } = await first.insertOrganisation(org, [{ user: owner as never, role: 'OWNER' }]);
    // As an older version stored them: the whole config in clear, the URL with its token.
    await insertClearTextSecrets(first.db, id, { apiKey: 'legacy-key-1f2e', url: 'http://127.0.0.1:9/hook?token=legacy-token-9a8b', createdBy: 'legacy-owner' });
    await first.close();
    t = await startTestApp({}, databaseUrl);
  });
  afterAll(() => t.close());

  it('seals them at start; they read back whole where the caller may read them', async () => {
    const [integration] = await t.db.query(`SELECT config, secret_config_ciphertext FROM organisation_integrations`);
    expect(integration.config).toEqual({ channel: '#ops' });
    expect(integration.secret_config_ciphertext).toMatch(/^v1\./);
    const [hook] = await t.db.query(`SELECT identity, url, url_ciphertext FROM webhook_subscriptions`);
    expect(hook.url).toBe('http://127.0.0.1:9/hook?token=[redacted]');
    expect(hook.url_ciphertext).toMatch(/^v1\./);
    const dump = JSON.stringify([integration, hook]);
    expect(dump).not.toContain('legacy-key-1f2e');
    expect(dump).not.toContain('legacy-token-9a8b');

    const integrations = await t.as(owner.token).get(`/api/v1/orgs/${org}/integrations`);
    expect(integrations.body[0].config).toEqual({ channel: '#ops', apiKey: 'legacy-key-1f2e' });
    const webhook = await t.as(owner.token).get(`/api/v1/orgs/${org}/webhooks/${hook.identity}`);
    expect(webhook.body.url).toBe('http://127.0.0.1:9/hook?token=legacy-token-9a8b');
  });

  it('a second start finds nothing left to seal and changes nothing', async () => {
    const before = await t.db.query(`SELECT url, url_ciphertext FROM webhook_subscriptions`);
    const again = await startTestApp({}, databaseUrl);
    try {
      expect(await again.db.query(`SELECT url, url_ciphertext FROM webhook_subscriptions`)).toEqual(before);
    } finally {
      await again.close();
    }
  });
});
