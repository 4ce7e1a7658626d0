import { spawn } from 'child_process';
import { randomBytes } from 'crypto';
import * as path from 'path';
import { Client } from 'pg';
import { SecretBox } from '../../src/common/secret-box';
import { ConfigValidationError, loadConfig } from '../../src/config/app-config';
import { SEALED_COLUMNS } from '../../scripts/rotate-keys';
import { ADMIN_TOKEN, createTestDatabase, startTestApp, TEST_ENCRYPTION_KEY } from '../support/test-app';

/** Issue 39, item 3: trivially weak keys refused at start-up; the credentials encryption key rotated end to end. */

const ROOT = path.resolve(__dirname, '../..');

function run(script: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  for (const key of ['DATABASE_URL', 'CREDENTIALS_ENCRYPTION_KEY_PREVIOUS', 'METRICS_TOKEN']) if (!(key in env)) delete childEnv[key];
  const child = spawn(process.execPath, ['-r', '@swc-node/register', script], { cwd: ROOT, env: childEnv });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
}

describe('weak keys', () => {
  const base = { DATABASE_URL: 'postgres://u:p@localhost/db', NODE_ENV: 'production', BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN };
  const refusal = (env: Record<string, string>): string => {
    try {
      loadConfig({ ...base, CREDENTIALS_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, ...env });
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigValidationError);
      return (e as Error).message;
    }
    return 'accepted';
  };

  it.each([
    ['all zero', 'CREDENTIALS_ENCRYPTION_KEY', '00'.repeat(32), 'all its bytes are the same'],
    ['all one byte, base64', 'CREDENTIALS_ENCRYPTION_KEY', Buffer.alloc(32, 0x41).toString('base64'), 'all its bytes are the same'],
    ['a repeated block', 'CREDENTIALS_ENCRYPTION_KEY', '00112233445566778899aabbccddeeff'.repeat(2), 'repeats a block of 16 bytes'],
    ['counting', 'CREDENTIALS_ENCRYPTION_KEY', Buffer.from([...Array(32).keys()]).toString('hex'), 'equal steps'],
    ['a passphrase', 'CREDENTIALS_ENCRYPTION_KEY', Buffer.from('The quick brown fox jumps over!!').toString('base64'), 'printable text'],
    ['a one-character metrics token', 'METRICS_TOKEN', 'x'.repeat(24), 'all its characters are the same'],
    ['a counting admin token', 'BOOTSTRAP_ADMIN_TOKEN', 'abcdefghijklmnopqrstuvwxyz', 'equal steps'],
  ])('refuses %s, naming the variable and not the value', (_what, name, value, reason) => {
    const message = refusal({ [name]: value });
    expect(message).toContain(`${name} (value not shown): trivially weak, `);
    expect(message).toContain(reason);
    expect(message).not.toContain(value);
  });

  it('accepts a weak key among the previous ones: that is how it is rotated away', () => {
    expect(refusal({ CREDENTIALS_ENCRYPTION_KEY_PREVIOUS: '00'.repeat(32) })).toBe('accepted');
  });

  it('accepts random keys and tokens', () => {
    for (let i = 0; i < 50; i++) {
      const env = {
        CREDENTIALS_ENCRYPTION_KEY: i % 2 ? randomBytes(32).toString('hex') : randomBytes(32).toString('base64'),
        CREDENTIALS_ENCRYPTION_KEY_PREVIOUS: randomBytes(32).toString('hex'),
        METRICS_TOKEN: randomBytes(8).toString('hex'),
        BOOTSTRAP_ADMIN_TOKEN: randomBytes(10).toString('hex'),
      };
      expect(refusal(env)).toBe('accepted');
    }
  });

  it('stops the process at start-up with exit code 2', async () => {
    const result = await run('src/main.ts', { ...base, CREDENTIALS_ENCRYPTION_KEY: '00'.repeat(32), PORT: '0' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('CREDENTIALS_ENCRYPTION_KEY (value not shown): trivially weak, all its bytes are the same');
  }, 60_000);
});

describe('rotating CREDENTIALS_ENCRYPTION_KEY', () => {
  it('knows every sealed column of the schema', async () => {
    const db = new Client({ connectionString: await createTestDatabase() });
    await db.connect();
    try {
      const { rows } = await db.query(
        `SELECT table_name || '.' || column_name AS c FROM information_schema.columns
          WHERE table_schema = current_schema() AND column_name LIKE '%ciphertext%' ORDER BY 1`,
      );
      const known = SEALED_COLUMNS.map((c) => `${c.table}.${c.column}`);
      expect((rows as { c: string }[]).map((r) => r.c).filter((c) => !known.includes(c))).toEqual([]);
    } finally {
      await db.end();
    }
  });

  it('re-seals every value with the new key while the old one still reads; the service then runs on the new key alone', async () => {
    const oldKey = TEST_ENCRYPTION_KEY;
    const newKey = randomBytes(32).toString('hex');
    // Sealed values of several kinds: the demo organisation's cloud credentials and webhook, a webhook URL with a token.
    const app = await startTestApp({ DEMO_DATA: 'true' });
    const url = app.databaseUrl;
    const hook = await app
      .as(ADMIN_TOKEN)
      .post('/api/v1/orgs/acme/webhooks')
      .send({ url: 'http://127.0.0.1:9/in?token=s3cr3t-value', eventTypes: ['WEBHOOK_PING'], enabled: false });
    if (hook.status !== 200) throw new Error(JSON.stringify(hook.body));
    await app.close();

    const db = new Client({ connectionString: url });
    await db.connect();
    try {
      const sealed = async () => {
        const all: { column: string; context: string; value: string }[] = [];
        for (const c of SEALED_COLUMNS) {
          const { rows } = await db.query(
            `SELECT t.${c.column} AS value, ${c.contextSource} AS source FROM ${c.table} t ${c.from ?? ''} WHERE t.${c.column} LIKE 'v1.%'`,
          );
          for (const r of rows as { value: string; source: string }[]) all.push({ column: `${c.table}.${c.column}`, context: c.context(r.source), value: r.value });
        }
        return all;
      };
      const before = await sealed();
      expect(new Set(before.map((s) => s.column))).toEqual(
        // The demo's disabled example driver brings a sealed signing secret.
        new Set(['cloud_credentials.secret_ciphertext', 'cluster_drivers.secret_ciphertext', 'webhook_subscriptions.secret_ciphertext', 'webhook_subscriptions.url_ciphertext']),
      );
      const onlyNew = new SecretBox(loadConfig({ CREDENTIALS_ENCRYPTION_KEY: newKey }));
      for (const s of before) expect(() => onlyNew.open(s.value, s.context)).toThrow();

      // Without the old key among the previous ones, the command refuses and changes nothing.
      const refused = await run('scripts/rotate-keys.ts', { DATABASE_URL: url, CREDENTIALS_ENCRYPTION_KEY: newKey });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/no configured key opens it/);
      expect(await sealed()).toEqual(before);

      const rotated = await run('scripts/rotate-keys.ts', { DATABASE_URL: url, CREDENTIALS_ENCRYPTION_KEY: newKey, CREDENTIALS_ENCRYPTION_KEY_PREVIOUS: oldKey });
      expect({ code: rotated.code, stderr: rotated.stderr }).toEqual({ code: 0, stderr: '' });
      expect(rotated.stdout).toContain('webhook_subscriptions.url_ciphertext: 1 re-sealed, 0 already on the current key');
      const after = await sealed();
      expect(after).toHaveLength(before.length);
      const old = new SecretBox(loadConfig({ CREDENTIALS_ENCRYPTION_KEY: oldKey }));
      for (const s of after) {
        const was = before.find((b) => b.column === s.column && b.context === s.context)!;
        expect(onlyNew.open(s.value, s.context)).toBe(old.open(was.value, was.context));
      }
      expect(onlyNew.open(after.find((s) => s.column === 'webhook_subscriptions.url_ciphertext')!.value, `webhook-url:${hook.body.identity}`)).toBe(
        'http://127.0.0.1:9/in?token=s3cr3t-value',
      );

      // Again: nothing left to do.
      const again = await run('scripts/rotate-keys.ts', { DATABASE_URL: url, CREDENTIALS_ENCRYPTION_KEY: newKey, CREDENTIALS_ENCRYPTION_KEY_PREVIOUS: oldKey });
      expect(again.code).toBe(0);
      expect(again.stdout).not.toMatch(/[1-9]\d* re-sealed/);
    } finally {
      await db.end();
    }

    // The service on the new key alone reads what was sealed with the old one: the webhook's URL (the owner sees it).
    const renewed = await startTestApp({ CREDENTIALS_ENCRYPTION_KEY: newKey }, url);
    try {
      const read = await renewed.as(ADMIN_TOKEN).get(`/api/v1/orgs/acme/webhooks/${hook.body.identity}`);
      expect(read.status).toBe(200);
      expect(read.body.url).toMatch(/^http:\/\/127\.0\.0\.1:9\/in\?token=/);
    } finally {
      await renewed.close();
    }
  }, 120_000);
});
