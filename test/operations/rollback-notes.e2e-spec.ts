import * as fs from 'fs';
import { lexer, type Tokens } from 'marked';
import * as path from 'path';
import { insertClearTextSecrets } from '../support/clear-text-secrets';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * The CHANGELOG's rollback steps for the one-way change of 2026-11-23 (webhook URL credentials and integration
 * credentials sealed), run as written against a database the service sealed: before rolling back, subscriptions
 * whose URL an older build would read redacted are disabled; an older build then writes URLs and credentials in clear
 * beside the stale sealed copies; before rolling forward, the steps drop the stale copies, so the new build seals what
 * the older one wrote instead of using what it had sealed before.
 */
const CHANGELOG = path.resolve(__dirname, '../../CHANGELOG.md');

/** The SQL blocks of one release's section, psql meta-commands (`\copy`) left out. */
function sqlOf(release: string): string[] {
  const tokens = lexer(fs.readFileSync(CHANGELOG, 'utf8'));
  const start = tokens.findIndex((t) => t.type === 'heading' && (t as Tokens.Heading).depth === 2 && (t as Tokens.Heading).text === release);
  const end = tokens.findIndex((t, i) => i > start && t.type === 'heading' && (t as Tokens.Heading).depth === 2);
  const blocks: string[] = [];
  const walk = (list: Tokens.Generic[]) => {
    for (const t of list) {
      if (t.type === 'code' && t.lang === 'sql') blocks.push(t.text.split('\n').filter((l: string) => !l.startsWith('\\')).join('\n'));
      if (t.type === 'list') walk((t as Tokens.List).items.flatMap((item) => item.tokens as Tokens.Generic[]));
    }
  };
  walk(tokens.slice(start, end < 0 ? undefined : end) as Tokens.Generic[]);
  return blocks;
}

describe('CHANGELOG rollback steps for sealed webhook URLs and integration credentials', () => {
  const [disableSealedWebhooks, clearStaleWebhookUrls, clearStaleIntegrationSecrets] = sqlOf('2026-11-23');
  const org = 'rollback-org';
  let databaseUrl: string;
  let owner: { token: string };
  let sealedHook: string;
  let plainHook: string;
  const restart = async (): Promise<TestApp> => startTestApp({}, databaseUrl);

  beforeAll(async () => {
    // Rows as a build before the secret mechanism stored them; the next start seals them.
    const first = await startTestApp();
    databaseUrl = first.databaseUrl;
    owner = await first.createUser('rollback-owner');
    const { id } = await first.insertOrganisation(org, [{ user: owner as never, role: 'OWNER' }]);
    ({ webhookIdentity: sealedHook } = await insertClearTextSecrets(first.db, id, {
      apiKey: 'first-key-1111',
      url: 'http://127.0.0.1:9/hook?token=first-token-1111',
      createdBy: 'rollback-owner',
    }));
    const [plain] = await first.db.query(
      `INSERT INTO webhook_subscriptions (organisation_id, url, event_types, secret_ciphertext, created_by, created_at, modified_at)
       VALUES ($1, 'http://127.0.0.1:9/plain', '{*}', 'v1.x.y.z', 'rollback-owner', now(), now()) RETURNING identity`,
      [id],
    );
    plainHook = plain.identity;
    await first.close();
    await (await restart()).close();
  });

  it('finds the three steps in the CHANGELOG', () => {
    expect(disableSealedWebhooks).toMatch(/^UPDATE webhook_subscriptions SET enabled = false/);
    expect(clearStaleWebhookUrls).toMatch(/^UPDATE webhook_subscriptions SET url_ciphertext = NULL/);
    expect(clearStaleIntegrationSecrets).toMatch(/^UPDATE organisation_integrations SET secret_config_ciphertext = NULL/);
  });

  it('before rolling back: an older build would read the redacted URL, so those subscriptions are disabled, the others not', async () => {
    const t = await restart();
    try {
      const [hook] = await t.db.query(`SELECT url, url_ciphertext FROM webhook_subscriptions WHERE identity = $1`, [sealedHook]);
      expect(hook.url).toBe('http://127.0.0.1:9/hook?token=[redacted]'); // what a build before the change delivers to
      await t.db.query(disableSealedWebhooks);
      const rows: { identity: string; enabled: boolean }[] = await t.db.query(`SELECT identity, enabled FROM webhook_subscriptions`);
      expect(Object.fromEntries(rows.map((r) => [r.identity, r.enabled]))).toEqual({ [sealedHook]: false, [plainHook]: true });
    } finally {
      await t.close();
    }
  });

  it('before rolling forward: what the older build wrote in clear is sealed and read back, not the stale copy', async () => {
    // The older build, as it writes: the URL in `url`, the whole config in `config`; it knows nothing of the sealed
    // columns, which keep the values from before the rollback.
    const direct = await restart();
    try {
      await direct.db.query(`UPDATE webhook_subscriptions SET url = 'http://127.0.0.1:9/hook?token=second-token-2222', enabled = true WHERE identity = $1`, [sealedHook]);
    } finally {
      await direct.close();
    }

    // Without the step, the new build keeps using the stale sealed URL.
    const stale = await restart();
    try {
      const res = await stale.as(owner.token).get(`/api/v1/orgs/${org}/webhooks/${sealedHook}`);
      expect(res.body.url).toBe('http://127.0.0.1:9/hook?token=first-token-1111');
      await stale.db.query(`UPDATE organisation_integrations SET config = '{"channel":"#ops","apiKey":"second-key-2222"}'`);
      // The steps, run with the service stopped, before the new build starts.
      await stale.db.query(clearStaleWebhookUrls);
      await stale.db.query(clearStaleIntegrationSecrets);
    } finally {
      await stale.close();
    }

    const t = await restart();
    try {
      const hook = await t.as(owner.token).get(`/api/v1/orgs/${org}/webhooks/${sealedHook}`);
      expect(hook.body.url).toBe('http://127.0.0.1:9/hook?token=second-token-2222');
      const [row] = await t.db.query(`SELECT url, url_ciphertext FROM webhook_subscriptions WHERE identity = $1`, [sealedHook]);
      expect(row.url).toBe('http://127.0.0.1:9/hook?token=[redacted]');
      expect(row.url_ciphertext).toMatch(/^v1\./);
      const integrations = await t.as(owner.token).get(`/api/v1/orgs/${org}/integrations`);
      expect(integrations.body[0].config).toEqual({ channel: '#ops', apiKey: 'second-key-2222' });
      const [integration] = await t.db.query(`SELECT config FROM organisation_integrations`);
      expect(integration.config).toEqual({ channel: '#ops' });
    } finally {
      await t.close();
    }
  });
});
