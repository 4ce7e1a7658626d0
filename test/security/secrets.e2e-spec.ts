import { randomBytes } from 'crypto';
import { PassThrough } from 'stream';
import { declaredSecrets, DeclaredSecret, mayReadSecret, SecretReader } from '../../src/common/secret-fields';
import { ALERTMANAGER_SECRET_PATHS } from '../../src/observability/alertmanager-secret-paths';
import { OrganisationRole } from '../../src/common/organisation-roles';
import { WebhookDeliveryWorker } from '../../src/webhooks/webhook-delivery.worker';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, settle } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * Every declared secret (src/common/secret-fields.ts: the @Secret declarations the running app loaded, and every
 * secret place of an Alertmanager configuration) x every role and token kind x every outlet: the answers, the audit
 * trail, the activity feed, webhook event bodies, log lines and every database column. Clear text anywhere it may not
 * be fails; so does a declaration no scenario below writes (a new secret is covered by adding its scenario), and a
 * property of the API that looks like a secret but is not declared.
 */

interface Reader extends SecretReader {
  name: string;
  token: string;
}

/** A secret value a scenario wrote, the declaration it belongs to, and the reads that answer it. */
interface Written {
  declaration: string;
  value: string;
  /** GET paths whose answer carries this value for readers allowed to see it. */
  reads: string[];
}

interface ScenarioContext {
  t: TestApp;
  f: OrgFixture;
  unique: (label: string) => string;
  /** Answers of the writes: a shown-once secret is in the answer to its creator and nowhere else. */
  shownOnce: { declaration: string; value: string; answer: string }[];
}

type Scenario = (ctx: ScenarioContext) => Promise<Written[]>;

const id = (d: DeclaredSecret) => `${d.dto.name}.${d.property}`;

/** A JSON (hence YAML) Alertmanager configuration with a distinct value at every declared secret place. */
function alertmanagerConfigWithEverySecret(unique: (label: string) => string): { text: string; values: string[] } {
  const root: Record<string, unknown> = {};
  const values: string[] = [];
  const receivers = new Map<string, Record<string, unknown>>();
  const place = (obj: Record<string, unknown>, steps: string[], label: string) => {
    let at = obj;
    steps.forEach((s, i) => {
      const key = s === '*' ? 'X-Header' : s;
      if (i < steps.length - 1) at = (at[key] ??= {}) as Record<string, unknown>;
      else {
        const v = unique(label);
        values.push(v);
        // Lists of header secrets and proxy headers hold values in lists.
        at[key] = key === 'secrets' || steps[i - 1] === 'proxy_connect_header' ? [v] : v;
      }
    });
  };
  for (const p of ALERTMANAGER_SECRET_PATHS) {
    const steps = p.split('.');
    if (steps[0] === 'global') place(root, steps, 'am');
    else {
      const type = steps[2];
      if (!receivers.has(type)) receivers.set(type, { name: `receiver-${receivers.size}`, [type]: [{}] });
      place((receivers.get(type)![type] as Record<string, unknown>[])[0], steps.slice(4), 'am');
    }
  }
  root.route = { receiver: 'receiver-0' };
  root.receivers = [...receivers.values()];
  return { text: JSON.stringify(root, null, 1), values };
}

const PLATFORM_CREDENTIALS: Record<string, (u: (l: string) => string) => { body: Record<string, unknown>; secrets: [string, string][] }> = {
  platform_1: (u) => {
    const [a, b] = [u('p1id'), u('p1secret')];
    return { body: { accessKeyId: a, accessKeySecret: b }, secrets: [['Platform1Secret.accessKeyId', a], ['Platform1Secret.accessKeySecret', b]] };
  },
  platform_2: (u) => {
    const s = u('p2secret');
    return {
      body: { clientId: '11111111-2222-4333-8444-555555555555', clientSecret: s, tenantId: '21111111-2222-4333-8444-555555555555', subscriptionId: '31111111-2222-4333-8444-555555555555' },
      secrets: [['Platform2Secret.clientSecret', s]],
    };
  },
  platform_3: (u) => {
    const s = u('p3token');
    return { body: { apiToken: s }, secrets: [['ApiTokenSecret.apiToken', s]] };
  },
  platform_4: (u) => {
    const [a, b] = [u('p4key'), u('p4secret')];
    return { body: { apiKey: a, apiSecret: b }, secrets: [['Platform4Secret.apiKey', a], ['Platform4Secret.apiSecret', b]] };
  },
  platform_5: (u) => {
    const key = u('p5key');
    const file = JSON.stringify({ type: 'service_account', client_email: 'd@p.example', private_key: key });
    return { body: { serviceAccountKey: file }, secrets: [['Platform5Secret.serviceAccountKey', key]] };
  },
  platform_6: (u) => {
    const s = u('p6token');
    return { body: { apiToken: s }, secrets: [['ApiTokenSecret.apiToken', s]] };
  },
  platform_7: (u) => {
    const [a, b, c] = [u('p7app'), u('p7appsecret'), u('p7consumer')];
    return {
      body: { applicationKey: a, applicationSecret: b, consumerKey: c, projectId: 'project-1' },
      secrets: [['Platform7Secret.applicationKey', a], ['Platform7Secret.applicationSecret', b], ['Platform7Secret.consumerKey', c]],
    };
  },
};

