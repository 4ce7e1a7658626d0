import { SecretBox } from '../../src/common/secret-box';
import { loadConfig } from '../../src/config/app-config';
import { loggerOptions } from '../../src/logging';
import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { createOrgWithRoles, insertCluster, insertEnvironment, OrgFixture } from '../environments/fixtures';

const CRED_KEYS = ['cloudAccountIdentity', 'cloudType', 'createdAt', 'displayName', 'identity', 'isPrimary', 'metadata'];

const SA_KEY = JSON.stringify({
  type: 'service_account',
  client_email: 'deployer@project.iam.example',
  private_key: '-----BEGIN PRIVATE KEY-----\nSECRET-P5-PRIVATE-KEY\n-----END PRIVATE KEY-----\n',
});

/** One accepted body and some refused bodies (with the field the 400 names) per platform. */
const PLATFORMS: { platform: string; profile: string; good: Record<string, unknown>; secrets: string[]; bad: [unknown, string][] }[] = [
  {
    platform: 'platform_1',
    profile: 'platform-1-default',
    good: { credentials: { accessKeyId: 'AKIA-SECRET-P1-ID', accessKeySecret: 'SECRET-P1-VALUE' }, displayName: 'p1', metadata: { k: 'v' } },
    secrets: ['SECRET-P1-VALUE', 'AKIA-SECRET-P1-ID'],
    bad: [
      [{ credentials: { accessKeyId: 'a' } }, 'credentials.accessKeySecret'],
      [{ credentials: { accessKeyId: 'a', accessKeySecret: 'b', apiToken: 'c' } }, 'credentials.apiToken'],
      [{ credentials: { accessKeyId: 'a', accessKeySecret: 'x'.repeat(257) } }, 'credentials.accessKeySecret'],
      [{ credentials: { apiToken: 'SECRET' } }, 'credentials.accessKeyId'],
      [{ displayName: 'no secret' }, 'credentials'],
      [{ credentials: 'flat' }, 'credentials'],
      [{ credentials: { accessKeyId: 'a', accessKeySecret: 'b' }, displayName: 'd'.repeat(65) }, 'displayName'],
      [{ credentials: { accessKeyId: 'a', accessKeySecret: 'b' }, metadata: { n: 1 } }, 'metadata'],
      [{ credentials: { accessKeyId: 'a', accessKeySecret: 'b' }, region: 'x' }, 'region'],
    ],
  },
  {
    platform: 'platform_2',
    profile: 'platform-2-default',
    good: {
      credentials: {
        clientId: '11111111-2222-4333-8444-555555555555',
        clientSecret: 'SECRET-P2-VALUE',
        tenantId: '21111111-2222-4333-8444-555555555555',
        subscriptionId: '31111111-2222-4333-8444-555555555555',
      },
    },
    secrets: ['SECRET-P2-VALUE'],
    bad: [
      [{ credentials: { clientId: 'x', clientSecret: 's', tenantId: '21111111-2222-4333-8444-555555555555', subscriptionId: '31111111-2222-4333-8444-555555555555' } }, 'credentials.clientId'],
      [{ credentials: { accessKeyId: 'a', accessKeySecret: 'b' } }, 'credentials.clientSecret'],
    ],
  },
  {
    platform: 'platform_3',
    profile: 'platform-3-default',
    good: { credentials: { apiToken: 'SECRET-P3-TOKEN' } },
    secrets: ['SECRET-P3-TOKEN'],
    bad: [
      [{ credentials: { apiToken: '' } }, 'credentials.apiToken'],
      [{ credentials: { apiKey: 'k', apiSecret: 's' } }, 'credentials.apiKey'],
    ],
  },
  {
    platform: 'platform_4',
    profile: 'platform-4-default',
    good: { credentials: { apiKey: 'EXO-KEY', apiSecret: 'SECRET-P4-VALUE' } },
    secrets: ['SECRET-P4-VALUE'],
    bad: [[{ credentials: { apiKey: 'k' } }, 'credentials.apiSecret']],
  },
  {
    platform: 'platform_5',
    profile: 'platform-5-default',
    good: { credentials: { serviceAccountKey: SA_KEY } },
    secrets: ['SECRET-P5-PRIVATE-KEY'],
    bad: [
      [{ credentials: { serviceAccountKey: 'not json' } }, 'credentials.serviceAccountKey'],
      [{ credentials: { serviceAccountKey: JSON.stringify({ client_email: 'a@b' }) } }, 'credentials.serviceAccountKey'],
      [{ credentials: { serviceAccountKey: '[]' } }, 'credentials.serviceAccountKey'],
    ],
  },
  {
    platform: 'platform_6',
    profile: 'platform-6-default',
    good: { credentials: { apiToken: 'SECRET-P6-TOKEN' }, displayName: 'hz' },
    secrets: ['SECRET-P6-TOKEN'],
    bad: [[{ credentials: { token: 'x' } }, 'credentials.apiToken']],
  },
  {
    platform: 'platform_7',
    profile: 'platform-7-default',
    good: { credentials: { applicationKey: 'AK', applicationSecret: 'SECRET-P7-APP', consumerKey: 'SECRET-P7-CONSUMER', projectId: 'proj' } },
    secrets: ['SECRET-P7-APP', 'SECRET-P7-CONSUMER'],
    bad: [[{ credentials: { applicationKey: 'AK', applicationSecret: 'S', consumerKey: 'C' } }, 'credentials.projectId']],
  },
  { platform: 'byon', profile: 'byon-default', good: { displayName: 'nodes' }, secrets: [], bad: [[{ credentials: { apiToken: 'x' } }, 'credentials']] },
  { platform: 'none', profile: 'test-none', good: {}, secrets: [], bad: [[{ credentials: {} }, 'credentials']] },
  { platform: 'empty', profile: 'test-empty', good: { metadata: { a: 'b' } }, secrets: [], bad: [[{ secret: 'x' }, 'secret']] },
];

