import * as http from 'http';
import type { AddressInfo } from 'net';
import { SecretBox } from '../../src/common/secret-box';
import { DashboardHealthChecker } from '../../src/observability/dashboard-health-checker';
import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { auditCount, seedCluster, seedEnvironment, seedOrg, SeededOrg } from './fixtures';

const TOKEN = 'dash-secret-token-7f3a9c';

/** A local "dashboard": /ok answers 200 to the right token, /unauth 401, /hang never answers. */
async function startDashboard() {
  const seen: { url: string; authorization?: string }[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', authorization: req.headers.authorization });
    if (req.url === '/ok/api/health') {
      res.statusCode = req.headers.authorization === `Bearer ${TOKEN}` ? 200 : 401;
      return res.end('{"database":"ok"}');
    }
    if (req.url === '/unauth/api/health') {
      res.statusCode = 401;
      return res.end();
    }
    if (req.url === '/broken/api/health') {
      res.statusCode = 500;
      return res.end();
    }
    // /hang: never answers
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    seen,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('dashboard and organisation integrations', () => {
  let t: TestApp;
  let org: SeededOrg;
  let dash: Awaited<ReturnType<typeof startDashboard>>;
  const base = () => `/api/v1/orgs/${org.slug}/integrations`;
  const as = (role: keyof SeededOrg['users']) => t.as(org.users[role].token);
  const create = (body: object, role: keyof SeededOrg['users'] = 'ADMIN') => as(role).post(`${base()}/dashboard?fieldValidation=Strict`).send(body);

  beforeAll(async () => {
    dash = await startDashboard();
    t = await startTestApp({ OUTBOUND_TIMEOUT_MS: '300' });
    org = await seedOrg(t, 'integ-acme');
  });
  afterAll(async () => {
    await t.close();
    await dash.close();
  });

  describe('dashboard integrations', () => {
    it('creates an integration (PENDING) without ever returning the token', async () => {
      const res = await create({ apiToken: TOKEN, datasourcePrefix: 'acme-', name: 'Team Dashboards', url: `${dash.base}/ok/` });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(
        ['createdAt', 'customer', 'datasourcePrefix', 'deletedAt', 'identity', 'manageDatasources', 'modifiedAt', 'name', 'provisionUsers', 'slug', 'status', 'statusMessage', 'url'].sort(),
      );
      expect(res.body).toMatchObject({
        customer: org.slug,
        datasourcePrefix: 'acme-',
        deletedAt: null,
        manageDatasources: false,
        provisionUsers: false,
        name: 'Team Dashboards',
        slug: 'team-dashboards',
        status: 'PENDING',
        url: `${dash.base}/ok`,
      });
      expect(JSON.stringify(res.body)).not.toContain(TOKEN);
      const [row] = await t.db.query(`SELECT identity, api_token_ciphertext FROM dashboard_integrations WHERE slug = 'team-dashboards'`);
      expect(row.api_token_ciphertext).not.toContain(TOKEN);
      expect(t.get(SecretBox).open(row.api_token_ciphertext, row.identity)).toBe(TOKEN);
      const [audit] = await t.db.query(`SELECT details FROM audit_events WHERE type = 'DASHBOARD_INTEGRATION_CREATED'`);
      expect(audit.details.apiToken).toEqual({ old: null, new: '[redacted]' });
    });

    it('lists integrations as a page (form B)', async () => {
      await create({ apiToken: TOKEN, name: 'Unauth', url: `${dash.base}/unauth` }).expect(200);
      await create({ apiToken: TOKEN, name: 'Hang', url: `${dash.base}/hang` }).expect(200);
      await create({ apiToken: TOKEN, name: 'Broken', url: `${dash.base}/broken` }).expect(200);
      await create({ apiToken: 'wrong-token', name: 'Wrong token', url: `${dash.base}/ok` }).expect(200);
      const res = await as('VIEWER').get(`${base()}/dashboard?sort=name,asc`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ totalElements: 5, totalPages: 1, number: 0, size: 50 });
      expect(res.body.sort[0]).toMatchObject({ property: 'name', direction: 'ASC' });
      expect(res.body.content.map((x: { slug: string }) => x.slug)).toEqual(['broken', 'hang', 'team-dashboards', 'unauth', 'wrong-token']);
      expect(JSON.stringify(res.body)).not.toContain(TOKEN);
    });

    it('the health check sets CONNECTED, or ERROR with the reason (unauthorised, status, timeout)', async () => {
      const checked = await t.get(DashboardHealthChecker).runOnce();
      expect(checked).toBe(5);
      const rows: { slug: string; status: string; status_message: string }[] = await t.db.query(
        `SELECT slug, status, status_message FROM dashboard_integrations ORDER BY slug`,
      );
      const by = Object.fromEntries(rows.map((r) => [r.slug, r]));
      expect(by['team-dashboards'].status).toBe('CONNECTED');
      expect(by['unauth']).toMatchObject({ status: 'ERROR', status_message: expect.stringMatching(/unauthorised/) });
      expect(by['wrong-token']).toMatchObject({ status: 'ERROR', status_message: expect.stringMatching(/unauthorised/) });
      expect(by['broken']).toMatchObject({ status: 'ERROR', status_message: expect.stringMatching(/HTTP 500/) });
      expect(by['hang']).toMatchObject({ status: 'ERROR', status_message: expect.stringMatching(/did not answer in time/) });
      expect(dash.seen.find((s) => s.url === '/ok/api/health')?.authorization).toBe(`Bearer ${TOKEN}`);
      const list = await as('VIEWER').get(`${base()}/dashboard?sort=slug,asc`);
      expect(list.body.content.find((x: { slug: string }) => x.slug === 'hang')).toMatchObject({ status: 'ERROR', statusMessage: expect.any(String) });
      // Status changes are audited as the system; no token anywhere.
      const audits = await t.db.query(`SELECT actor_username, details FROM audit_events WHERE type = 'DASHBOARD_INTEGRATION_STATUS_CHANGED'`);
      expect(audits).toHaveLength(5);
      expect(audits.every((a: { actor_username: string }) => a.actor_username === 'system')).toBe(true);
      // Nothing is due again until the interval has passed.
      expect(await t.get(DashboardHealthChecker).runOnce()).toBe(0);
      t.clock.advance(61_000);
      expect(await t.get(DashboardHealthChecker).runOnce()).toBe(5);
      t.clock.set(null);
    });

    it('the token appears in no audit or activity row', async () => {
      const audit = await t.db.query(`SELECT * FROM audit_events`);
      const activity = await t.db.query(`SELECT * FROM activity_events`);
      expect(JSON.stringify(audit)).not.toContain(TOKEN);
      expect(JSON.stringify(activity)).not.toContain(TOKEN);
    });

    it('refuses a taken slug with 409', async () => {
      const res = await create({ apiToken: TOKEN, name: 'team dashboards!', url: `${dash.base}/ok` });
      expect(res.status).toBe(409);
      expectErrorBody(res.body, 409);
      expect(res.body.message).toMatch(/team-dashboards/);
    });

    it.each([
      // A missing name is no error: it defaults to the URL's host (test/common/interface-request-defaults.e2e-spec.ts).
      ['name', { apiToken: TOKEN, name: '', url: 'https://x.example' }],
      ['name', { apiToken: TOKEN, name: 'x'.repeat(256), url: 'https://x.example' }],
      ['name', { apiToken: TOKEN, name: '!!!', url: `http://127.0.0.1:1` }],
      ['apiToken', { name: 'n', url: 'https://x.example' }],
      ['apiToken', { apiToken: '', name: 'n', url: 'https://x.example' }],
      ['apiToken', { apiToken: 'x'.repeat(4097), name: 'n', url: 'https://x.example' }],
      ['url', { apiToken: TOKEN, name: 'n' }],
      ['url', { apiToken: TOKEN, name: 'n', url: 'file:///etc/passwd' }],
      ['url', { apiToken: TOKEN, name: 'n', url: 'http://user:pw@127.0.0.1/' }],
      ['url', { apiToken: TOKEN, name: 'n', url: 'not a url' }],
      ['datasourcePrefix', { apiToken: TOKEN, name: 'n', url: 'http://127.0.0.1:1', datasourcePrefix: 'x'.repeat(64) }],
      ['unknown', { apiToken: TOKEN, name: 'n', url: 'http://127.0.0.1:1', unknown: 1 }],
    ])('refuses with 400 naming %s', async (field, body) => {
      const before = await auditCount(t);
      const res = await create(body);
      expect(res.status).toBe(400);
      expectErrorBody(res.body, 400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      expect(JSON.stringify(res.body)).not.toContain(TOKEN);
      expect(await auditCount(t)).toBe(before);
    });

    it('accepts names of 255 characters', async () => {
      const res = await create({ apiToken: TOKEN, name: 'n'.repeat(255), url: `${dash.base}/ok`, datasourcePrefix: 'p'.repeat(63) });
      expect(res.status).toBe(200);
      expect(res.body.slug).toBe('n'.repeat(63));
    });

    it('deletes with 204 (soft), then 404', async () => {
      const del = await as('ADMIN').delete(`${base()}/dashboard/broken`);
      expect(del.status).toBe(204);
      expect(del.text).toBe('');
      const [row] = await t.db.query(`SELECT deleted_at FROM dashboard_integrations WHERE slug = 'broken'`);
      expect(row.deleted_at).not.toBeNull();
      expect((await as('ADMIN').delete(`${base()}/dashboard/broken`)).status).toBe(404);
      const list = await as('VIEWER').get(`${base()}/dashboard`);
      expect(list.body.content.map((x: { slug: string }) => x.slug)).not.toContain('broken');
      const [audit] = await t.db.query(`SELECT details FROM audit_events WHERE type = 'DASHBOARD_INTEGRATION_DELETED'`);
      expect(audit.details.apiToken).toEqual({ old: '[redacted]', new: null });
      // the slug is free again
      await create({ apiToken: TOKEN, name: 'Broken', url: `${dash.base}/broken` }).expect(200);
    });

    it('role matrix: VIEWER+ list, ADMIN+ create and delete', async () => {
      for (const role of ['OWNER', 'ADMIN', 'MEMBER', 'VIEWER'] as const) expect((await as(role).get(`${base()}/dashboard`)).status).toBe(200);
      expect((await as('OUTSIDER').get(`${base()}/dashboard`)).status).toBe(403);
      expect((await t.http().get(`${base()}/dashboard`)).status).toBe(401);
      for (const role of ['OWNER', 'ADMIN'] as const)
        expect((await create({ apiToken: TOKEN, name: `by ${role}`, url: `${dash.base}/ok` }, role)).status).toBe(200);
      for (const role of ['MEMBER', 'VIEWER', 'OUTSIDER'] as const) {
        const res = await create({ apiToken: TOKEN, name: `by ${role}`, url: `${dash.base}/ok` }, role);
        expect(res.status).toBe(403);
        expectErrorBody(res.body, 403);
        expect((await as(role).delete(`${base()}/dashboard/by-owner`)).status).toBe(403);
      }
      expect((await as('OWNER').delete(`${base()}/dashboard/by-owner`)).status).toBe(204);
    });
  });

  it('an unreachable dashboard is ERROR with the reason', async () => {
    await create({ apiToken: TOKEN, name: 'Closed', url: 'http://127.0.0.1:1' }).expect(200);
    t.clock.advance(120_000);
    await t.get(DashboardHealthChecker).runOnce();
    t.clock.set(null);
    const [row] = await t.db.query(`SELECT status, status_message FROM dashboard_integrations WHERE slug = 'closed'`);
    expect(row).toEqual({ status: 'ERROR', status_message: expect.stringMatching(/unreachable.*ECONNREFUSED/) });
  });

  it('documents the operations in the OpenAPI document, without the token in responses', async () => {
    const doc = (await t.http().get('/v3/api-docs')).body;
    for (const path of [
      '/api/v1/orgs/{organisationSlug}/monitoring',
      '/api/v1/orgs/{organisationSlug}/monitoring/count',
      '/api/v1/orgs/{organisationSlug}/monitoring/{tenantSlug}',
      '/api/v1/orgs/{organisationSlug}/observability/{tenantSlug}',
      '/api/v1/orgs/{organisationSlug}/monitoring/{tenantSlug}/alerting',
      '/api/v1/orgs/{organisationSlug}/monitoring/{tenantSlug}/alerting/validate',
      '/api/v1/orgs/{organisationSlug}/environments/{environmentSlug}/metrics/alerting',
      '/api/v1/orgs/{organisationSlug}/environments/{environmentSlug}/metrics/alerting/default-rules',
      '/api/v1/orgs/{organisationSlug}/alerts',
      '/api/v1/orgs/{organisationSlug}/alerts/{tenantSlug}',
      '/api/v1/orgs/{organisationSlug}/integrations',
      '/api/v1/orgs/{organisationSlug}/integrations/dashboard',
      '/api/v1/orgs/{organisationSlug}/integrations/dashboard/{integrationSlug}',
      '/api/v1/orgs/{organisationSlug}/integrations/{organisationIntegrationIdentity}',
      '/api/v1/observability/{tenantSlug}/alerts/webhook',
    ])
      expect(Object.keys(doc.paths)).toContain(path);
    expect(Object.keys(doc.paths['/api/v1/orgs/{organisationSlug}/integrations/dashboard/{integrationSlug}'].delete.responses)).toContain('204');
    expect(doc.components.schemas.DashboardIntegrationResponse.properties.apiToken).toBeUndefined();
    expect(doc.components.schemas.DashboardIntegrationResponse.properties.status.enum).toEqual(['PENDING', 'CONNECTED', 'ERROR']);
  });

  describe('organisation integrations', () => {
    let identity: string;
    let clusters: Record<string, string>;

    beforeAll(async () => {
      const prod = await seedEnvironment(t, org.id, 'production');
      const agent = (enabled: boolean) => ({ 'observability-agent': { enabled, customValues: {} } });
      clusters = {
        on: (await seedCluster(t, org.id, prod, 'on', { addons: agent(true) })).clusterIdentity,
        off: (await seedCluster(t, org.id, prod, 'off', { addons: agent(false) })).clusterIdentity,
        none: (await seedCluster(t, org.id, prod, 'none')).clusterIdentity,
        gone: (await seedCluster(t, org.id, prod, 'gone', { addons: agent(true), deleted: true })).clusterIdentity,
      };
    });

    it('lists the one alerting integration (created lazily, disabled) with the clusters using it', async () => {
      const res = await as('VIEWER').get(base());
      expect(res.status).toBe(200);
      expect(res.body).toHaveLength(1);
      const [i] = res.body;
      expect(Object.keys(i).sort()).toEqual(['clustersUsingIntegration', 'config', 'createdAt', 'displayName', 'enabled', 'identity', 'modifiedAt', 'type']);
      expect(i).toMatchObject({ type: 'alerting', enabled: false, config: {}, displayName: 'Alerting' });
      expect(i.clustersUsingIntegration).toEqual([
        { clusterIdentity: clusters.on, enabled: true, environmentSlug: 'production', clusterSlug: 'on', clusterName: 'on' },
      ]);
      identity = i.identity;
      expect((await as('VIEWER').get(base())).body).toHaveLength(1);
    });

    it('PATCH updates displayName, enabled and config, audited with config values redacted', async () => {
      const res = await as('ADMIN')
        .patch(`${base()}/${identity}`)
        .send({ organisationIntegrationIdentity: identity, displayName: 'Team alerting', enabled: true, config: { channel: '#ops', apiKey: 'k-secret' } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ identity, type: 'alerting', displayName: 'Team alerting', enabled: true, config: { channel: '#ops', apiKey: 'k-secret' } });
      expect(res.body.clustersUsingIntegration).toHaveLength(1);
      const [audit] = await t.db.query(`SELECT details FROM audit_events WHERE type = 'ORGANISATION_INTEGRATION_UPDATED'`);
      expect(audit.details).toEqual({
        displayName: { old: 'Alerting', new: 'Team alerting' },
        enabled: { old: false, new: true },
        config: { old: {}, new: { apiKey: '[redacted]', channel: '#ops' } },
      });
      // partial update keeps the other fields
      const partial = await as('OWNER').patch(`${base()}/${identity}`).send({ organisationIntegrationIdentity: identity, enabled: false });
      expect(partial.body).toMatchObject({ displayName: 'Team alerting', enabled: false, config: { channel: '#ops' } });
    });

    it('seals the secret config values at rest and shows them to ADMIN and above only (not to READ_ONLY tokens)', async () => {
      const [row] = await t.db.query(`SELECT config, secret_config_ciphertext FROM organisation_integrations WHERE identity = $1`, [identity]);
      expect(row.config).toEqual({ channel: '#ops' });
      expect(row.secret_config_ciphertext).toMatch(/^v1\./);
      expect(JSON.stringify(row)).not.toContain('k-secret');
      for (const role of ['OWNER', 'ADMIN'] as const) expect((await as(role).get(base())).body[0].config).toEqual({ channel: '#ops', apiKey: 'k-secret' });
      for (const role of ['MEMBER', 'VIEWER'] as const) expect((await as(role).get(base())).body[0].config).toEqual({ channel: '#ops', apiKey: '<secret>' });
      const ro = await as('OWNER').post('/sts/v1/personal-access-tokens').send({ name: 'ro', type: { name: 'READ_ONLY' } });
      expect((await t.as(ro.body.token).get(base())).body[0].config).toEqual({ channel: '#ops', apiKey: '<secret>' });
    });

    it('keeps a stored secret value sent back as <secret>; a placeholder for a key with no stored value is 400', async () => {
      const kept = await as('ADMIN')
        .patch(`${base()}/${identity}`)
        .send({ organisationIntegrationIdentity: identity, config: { channel: '#alerts', apiKey: '<secret>' } });
      expect(kept.status).toBe(200);
      expect(kept.body.config).toEqual({ channel: '#alerts', apiKey: 'k-secret' });
      const before = await auditCount(t);
      const orphan = await as('ADMIN')
        .patch(`${base()}/${identity}`)
        .send({ organisationIntegrationIdentity: identity, config: { channel: '#alerts', apiKey: '<secret>', token: '<secret>' } });
      expect(orphan.status).toBe(400);
      expectErrorBody(orphan.body, 400);
      expect(orphan.body.errors).toEqual([{ field: 'config.token', message: expect.stringMatching(/<secret> but no value is stored/) }]);
      expect(await auditCount(t)).toBe(before);
      const reset = await as('ADMIN')
        .patch(`${base()}/${identity}`)
        .send({ organisationIntegrationIdentity: identity, config: { channel: '#ops', apiKey: 'k-secret' } });
      expect(reset.status).toBe(200);
    });

    it.each([
      ['organisationIntegrationIdentity', () => ({ displayName: 'x' })],
      ['organisationIntegrationIdentity', () => ({ organisationIntegrationIdentity: '2b1e8f44-1c1a-4c6e-9c39-0d7f1f6f0a11' })],
      ['organisationIntegrationIdentity', () => ({ organisationIntegrationIdentity: 'nope' })],
      ['displayName', (id: string) => ({ organisationIntegrationIdentity: id, displayName: '' })],
      ['displayName', (id: string) => ({ organisationIntegrationIdentity: id, displayName: 'x'.repeat(256) })],
      ['enabled', (id: string) => ({ organisationIntegrationIdentity: id, enabled: 'yes' })],
      ['config', (id: string) => ({ organisationIntegrationIdentity: id, config: 'x' })],
      ['config.n', (id: string) => ({ organisationIntegrationIdentity: id, config: { n: 1 } })],
      ['type', (id: string) => ({ organisationIntegrationIdentity: id, type: 'other' })],
    ])('PATCH refuses with 400 naming %s', async (field, body) => {
      const before = await auditCount(t);
      const res = await as('ADMIN').patch(`${base()}/${identity}?fieldValidation=Strict`).send(body(identity));
      expect(res.status).toBe(400);
      expectErrorBody(res.body, 400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      expect(await auditCount(t)).toBe(before);
    });

    it('PATCH accepts a 255-character displayName; unknown identity is 404, a malformed one 400', async () => {
      const ok = await as('ADMIN').patch(`${base()}/${identity}`).send({ organisationIntegrationIdentity: identity, displayName: 'd'.repeat(255) });
      expect(ok.status).toBe(200);
      const unknown = '2b1e8f44-1c1a-4c6e-9c39-0d7f1f6f0a11';
      const missing = await as('ADMIN').patch(`${base()}/${unknown}`).send({ organisationIntegrationIdentity: unknown });
      expect(missing.status).toBe(404);
      expectErrorBody(missing.body, 404);
      expect((await as('ADMIN').patch(`${base()}/not-a-uuid`).send({ organisationIntegrationIdentity: unknown })).status).toBe(400);
    });

    it('role matrix: VIEWER+ read, ADMIN+ update', async () => {
      for (const role of ['OWNER', 'ADMIN', 'MEMBER', 'VIEWER'] as const) expect((await as(role).get(base())).status).toBe(200);
      expect((await as('OUTSIDER').get(base())).status).toBe(403);
      expect((await t.http().get(base())).status).toBe(401);
      for (const role of ['MEMBER', 'VIEWER', 'OUTSIDER'] as const) {
        const res = await as(role).patch(`${base()}/${identity}`).send({ organisationIntegrationIdentity: identity, enabled: true });
        expect(res.status).toBe(403);
        expectErrorBody(res.body, 403);
      }
      expect((await t.http().patch(`${base()}/${identity}`).send({ organisationIntegrationIdentity: identity })).status).toBe(401);
    });
  });
});

describe('outbound policy with private networks not allowed (SSRF)', () => {
  let t: TestApp;
  let org: SeededOrg;
  let dash: Awaited<ReturnType<typeof startDashboard>>;

  beforeAll(async () => {
    dash = await startDashboard();
    t = await startTestApp({ OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false', OUTBOUND_TIMEOUT_MS: '300' });
    org = await seedOrg(t, 'ssrf-acme');
  });
  afterAll(async () => {
    await t.close();
    await dash.close();
  });

  it.each([
    'http://169.254.169.254/latest/meta-data/',
    'http://127.0.0.1:8080/',
    'http://10.0.0.1/',
    'http://10.255.255.254:3000/',
    'http://172.16.0.1/',
    'http://192.168.1.1/',
    'http://100.64.0.1/',
    'http://0.0.0.0/',
    'http://[::1]/',
    'http://[fd00::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://localhost:3000/',
    'http://2130706433/',
    'file:///etc/passwd',
    'gopher://example.com/',
    'http://user:secret@example.com/',
  ])('refuses %s with 400 naming url', async (url) => {
    const res = await t.as(org.users.ADMIN.token).post(`/api/v1/orgs/${org.slug}/integrations/dashboard`).send({ apiToken: TOKEN, name: 'evil', url });
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 400);
    expect(res.body.errors[0].field).toBe('url');
    expect((await t.db.query(`SELECT count(*)::int AS n FROM dashboard_integrations`))[0].n).toBe(0);
  });

  it('refuses again at call time (a row whose address became internal), without contacting it', async () => {
    const identity = '6c3b2d1e-0f4a-4b5c-8d7e-9f0a1b2c3d4e';
    const sealed = t.get(SecretBox).seal(TOKEN, identity);
    await t.db.query(
      `INSERT INTO dashboard_integrations (identity, organisation_id, slug, name, url, api_token_ciphertext, created_at, modified_at)
       VALUES ($1, $2, 'rebound', 'rebound', $3, $4, now(), now())`,
      [identity, org.id, `${dash.base}/ok`, sealed],
    );
    expect(await t.get(DashboardHealthChecker).runOnce()).toBe(1);
    const [row] = await t.db.query(`SELECT status, status_message FROM dashboard_integrations WHERE slug = 'rebound'`);
    expect(row.status).toBe('ERROR');
    expect(row.status_message).toMatch(/outbound policy.*internal address/);
    expect(dash.seen).toHaveLength(0);
  });
});
