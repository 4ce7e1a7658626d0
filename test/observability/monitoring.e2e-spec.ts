import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { auditCount, auditRows, seedCluster, seedEnvironment, seedOrg, SeededOrg } from './fixtures';
import { Executor } from '../../src/executor/executor';

const VALID = {
  alertingConfig: 'route:\n  receiver: team\nreceivers:\n  - name: team\n',
  ruleFiles: { 'node.yaml': 'groups:\n  - name: node\n    rules:\n      - alert: NodeDown\n        expr: up == 0\n' },
  templateFiles: { 'default.tmpl': '{{ define "x" }}y{{ end }}' },
};

describe('observability tenants and alerting configuration', () => {
  let t: TestApp;
  let org: SeededOrg;
  let other: SeededOrg;
  let envId: number;
  let web: { clusterId: number; clusterIdentity: string; tenantSlug: string };
  const base = () => `/api/v1/orgs/${org.slug}`;
  const as = (role: keyof SeededOrg['users']) => t.as(org.users[role].token);

  beforeAll(async () => {
    t = await startTestApp({ OBSERVABILITY_PUSH_BASE_URL: 'https://push.example.com/' });
    org = await seedOrg(t, 'obs-acme');
    other = await seedOrg(t, 'obs-other');
    envId = await seedEnvironment(t, org.id, 'production', 'Production');
    web = await seedCluster(t, org.id, envId, 'web');
    await seedCluster(t, org.id, envId, 'api');
    await seedCluster(t, org.id, envId, 'old', { deleted: true });
    const otherEnv = await seedEnvironment(t, other.id, 'production');
    await seedCluster(t, other.id, otherEnv, 'web'); // same tenant slug in another organisation
  });
  afterAll(() => t.close());

  it('lists non-deleted tenants as a page (form B) with the spec fields', async () => {
    const res = await as('VIEWER').get(`${base()}/monitoring?sort=slug,asc`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ totalElements: 2, number: 0, size: 50, first: true, last: true, numberOfElements: 2, empty: false });
    expect(res.body.sort).toEqual([{ ascending: true, direction: 'ASC', ignoreCase: false, nullHandling: 'NATIVE', property: 'slug' }]);
    expect(res.body.pageable.sort).toEqual(res.body.sort);
    expect(res.body.content.map((x: { slug: string }) => x.slug)).toEqual(['production-api', 'production-web']);
    const tenant = res.body.content[1];
    expect(Object.keys(tenant).sort()).toEqual(
      ['available', 'cluster', 'createdAt', 'customer', 'deletedAt', 'environment', 'id', 'identity', 'ipWhiteList', 'modifiedAt', 'name', 'slug'].sort(),
    );
    expect(tenant).toMatchObject({
      available: true,
      customer: org.slug,
      deletedAt: null,
      slug: 'production-web',
      id: expect.any(Number),
      identity: expect.stringMatching(/^[0-9a-f-]{36}$/),
      environment: { id: envId, name: 'Production', slug: 'production' },
      cluster: { environmentSlug: 'production', id: web.clusterId, identity: web.clusterIdentity, name: 'web', slug: 'web', version: '1.30.2', deletedAt: null },
    });
    expect(Object.keys(tenant.cluster).sort()).toEqual(['deletedAt', 'environmentSlug', 'id', 'identity', 'name', 'slug', 'version']);
    expect(Object.keys(tenant.environment).sort()).toEqual(['id', 'name', 'slug']);
  });

  it('pages and refuses unknown sort properties', async () => {
    const res = await as('VIEWER').get(`${base()}/monitoring?size=1&page=1&sort=slug,desc`);
    expect(res.body).toMatchObject({ size: 1, number: 1, totalPages: 2, last: true, first: false });
    expect(res.body.content[0].slug).toBe('production-api');
    const bad = await as('VIEWER').get(`${base()}/monitoring?sort=secret,asc`);
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].field).toBe('sort');
  });

  it('counts tenants', async () => {
    const res = await as('VIEWER').get(`${base()}/monitoring/count`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ count: 2 });
  });

  it('reads one tenant, and with push URLs on the observability path', async () => {
    const one = await as('VIEWER').get(`${base()}/monitoring/production-web`);
    expect(one.status).toBe(200);
    expect(one.body.slug).toBe('production-web');
    expect(one.body.monitoringPushUrl).toBeUndefined();
    const obs = await as('VIEWER').get(`${base()}/observability/production-web`);
    expect(obs.status).toBe(200);
    expect(obs.body).toMatchObject({
      ...one.body,
      monitoringPushUrl: `https://push.example.com/metrics/v1/${org.slug}/production-web/push`,
      loggingPushUrl: `https://push.example.com/logs/v1/${org.slug}/production-web/push`,
    });
  });

  it('404s for unknown and deleted tenants', async () => {
    for (const path of ['monitoring/nope', 'observability/nope', 'monitoring/production-old', 'monitoring/nope/alerting']) {
      const res = await as('VIEWER').get(`${base()}/${path}`);
      expect(res.status).toBe(404);
      expectErrorBody(res.body, 404);
    }
  });

  it('reads empty alerting configurations, then stores and reads a replaced one (environment)', async () => {
    const empty = await as('VIEWER').get(`${base()}/environments/production/metrics/alerting`);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ alertingConfig: '', ruleFiles: {}, templateFiles: {} });
    const post = await as('MEMBER').post(`${base()}/environments/production/metrics/alerting`).send(VALID);
    expect(post.status).toBe(200);
    expect(post.body).toEqual({ message: expect.any(String) });
    const read = await as('VIEWER').get(`${base()}/environments/production/metrics/alerting`);
    expect(read.body).toEqual(VALID);
    const [row] = await auditRows(t, 'ALERTING_CONFIGURATION_UPDATED');
    expect(row).toMatchObject({ actor_username: org.users.MEMBER.username, environment_slug: 'production', organisation_slug: org.slug });
    expect(Object.keys(row.details as object).sort()).toEqual(['alertingConfig', 'ruleFiles.node.yaml', 'templateFiles.default.tmpl']);
    expect(JSON.stringify(row.details)).not.toContain('NodeDown');
    const activity = await t.db.query(`SELECT message FROM activity_events WHERE type = 'ALERTING_CONFIGURATION_UPDATED'`);
    expect(activity[0].message).toContain(org.users.MEMBER.username);
  });

  it('copies the default rules into the environment, keeping other files', async () => {
    const res = await as('MEMBER').post(`${base()}/environments/production/metrics/alerting/default-rules`);
    expect(res.status).toBe(200);
    expect(res.body.message).toMatch(/default-rules\.yaml/);
    const read = await as('VIEWER').get(`${base()}/environments/production/metrics/alerting`);
    expect(Object.keys(read.body.ruleFiles).sort()).toEqual(['default-rules.yaml', 'node.yaml']);
    expect(read.body.ruleFiles['default-rules.yaml']).toMatch(/groups:/);
    expect(read.body.alertingConfig).toBe(VALID.alertingConfig);
    const rows = await auditRows(t, 'ALERTING_CONFIGURATION_UPDATED');
    expect(Object.keys(rows[rows.length - 1].details as object)).toEqual(['ruleFiles.default-rules.yaml']);
  });

  it('refuses invalid configuration with 400 naming file and location, storing nothing', async () => {
    const before = await auditCount(t);
    const cases: [object, string, RegExp][] = [
      [{ alertingConfig: 'route:\n  receiver: nobody\nreceivers:\n  - name: team\n' }, 'alertingConfig', /alertingConfig line 2, column 13: .*nobody/],
      [{ alertingConfig: 'receivers:\n  - name: a\n' }, 'alertingConfig', /route is required/],
      [{ alertingConfig: 'route: [\n' }, 'alertingConfig', /alertingConfig line \d+, column \d+: invalid YAML/],
      [{ ruleFiles: { 'bad.yaml': 'groups:\n  - name: g\n    rules:\n      - alert: A\n' } }, 'ruleFiles.bad.yaml', /ruleFiles\.bad\.yaml line 4, column 9: .*expr is required/],
      [{ ruleFiles: { 'bad.yaml': 'nope: 1\n' } }, 'ruleFiles.bad.yaml', /groups is required/],
      [{ templateFiles: { 'x.tmpl': '' } }, 'templateFiles.x.tmpl', /must not be empty/],
      [{ ruleFiles: { 'a/b.yaml': 'groups: []\n' } }, 'ruleFiles.a/b.yaml', /file name/],
      [{ ruleFiles: 'x' }, 'ruleFiles', /object/],
      [{ alertingConfig: 5 }, 'alertingConfig', /string/],
      [{ unknown: 1 }, 'unknown', /unknown field "unknown"/],
    ];
    for (const [body, field, message] of cases) {
      for (const path of ['environments/production/metrics/alerting', 'monitoring/production-web/alerting']) {
        const res = await as('MEMBER').post(`${base()}/${path}?fieldValidation=Strict`).send(body);
        expect(res.status).toBe(400);
        expectErrorBody(res.body, 400);
        expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
        expect(res.body.message).toMatch(message);
      }
    }
    expect(await auditCount(t)).toBe(before);
    const read = await as('VIEWER').get(`${base()}/environments/production/metrics/alerting`);
    expect(read.body.alertingConfig).toBe(VALID.alertingConfig);
    const tenant = await as('VIEWER').get(`${base()}/monitoring/production-web/alerting`);
    expect(tenant.body).toEqual({ alertingConfig: '', ruleFiles: {}, templateFiles: {} });
  });

  it('bounds: 50 files accepted, 51 refused; 128 KiB per file and 256 KiB per request accepted, one byte more refused', async () => {
    const rules = VALID.ruleFiles['node.yaml'];
    const files = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}.yaml`, rules]));
    expect((await as('MEMBER').post(`${base()}/monitoring/production-api/alerting`).send({ ruleFiles: files(50) })).status).toBe(200);
    const over = await as('MEMBER').post(`${base()}/monitoring/production-api/alerting`).send({ ruleFiles: files(51) });
    expect(over.status).toBe(400);
    expect(over.body.errors[0].field).toBe('ruleFiles');
    const fits = 'groups: []\n#' + 'x'.repeat(128 * 1024 - 12);
    expect((await as('MEMBER').post(`${base()}/monitoring/production-api/alerting`).send({ ruleFiles: { 'a.yaml': fits } })).status).toBe(200);
    const big = await as('MEMBER').post(`${base()}/monitoring/production-api/alerting`).send({ ruleFiles: { 'a.yaml': fits + 'x' } });
    expect(big.status).toBe(400);
    expect(big.body.errors[0]).toMatchObject({ field: 'ruleFiles.a.yaml', message: expect.stringMatching(/128 KiB/) });
    const two = { 'a.yaml': fits, 'b.yaml': fits };
    expect((await as('MEMBER').post(`${base()}/monitoring/production-api/alerting`).send({ ruleFiles: two })).status).toBe(200);
    const three = await as('MEMBER').post(`${base()}/monitoring/production-api/alerting`).send({ ruleFiles: { ...two, 'c.yaml': 'groups: []' } });
    expect(three.status).toBe(400);
    expect(three.body.message).toMatch(/at most 256 KiB per request/);
  });

  it('keeps receiver secrets encrypted at rest and shows them as <secret> below MEMBER and to READ_ONLY tokens', async () => {
    const config =
      'global:\n  smtp_auth_password: hunter2-smtp\nroute:\n  receiver: slack\nreceivers:\n  - name: slack\n    slack_configs:\n' +
      '      - api_url: https://hooks.chat.example/T0/B0/very-secret\n        channel: "#ops"\n  - name: pager\n    pagerduty_configs:\n      - routing_key: pd-secret-key\n';
    const path = `${base()}/environments/production/metrics/alerting`;
    expect((await as('MEMBER').post(path).send({ alertingConfig: config })).status).toBe(200);
    const [row] = await t.db.query(`SELECT alerting_config FROM environment_alerting_configs WHERE environment_id = $1`, [envId]);
    expect(row.alerting_config).not.toMatch(/hunter2|very-secret|pd-secret/);

    expect((await as('MEMBER').get(path)).body.alertingConfig).toBe(config);
    const viewer = (await as('VIEWER').get(path)).body.alertingConfig as string;
    expect(viewer).not.toMatch(/hunter2|very-secret|pd-secret/);
    expect(viewer.match(/<secret>/g)).toHaveLength(3);
    expect(viewer).toContain('#ops');
    const ro = await t.as(org.users.MEMBER.token).post('/sts/v1/personal-access-tokens').send({ name: 'ro', type: { name: 'READ_ONLY' } });
    expect((await t.as(ro.body.token).get(path)).body.alertingConfig).not.toMatch(/hunter2/);

    // Sending the redacted text back (with a change) keeps the stored secrets.
    expect((await as('MEMBER').post(path).send({ alertingConfig: viewer.replace('#ops', '#alerts') })).status).toBe(200);
    const after = (await as('MEMBER').get(path)).body.alertingConfig as string;
    expect(after).toContain('hunter2-smtp');
    expect(after).toContain('https://hooks.chat.example/T0/B0/very-secret');
    expect(after).toContain('#alerts');
    // A placeholder where nothing is stored is 400 naming the place.
    const orphan = await as('MEMBER').post(path).send({ alertingConfig: after.replace('  - name: pager', '  - name: mail\n    email_configs:\n      - auth_password: <secret>\n  - name: pager') });
    expect(orphan.status).toBe(400);
    expect(orphan.body.errors[0].field).toBe('alertingConfig.receivers.1.email_configs.0.auth_password');
  });

  it('hides auth_secret, sigv4.secret_key and http_headers secrets from VIEWERs, READ_ONLY tokens and platform administrators outside the organisation', async () => {
    const config =
      'route:\n  receiver: mail\nreceivers:\n  - name: mail\n    email_configs:\n      - to: ops@example.com\n        auth_secret: crammd5-secret-1\n' +
      '  - name: sns\n    sns_configs:\n      - topic_arn: arn:aws:sns:eu-west-1:1:t\n        sigv4:\n          access_key: AKIAPUBLIC\n          secret_key: sigv4-secret-2\n' +
      '  - name: hook\n    webhook_configs:\n      - url_file: /etc/hook-url\n        http_config:\n          http_headers:\n            X-Api-Key:\n              values: [visible-value]\n              secrets: [header-secret-3, header-secret-4]\n';
    const platformAdmin = await t.createUser('obs-platform-admin', { platformAdmin: true });
    const ro = await as('OWNER').post('/sts/v1/personal-access-tokens').send({ name: 'ro', type: { name: 'READ_ONLY' } });
    for (const path of [`${base()}/environments/production/metrics/alerting`, `${base()}/monitoring/production-web/alerting`]) {
      expect((await as('MEMBER').post(path).send({ alertingConfig: config })).status).toBe(200);
      expect((await as('MEMBER').get(path)).body.alertingConfig).toBe(config);
      for (const token of [org.users.VIEWER.token, ro.body.token, platformAdmin.token]) {
        const shown = (await t.as(token).get(path)).body.alertingConfig as string;
        expect(shown).not.toMatch(/crammd5-secret-1|sigv4-secret-2|header-secret-3|header-secret-4/);
        expect(shown.match(/<secret>/g)).toHaveLength(4);
        expect(shown).toContain('AKIAPUBLIC');
        expect(shown).toContain('visible-value');
      }
    }
  });

  it("supports the original client's rule-file round trip (GET the whole configuration, change ruleFiles, POST it back)", async () => {
    const path = `${base()}/monitoring/production-web/alerting`;
    expect((await as('MEMBER').post(path).send(VALID)).status).toBe(200);
    // AddObservabilityTenantPrometheusRules: add one file, keep the rest as read.
    const read = (await as('MEMBER').get(path)).body;
    const added = { ...read, ruleFiles: { ...read.ruleFiles, 'disk.yaml': 'groups:\n  - name: disk\n    rules:\n      - alert: DiskFull\n        expr: disk_free < 0.1\n' } };
    expect((await as('MEMBER').post(path).send(added)).status).toBe(200);
    const afterAdd = (await as('MEMBER').get(path)).body;
    expect(Object.keys(afterAdd.ruleFiles).sort()).toEqual(['disk.yaml', 'node.yaml']);
    expect(afterAdd.alertingConfig).toBe(VALID.alertingConfig);
    expect(afterAdd.templateFiles).toEqual(VALID.templateFiles);
    // DeleteObservabilityTenantPrometheusRules: drop one by name.
    const { ['node.yaml']: _dropped, ...rest } = afterAdd.ruleFiles as Record<string, string>;
    expect((await as('MEMBER').post(path).send({ ...afterAdd, ruleFiles: rest })).status).toBe(200);
    expect(Object.keys((await as('MEMBER').get(path)).body.ruleFiles)).toEqual(['disk.yaml']);
    // OverwriteObservabilityTenantPrometheusRules: replace them all.
    expect((await as('MEMBER').post(path).send({ ...afterAdd, ruleFiles: { 'only.yaml': 'groups: []\n' } })).status).toBe(200);
    expect((await as('MEMBER').get(path)).body.ruleFiles).toEqual({ 'only.yaml': 'groups: []\n' });
  });

  it('refuses YAML alias bombs and checks large configurations on the executor while /health answers', async () => {
    const bomb = ['groups: []', 'a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 0; i < 12; i++) bomb.push(`${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)}]`);
    const refused = await as('MEMBER').post(`${base()}/monitoring/production-api/alerting`).send({ ruleFiles: { 'bomb.yaml': bomb.join('\n') } });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/alias/i);

    // A large valid rule file takes a while to check; it is checked off the event loop.
    let groups = 'groups:\n';
    for (let i = 0; groups.length < 120 * 1024; i++) groups += `- name: g${i}\n  rules:\n  - alert: A${i}\n    expr: up == 0\n`;
    const executor = t.get(Executor);
    const checked = executor.outcomes.get('alerting.check ok') ?? 0;
    const checks = [1, 2].map(() => as('VIEWER').post(`${base()}/monitoring/production-api/alerting/validate`).send({ ruleFiles: { 'big.yaml': groups } }));
    await new Promise((r) => setTimeout(r, 20));
    for (let i = 0; i < 5; i++) await t.http().get('/health').expect(200);
    const results = await Promise.all(checks);
    expect(results.map((r) => r.status)).toEqual([200, 200]);
    expect(results[0].body.valid).toBe(true);
    // Both checks ran on the executor's worker threads (how fast /health stays meanwhile: npm run bench:isolation).
    expect((executor.outcomes.get('alerting.check ok') ?? 0) - checked).toBe(2);
    // What one organisation may have waiting is bounded by the executor (429; test/executor/executor.spec.ts).
  });

  it('replaces and reads the tenant configuration', async () => {
    const post = await as('MEMBER').post(`${base()}/monitoring/production-web/alerting`).send(VALID);
    expect(post.status).toBe(200);
    expect(post.body).toEqual({ message: expect.stringMatching(/production-web/) });
    expect((await as('VIEWER').get(`${base()}/monitoring/production-web/alerting`)).body).toEqual(VALID);
    const [row] = await t.db.query(
      `SELECT cluster_slug, details FROM audit_events WHERE type = 'ALERTING_CONFIGURATION_UPDATED' AND cluster_slug = 'web'`,
    );
    expect(row.cluster_slug).toBe('web');
    // Replacing removes files not sent.
    await as('MEMBER').post(`${base()}/monitoring/production-web/alerting`).send({ alertingConfig: VALID.alertingConfig }).expect(200);
    expect((await as('VIEWER').get(`${base()}/monitoring/production-web/alerting`)).body).toEqual({
      alertingConfig: VALID.alertingConfig,
      ruleFiles: {},
      templateFiles: {},
    });
  });

  it('validates without storing or auditing', async () => {
    const before = await auditCount(t);
    const ok = await as('VIEWER').post(`${base()}/monitoring/production-web/alerting/validate`).send(VALID);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ valid: true, errors: [] });
    const bad = await as('VIEWER')
      .post(`${base()}/monitoring/production-web/alerting/validate`)
      .send({ alertingConfig: 'route:\n  receiver: x\n', ruleFiles: { 'r.yaml': 'groups:\n  - name: a\n    rules:\n      - alert: A\n' } });
    expect(bad.status).toBe(200);
    expect(bad.body.valid).toBe(false);
    expect(bad.body.errors).toEqual([
      { file: 'alertingConfig', line: 1, column: 1, message: expect.stringMatching(/receivers is required/) },
      { file: 'ruleFiles.r.yaml', line: 4, column: 9, message: expect.stringMatching(/expr is required/) },
    ]);
    expect(await auditCount(t)).toBe(before);
    expect((await as('VIEWER').get(`${base()}/monitoring/production-web/alerting`)).body.ruleFiles).toEqual({});
    expect((await as('VIEWER').post(`${base()}/monitoring/nope/alerting/validate`).send(VALID)).status).toBe(404);
  });

  it('404s for an unknown environment', async () => {
    for (const [method, path] of [
      ['get', 'environments/nope/metrics/alerting'],
      ['post', 'environments/nope/metrics/alerting'],
      ['post', 'environments/nope/metrics/alerting/default-rules'],
    ] as const) {
      const res = await as('MEMBER')[method](`${base()}/${path}`).send(method === 'post' ? VALID : undefined);
      expect(res.status).toBe(404);
      expect(res.body.message).toMatch(/nope/);
    }
  });

  it('issues webhook tokens to MEMBER+, shown once and stored hashed', async () => {
    const res = await as('MEMBER').post(`${base()}/monitoring/production-web/alert-webhook-token`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ token: expect.stringMatching(/^cmsw_/), url: '/api/v1/observability/production-web/alerts/webhook' });
    const [row] = await t.db.query(`SELECT webhook_token_hash FROM observability_tenants WHERE slug = 'production-web' AND organisation_id = $1`, [org.id]);
    expect(row.webhook_token_hash).toMatch(/^[0-9a-f]{64}$/);
    const audits = await t.db.query(`SELECT details FROM audit_events WHERE type = 'ALERT_WEBHOOK_TOKEN_ROTATED'`);
    expect(audits).toHaveLength(1);
    expect(JSON.stringify(audits[0].details)).not.toContain(res.body.token);
    const tenant = await as('VIEWER').get(`${base()}/monitoring/production-web`);
    expect(JSON.stringify(tenant.body)).not.toContain(res.body.token);
  });

  describe('role matrix', () => {
    const reads = [
      'monitoring',
      'monitoring/count',
      'monitoring/production-web',
      'observability/production-web',
      'monitoring/production-web/alerting',
      'environments/production/metrics/alerting',
    ];
    const writes: [string, object | undefined][] = [
      ['monitoring/production-api/alerting', VALID],
      ['environments/production/metrics/alerting', VALID],
      ['environments/production/metrics/alerting/default-rules', undefined],
      ['monitoring/production-api/alert-webhook-token', undefined],
    ];

    it.each(['OWNER', 'ADMIN', 'MEMBER', 'VIEWER'] as const)('%s reads', async (role) => {
      for (const p of reads) expect((await as(role).get(`${base()}/${p}`)).status).toBe(200);
    });

    it('non-members get 403 and unauthenticated callers 401', async () => {
      for (const p of reads) {
        const res = await as('OUTSIDER').get(`${base()}/${p}`);
        expect(res.status).toBe(403);
        expectErrorBody(res.body, 403);
        expect((await t.http().get(`${base()}/${p}`)).status).toBe(401);
      }
      // a member of another organisation cannot read this one's tenants either
      expect((await t.as(other.users.OWNER.token).get(`${base()}/monitoring/production-web`)).status).toBe(403);
    });

    it('OWNER, ADMIN and MEMBER change alerting; VIEWER and non-members get 403', async () => {
      for (const [p, body] of writes) {
        for (const role of ['OWNER', 'ADMIN', 'MEMBER'] as const) expect((await as(role).post(`${base()}/${p}`).send(body)).status).toBe(200);
        for (const role of ['VIEWER', 'OUTSIDER'] as const) {
          const res = await as(role).post(`${base()}/${p}`).send(body);
          expect(res.status).toBe(403);
          expectErrorBody(res.body, 403);
        }
        expect((await t.http().post(`${base()}/${p}`).send(body)).status).toBe(401);
      }
    });
  });
});