/** What writes each declared secret, by declaration; several declarations (request and answer of one field) share one. */
const SCENARIOS: { covers: string[]; run: Scenario }[] = [
  ...Object.entries(PLATFORM_CREDENTIALS).map(([platform, make]) => {
    const n = platform.slice(-1);
    const containerOf = `Platform${n}CredentialsRequest.credentials`;
    return {
      covers: [containerOf, ...make(() => '').secrets.map(([d]) => d)],
      run: async ({ t, f, unique }: ScenarioContext): Promise<Written[]> => {
        const admin = t.as(f.users.admin.token);
        const account = await admin.post(`/api/v1/orgs/${f.orgSlug}/cloud-accounts`).send({ cloudProfile: `platform-${n}-default`, displayName: `secrets ${platform}` });
        expect(account.status).toBe(200);
        const { body, secrets } = make(unique);
        const created = await admin.post(`/api/v1/orgs/${f.orgSlug}/cloud-accounts/${account.body.identity}/credentials/${platform}`).send({ credentials: body });
        expect(created.status).toBe(200);
        const reads = [`/api/v1/orgs/${f.orgSlug}/cloud-accounts/${account.body.identity}/credentials`];
        return secrets.map(([declaration, value]) => ({ declaration, value, reads }));
      },
    };
  }),
  {
    covers: ['CreateDashboardIntegrationRequest.apiToken'],
    run: async ({ t, f, unique }) => {
      const value = unique('dashtoken');
      const res = await t.as(f.users.admin.token).post(`/api/v1/orgs/${f.orgSlug}/integrations/dashboard`).send({ name: 'Secret dash', url: 'http://127.0.0.1:9', apiToken: value });
      expect(res.status).toBe(200);
      return [{ declaration: 'CreateDashboardIntegrationRequest.apiToken', value, reads: [`/api/v1/orgs/${f.orgSlug}/integrations/dashboard`] }];
    },
  },
  {
    covers: ['UpdateOrganisationIntegrationRequest.config', 'OrganisationIntegrationResponse.config'],
    run: async ({ t, f, unique }) => {
      const base = `/api/v1/orgs/${f.orgSlug}/integrations`;
      const [integration] = (await t.as(f.users.admin.token).get(base)).body;
      const value = unique('integrationkey');
      const res = await t
        .as(f.users.admin.token)
        .patch(`${base}/${integration.identity}`)
        .send({ organisationIntegrationIdentity: integration.identity, enabled: true, config: { channel: '#public', apiKey: value } });
      expect(res.status).toBe(200);
      return [{ declaration: 'OrganisationIntegrationResponse.config', value, reads: [base] }];
    },
  },
  {
    covers: ['ClusterOidcConfigResponse.clientSecret'],
    run: async ({ t, f }) => {
      const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'sealed' }));
      expect(res.status).toBe(200);
      await settle(t);
      const path = `${clustersPath(f)}/sealed`;
      const value = (await t.as(f.users.owner.token).get(`${path}/oidc-config`)).body.clientSecret as string;
      expect(value).toMatch(/^[A-Za-z0-9_-]{43}$/);
      return [{ declaration: 'ClusterOidcConfigResponse.clientSecret', value, reads: [`${path}/oidc-config`, `${path}/kubeconfig`] }];
    },
  },
  {
    covers: ['PersonalAccessTokenResponse.token'],
    run: async ({ t, f, shownOnce }) => {
      const res = await t.as(f.users.admin.token).post('/sts/v1/personal-access-tokens').send({ name: 'shown once' });
      expect(res.status).toBe(200);
      shownOnce.push({ declaration: 'PersonalAccessTokenResponse.token', value: res.body.token, answer: res.text });
      return [{ declaration: 'PersonalAccessTokenResponse.token', value: res.body.token, reads: ['/sts/v1/personal-access-tokens'] }];
    },
  },
  {
    covers: ['AlertWebhookTokenResponse.token'],
    run: async ({ t, f, shownOnce }) => {
      const res = await t.as(f.users.member.token).post(`/api/v1/orgs/${f.orgSlug}/monitoring/production-sealed/alert-webhook-token`);
      expect(res.status).toBe(200);
      shownOnce.push({ declaration: 'AlertWebhookTokenResponse.token', value: res.body.token, answer: res.text });
      return [{ declaration: 'AlertWebhookTokenResponse.token', value: res.body.token, reads: [`/api/v1/orgs/${f.orgSlug}/observability/production-sealed`] }];
    },
  },
  {
    covers: ['CreateWebhookRequest.url', 'UpdateWebhookRequest.url', 'WebhookResponse.url', 'WebhookWithSecretResponse.secret'],
    run: async ({ t, f, unique, shownOnce }) => {
      const admin = t.as(f.users.admin.token);
      const base = `/api/v1/orgs/${f.orgSlug}/webhooks`;
      const first = unique('hookquery');
      const created = await admin.post(base).send({ url: `http://127.0.0.1:9/hook?token=${first}`, eventTypes: ['*'] });
      expect(created.status).toBe(200);
      shownOnce.push({ declaration: 'WebhookWithSecretResponse.secret', value: created.body.secret, answer: created.text });
      const second = unique('hookquery');
      const updated = await admin.patch(`${base}/${created.body.identity}`).send({ url: `http://127.0.0.1:9/hook?token=${second}` });
      expect(updated.status).toBe(200);
      await admin.post(`${base}/${created.body.identity}/ping`).expect(200);
      const reads = [base, `${base}/${created.body.identity}`];
      return [
        { declaration: 'WebhookResponse.url', value: second, reads },
        { declaration: 'WebhookResponse.url', value: first, reads: [] },
        { declaration: 'WebhookWithSecretResponse.secret', value: created.body.secret, reads },
      ];
    },
  },
  {
    covers: ['CreateClusterDriverRequest.signingSecret', 'UpdateClusterDriverRequest.signingSecret'],
    run: async ({ t }) => {
      // A Standard Webhooks secret, written at registration and at rotation; answered to nobody.
      const first = `whsec_${randomBytes(32).toString('base64')}`;
      const second = `whsec_${randomBytes(32).toString('base64')}`;
      const created = await t.admin().post('/admin/v1/cluster-drivers').send({ name: 'secret-driver', url: 'http://127.0.0.1:9', signingSecret: first, cloudProviders: ['platform_7'] });
      expect(created.status).toBe(200);
      const rotated = await t.admin().patch('/admin/v1/cluster-drivers/secret-driver').send({ signingSecret: second });
      expect(rotated.status).toBe(200);
      // The health check signs with it (the driver is not there: the failure is recorded).
      expect((await t.admin().post('/admin/v1/cluster-drivers/secret-driver/health-check')).status).toBe(200);
      return [
        { declaration: 'CreateClusterDriverRequest.signingSecret', value: first, reads: [] },
        { declaration: 'UpdateClusterDriverRequest.signingSecret', value: second, reads: [] },
      ];
    },
  },
  {
    covers: ['AlertingConfigurationRequest.alertingConfig', 'AlertingConfigurationResponse.alertingConfig'],
    run: async ({ t, f, unique }) => {
      const out: Written[] = [];
      for (const path of [`/api/v1/orgs/${f.orgSlug}/environments/${f.envSlug}/metrics/alerting`, `/api/v1/orgs/${f.orgSlug}/monitoring/production-sealed/alerting`]) {
        const { text, values } = alertmanagerConfigWithEverySecret(unique);
        const res = await t.as(f.users.member.token).post(path).send({ alertingConfig: text });
        expect(res.status).toBe(200);
        for (const value of values) out.push({ declaration: 'AlertingConfigurationResponse.alertingConfig', value, reads: [path] });
      }
      return out;
    },
  },
];