describe('cloud credentials', () => {
  let t: TestApp;
  let org: OrgFixture;
  let base: string;
  let admin: ReturnType<TestApp['as']>;
  const accounts: Record<string, string> = {};
  const responses: string[] = [];

  beforeAll(async () => {
    t = await startTestApp();
    org = await createOrgWithRoles(t, 'credorg');
    base = `/api/v1/orgs/${org.slug}/cloud-accounts`;
    admin = t.as(org.users.ADMIN.token);
    // The catalog ships no public profile for none and empty; add test profiles.
    await t.db.query(
      `INSERT INTO cloud_profiles (identity, slug, display_name, type, created_at, modified_at)
       VALUES (gen_random_uuid(), 'test-none', 'none', 'none', now(), now()), (gen_random_uuid(), 'test-empty', 'empty', 'empty', now(), now())`,
    );
    for (const p of PLATFORMS) {
      const res = await admin.post(base).send({ cloudProfile: p.profile, displayName: `${p.platform} account` });
      expect(res.status).toBe(200);
      accounts[p.platform] = res.body.identity;
    }
  });
  afterAll(() => t.close());

  const fieldsOf = (body: { errors?: { field: string }[] }) => [...new Set((body.errors ?? []).map((e) => e.field))].sort();

  it.each(PLATFORMS.map((p) => [p.platform, p] as const))('%s: accepts its body, seals the secret, first becomes primary', async (_, p) => {
    const url = `${base}/${accounts[p.platform]}`;
    const res = await admin.post(`${url}/credentials/${p.platform}`).send(p.good);
    expect(res.status).toBe(200);
    responses.push(res.text);
    expect(Object.keys(res.body).sort()).toEqual(CRED_KEYS);
    expect(res.body).toMatchObject({ cloudAccountIdentity: accounts[p.platform], cloudType: p.platform, isPrimary: true });
    expect(res.body.displayName).toBe((p.good.displayName as string | undefined) ?? `${p.platform} credentials`);
    expect(res.body.metadata).toEqual(p.good.metadata ?? {});
    for (const s of p.secrets) expect(res.text).not.toContain(s);

    const [row] = await t.db.query(
      `SELECT c.secret_ciphertext, a.primary_credentials_id = c.id AS primary FROM cloud_credentials c JOIN cloud_accounts a ON a.id = c.cloud_account_id WHERE c.identity = $1`,
      [res.body.identity],
    );
    expect(row.primary).toBe(true);
    expect(row.secret_ciphertext).toMatch(/^v1\./);
    for (const s of p.secrets) expect(row.secret_ciphertext).not.toContain(s);
    const opened = JSON.parse(t.get(SecretBox).open(row.secret_ciphertext, res.body.identity));
    expect(opened).toEqual(p.good.credentials ?? {});
    // Bound to its row: the envelope does not open under another identity.
    expect(() => t.get(SecretBox).open(row.secret_ciphertext, accounts[p.platform])).toThrow();

    const account = await admin.get(url);
    expect(account.body.primaryCloudCredentialsIdentity).toBe(res.body.identity);
    const list = await admin.get(`${url}/credentials`);
    responses.push(list.text);
    expect(list.body.content).toEqual([res.body]);

    const [audit] = await t.db.query(
      `SELECT type, cloud_account_name, details FROM audit_events WHERE referenced_entity_identity = $1`,
      [res.body.identity],
    );
    expect(audit).toMatchObject({ type: 'CLOUD_CREDENTIALS_CREATED', cloud_account_name: `${p.platform} account` });
    expect(audit.details.credentials).toEqual({ old: null, new: '[redacted]' });
    expect(audit.details.isPrimary).toEqual({ old: null, new: true });
  });

  it.each(PLATFORMS.map((p) => [p.platform, p] as const))('%s: refuses wrong bodies, naming the field', async (_, p) => {
    const url = `${base}/${accounts[p.platform]}/credentials/${p.platform}`;
    for (const [body, field] of p.bad) {
      const res = await admin.post(`${url}?fieldValidation=Strict`).send(body as object);
      expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), 400]);
      expectErrorBody(res.body, 400);
      expect(fieldsOf(res.body)).toContain(field);
      responses.push(res.text);
    }
  });

  it('refuses a path platform other than the account platform, and unknown platforms', async () => {
    const p2 = PLATFORMS.find((p) => p.platform === 'platform_2')!;
    const res = await admin.post(`${base}/${accounts.platform_1}/credentials/platform_2`).send(p2.good);
    expect(res.status).toBe(400);
    expect(fieldsOf(res.body)).toEqual(['platform']);
    expect(res.body.message).toMatch(/platform_2.*platform_1/);
    responses.push(res.text);
    const unknown = await admin.post(`${base}/${accounts.platform_1}/credentials/platform_9`).send({});
    expect(unknown.status).toBe(400);
    expect(fieldsOf(unknown.body)).toEqual(['platform']);
    const missing = await admin.post(`${base}/00000000-0000-4000-8000-000000000000/credentials/platform_1`).send(PLATFORMS[0].good);
    expect(missing.status).toBe(404);
    const [{ n }] = await t.db.query(
      `SELECT count(*)::int AS n FROM cloud_credentials c JOIN cloud_accounts a ON a.id = c.cloud_account_id WHERE a.identity = $1`,
      [accounts.platform_1],
    );
    expect(n).toBe(1);
  });

  it('never shows a secret in a response, an audit detail or an activity message', async () => {
    const all = PLATFORMS.flatMap((p) => p.secrets);
    const audit = await t.db.query(`SELECT details::text AS d FROM audit_events`);
    const activity = await t.db.query(`SELECT message FROM activity_events`);
    const blob = [...responses, ...audit.map((a: { d: string }) => a.d), ...activity.map((a: { message: string }) => a.message)].join('\n');
    for (const s of all) expect(blob).not.toContain(s);
  });

  it('second credentials are not primary; delete rules: primary with clusters 409, in use 409, primary promotes newest', async () => {
    const acc = (await admin.post(base).send({ cloudProfile: 'platform-3-default', displayName: 'rules' })).body.identity;
    const url = `${base}/${acc}`;
    const mk = async (name: string) => {
      const r = await admin.post(`${url}/credentials/platform_3`).send({ displayName: name, credentials: { apiToken: `tok-${name}` } });
      expect(r.status).toBe(200);
      t.clock.advance(1000);
      return r.body;
    };
    const first = await mk('first');
    const second = await mk('second');
    const third = await mk('third');
    expect([first.isPrimary, second.isPrimary, third.isPrimary]).toEqual([true, false, false]);

    const [{ id: accountId }] = await t.db.query('SELECT id FROM cloud_accounts WHERE identity = $1', [acc]);
    const envId = await insertEnvironment(t, org.id, 'rules-env');
    const [{ id: secondId }] = await t.db.query('SELECT id FROM cloud_credentials WHERE identity = $1', [second.identity]);
    const clusterId = await insertCluster(t, {
      orgId: org.id,
      environmentId: envId,
      cloudAccountId: Number(accountId),
      slug: 'rules-cluster',
      credentialsId: Number(secondId),
    });
    const primaryRefused = await admin.delete(`${url}/credentials/${first.identity}`);
    expect(primaryRefused.status).toBe(409);
    expectErrorBody(primaryRefused.body, 409);
    expect(primaryRefused.body.message).toMatch(/primary/);
    const inUse = await admin.delete(`${url}/credentials/${second.identity}`);
    expect(inUse.status).toBe(409);
    expect(inUse.body.message).toMatch(/used by 1 cluster/);

    await t.db.query(`UPDATE clusters SET deleted_at = now(), status = 'deleted' WHERE id = $1`, [clusterId]);
    expect((await admin.delete(`${url}/credentials/${second.identity}`)).status).toBe(204);
    const delPrimary = await admin.delete(`${url}/credentials/${first.identity}`);
    expect(delPrimary.status).toBe(204);
    const account = await admin.get(url);
    expect(account.body.primaryCloudCredentialsIdentity).toBe(third.identity);
    const list = await admin.get(`${url}/credentials`);
    expect(list.body.content.map((c: { identity: string; isPrimary: boolean }) => [c.identity, c.isPrimary])).toEqual([[third.identity, true]]);

    expect((await admin.delete(`${url}/credentials/${third.identity}`)).status).toBe(204);
    expect((await admin.get(url)).body.primaryCloudCredentialsIdentity).toBeNull();
    expect((await admin.delete(`${url}/credentials/${third.identity}`)).status).toBe(404);
    const foreign = await admin.delete(`${base}/${accounts.platform_1}/credentials/${first.identity}`);
    expect(foreign.status).toBe(404);
    const bad = await admin.delete(`${url}/credentials/nope`);
    expect(bad.status).toBe(400);
    expect(fieldsOf(bad.body)).toEqual(['credentialsIdentity']);

    const audit = await t.db.query(`SELECT details FROM audit_events WHERE type = 'CLOUD_CREDENTIALS_DELETED' AND referenced_entity_identity = $1`, [
      first.identity,
    ]);
    expect(audit[0].details).toMatchObject({
      credentials: { old: '[redacted]', new: null },
      isPrimary: { old: true, new: null },
      primaryCloudCredentialsIdentity: { old: first.identity, new: third.identity },
    });
    t.clock.set(null);
  });

  it('logs no request body: the request serializer keeps only id, method, url and address', () => {
    const opts = loggerOptions(loadConfig({ DATABASE_URL: t.databaseUrl, LOG_LEVEL: 'trace' }));
    const pinoHttp = opts.pinoHttp as { serializers: { req: (r: unknown) => Record<string, unknown> } };
    const logged = pinoHttp.serializers.req({
      id: '1',
      method: 'POST',
      url: '/x',
      remoteAddress: '::1',
      body: { credentials: { accessKeySecret: 'LOGCHECK-SECRET' } },
      raw: { body: { credentials: { accessKeySecret: 'LOGCHECK-SECRET' } } },
    });
    expect(Object.keys(logged).sort()).toEqual(['id', 'method', 'remoteAddress', 'url']);
    expect(JSON.stringify(logged)).not.toContain('LOGCHECK-SECRET');
  });
});