describe('every declared secret, every reader, every outlet', () => {
  let t: TestApp;
  let f: OrgFixture;
  let readers: Reader[];
  const logs: string[] = [];
  const written: Written[] = [];
  const shownOnce: ScenarioContext['shownOnce'] = [];
  const declarations = new Map<string, DeclaredSecret>();

  const unique = (label: string) => `${label}Zq${randomBytes(6).toString('hex')}`;

  beforeAll(async () => {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    t = await startTestApp({ LOG_LEVEL: 'trace' }, undefined, stream);
    f = await createOrgFixture(t);
    for (const d of declaredSecrets()) declarations.set(id(d), d);

    const readOnly = async (token: string) => (await t.as(token).post('/sts/v1/personal-access-tokens').send({ name: 'read only', type: { name: 'READ_ONLY' } })).body.token as string;
    const platformAdmin = await t.createUser('secrets-platform-admin', { platformAdmin: true });
    const member = (name: string, token: string, role: OrganisationRole | null, ro = false): Reader => ({ name, token, role, readOnly: ro });
    readers = [
      member('OWNER', f.users.owner.token, 'OWNER'),
      member('ADMIN', f.users.admin.token, 'ADMIN'),
      member('MEMBER', f.users.member.token, 'MEMBER'),
      member('VIEWER', f.users.viewer.token, 'VIEWER'),
      member('OWNER with a READ_ONLY token', await readOnly(f.users.owner.token), 'OWNER', true),
      member('ADMIN with a READ_ONLY token', await readOnly(f.users.admin.token), 'ADMIN', true),
      member('MEMBER with a READ_ONLY token', await readOnly(f.users.member.token), 'MEMBER', true),
      member('platform administrator outside the organisation', platformAdmin.token, null),
    ];

    const ctx: ScenarioContext = { t, f, unique, shownOnce };
    // The webhook subscription first (to `*`: every later change emits its events), then the cluster (later scenarios
    // use its monitoring tenant), then the rest.
    const rank = (s: (typeof SCENARIOS)[number]) => (s.covers.includes('WebhookResponse.url') ? 0 : s.covers.includes('ClusterOidcConfigResponse.clientSecret') ? 1 : 2);
    for (const s of [...SCENARIOS].sort((a, b) => rank(a) - rank(b))) written.push(...(await s.run(ctx)));
    // Deliver the webhook events (to a closed port: the attempts fail, their errors are recorded too).
    await t.get(WebhookDeliveryWorker).drain();
  }, 180_000);
  afterAll(() => t.close());

  it('has a scenario for every declared secret (a new declaration needs one here)', () => {
    const covered = new Set(SCENARIOS.flatMap((s) => s.covers));
    expect([...declarations.keys()].filter((d) => !covered.has(d)).sort()).toEqual([]);
    expect([...covered].filter((d) => !declarations.has(d)).sort()).toEqual([]);
    expect(new Set(written.map((w) => w.declaration)).size).toBeGreaterThan(10);
    // Every secret place of an Alertmanager configuration was written, for the tenant and for the environment.
    expect(written.filter((w) => w.declaration === 'AlertingConfigurationResponse.alertingConfig')).toHaveLength(2 * ALERTMANAGER_SECRET_PATHS.length);
  });

  it('declares every property of the API whose name looks like a secret', async () => {
    /** Names that look like secrets but are not: each with the reason. */
    const NOT_SECRETS: Record<string, string> = {
      primaryCloudCredentials: 'a reference to credentials (identity and name), not their content',
      cloudCredentials: 'a reference to credentials (identity and name), not their content',
      'NodeTaintDto.key': 'the key of a Kubernetes taint',
      'AlertManagerWebhookDto.groupKey': "Alertmanager's identifier of an alert group",
    };
    const doc = (await t.http().get('/v3/api-docs')).body;
    const undeclared: string[] = [];
    for (const [schema, s] of Object.entries(doc.components.schemas as Record<string, { properties?: Record<string, Record<string, unknown>> }>)) {
      for (const [prop, p] of Object.entries(s.properties ?? {})) {
        if (!/(password|passphrase|secret|token|credentials?|key)$/i.test(prop) || p['x-secret'] || NOT_SECRETS[prop] || NOT_SECRETS[`${schema}.${prop}`]) continue;
        undeclared.push(`${schema}.${prop}`);
      }
    }
    expect(undeclared).toEqual([]);
  });

  it('answers: each secret in clear exactly to the readers its declaration allows, the placeholder to the others', async () => {
    const leaks: string[] = [];
    const missing: string[] = [];
    const answers = new Map<string, { status: number; text: string }>();
    for (const reader of readers) {
      for (const path of new Set(written.flatMap((w) => w.reads))) {
        const res = await t.as(reader.token).get(path);
        answers.set(`${reader.name} ${path}`, { status: res.status, text: res.text });
      }
    }
    for (const w of written) {
      const d = declarations.get(w.declaration)!;
      for (const reader of readers) {
        const may = mayReadSecret(d.options, reader) && !d.options.shownOnce;
        for (const path of w.reads) {
          const { status, text } = answers.get(`${reader.name} ${path}`)!;
          const shows = text.includes(w.value);
          if (shows && !may) leaks.push(`${w.declaration} to ${reader.name} in GET ${path}`);
          if (!shows && may && status === 200) missing.push(`${w.declaration} for ${reader.name} in GET ${path}`);
        }
      }
    }
    expect(leaks).toEqual([]);
    expect(missing).toEqual([]);
    // Secrets that are never read back in clear show as the placeholder where their field is answered.
    expect(answers.get(`VIEWER /api/v1/orgs/${f.orgSlug}/clusters/${f.envSlug}/sealed/oidc-config`)!.text).toContain('"clientSecret":"<secret>"');
    expect(answers.get(`OWNER with a READ_ONLY token /api/v1/orgs/${f.orgSlug}/clusters/${f.envSlug}/sealed/kubeconfig`)!.status).toBe(403);
  });

  it('answers: a shown-once secret is in the answer to its creator only', () => {
    expect(shownOnce.map((s) => s.declaration).sort()).toEqual(['AlertWebhookTokenResponse.token', 'PersonalAccessTokenResponse.token', 'WebhookWithSecretResponse.secret']);
    for (const s of shownOnce) expect(s.answer).toContain(s.value);
  });

  it('audit trail and activity feed, as every reader reads them: no secret', async () => {
    const leaks: string[] = [];
    for (const reader of readers) {
      for (const path of [`/api/v1/orgs/${f.orgSlug}/audit-events?size=500`, `/api/v1/organisations/${f.orgSlug}/activity?size=500`]) {
        const res = await t.as(reader.token).get(path);
        if (res.status === 200) expect(res.body.content.length).toBeGreaterThan(5);
        for (const w of written) if (res.text.includes(w.value)) leaks.push(`${w.declaration} to ${reader.name} in GET ${path}`);
      }
    }
    expect(leaks).toEqual([]);
  });

  it('webhook event bodies, delivery records and log lines: no secret', async () => {
    const events = JSON.stringify(await t.db.query(`SELECT type, subject, data FROM webhook_events WHERE organisation_id = $1`, [f.orgId]));
    expect(events).toContain('ORGANISATION_INTEGRATION_UPDATED');
    expect(events).toContain('ALERTING_CONFIGURATION_UPDATED');
    const deliveries = JSON.stringify(await t.db.query(`SELECT last_error FROM webhook_deliveries`));
    const text = logs.join('');
    expect(text).toContain('request completed');
    const leaks = written.flatMap((w) => [
      ...(events.includes(w.value) ? [`${w.declaration} in a webhook event`] : []),
      ...(deliveries.includes(w.value) ? [`${w.declaration} in a delivery record`] : []),
      ...(text.includes(w.value) ? [`${w.declaration} in a log line`] : []),
    ]);
    expect(leaks).toEqual([]);
  });

  it('every column of every table: no secret in clear', async () => {
    const tables: { table_name: string }[] = await t.db.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`,
    );
    expect(tables.length).toBeGreaterThan(20);
    const leaks: string[] = [];
    for (const { table_name } of tables) {
      const rows: { j: string }[] = await t.db.query(`SELECT row_to_json(x)::text AS j FROM "${table_name}" x`);
      const text = rows.map((r) => r.j).join('\n');
      for (const w of written) if (text.includes(w.value)) leaks.push(`${w.declaration} in table ${table_name}`);
    }
    expect(leaks).toEqual([]);
  });
});
