import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { seedCluster, seedEnvironment, seedOrg, SeededOrg } from './fixtures';

const alert = (fingerprint: string, status: 'firing' | 'resolved', extra: Record<string, unknown> = {}) => ({
  status,
  labels: { alertname: `A-${fingerprint}`, severity: 'critical' },
  annotations: { summary: `summary ${fingerprint}` },
  startsAt: '2026-11-22T10:00:00Z',
  endsAt: status === 'firing' ? '0001-01-01T00:00:00Z' : '2026-11-22T10:30:00Z',
  generatorURL: 'http://metrics/graph',
  fingerprint,
  ...extra,
});
const payload = (alerts: object[], status: 'firing' | 'resolved' = 'firing') => ({
  version: '4',
  groupKey: '{}:{alertname="A"}',
  truncatedAlerts: 0,
  status,
  receiver: 'service',
  groupLabels: { alertname: 'A' },
  commonLabels: { severity: 'critical' },
  commonAnnotations: {},
  externalURL: 'http://alertmanager:9093',
  alerts,
});

describe('alerts: webhook and listings', () => {
  let t: TestApp;
  let org: SeededOrg;
  let other: SeededOrg;
  let token: string;
  let otherToken: string;
  const hook = (slug = 'production-web') => `/api/v1/observability/${slug}/alerts/webhook`;
  const send = (body: object, tok = token, slug?: string) => t.http().post(hook(slug)).set('Authorization', `Bearer ${tok}`).send(body);

  beforeAll(async () => {
    t = await startTestApp();
    org = await seedOrg(t, 'alerts-acme');
    other = await seedOrg(t, 'alerts-other');
    const env = await seedEnvironment(t, org.id, 'production');
    await seedCluster(t, org.id, env, 'web');
    await seedCluster(t, org.id, env, 'api');
    const otherEnv = await seedEnvironment(t, other.id, 'production');
    await seedCluster(t, other.id, otherEnv, 'web'); // same slug production-web in another organisation
    token = (await t.as(org.users.MEMBER.token).post(`/api/v1/orgs/${org.slug}/monitoring/production-web/alert-webhook-token`)).body.token;
    otherToken = (await t.as(other.users.OWNER.token).post(`/api/v1/orgs/${other.slug}/monitoring/production-web/alert-webhook-token`)).body.token;
  });
  afterAll(() => t.close());

  it('refuses missing, unknown and other tenants\' tokens with 401', async () => {
    const cases = [
      t.http().post(hook()).send(payload([alert('f1', 'firing')])),
      t.http().post(hook()).set('Authorization', 'Bearer nope').send(payload([alert('f1', 'firing')])),
      t.http().post(hook('production-api')).set('Authorization', `Bearer ${token}`).send(payload([alert('f1', 'firing')])),
      t.http().post(hook('unknown')).set('X-Alert-Token', token).send(payload([alert('f1', 'firing')])),
      // a user's personal access token is not a webhook token
      t.http().post(hook()).set('Authorization', `Token ${org.users.OWNER.token}`).send(payload([alert('f1', 'firing')])),
      // invalid body but no valid token: still 401, not 400
      t.http().post(hook()).set('Authorization', 'Bearer nope').send({ junk: true }),
    ];
    for (const c of cases) {
      const res = await c;
      expect(res.status).toBe(401);
      expectErrorBody(res.body, 401);
    }
    expect((await t.db.query(`SELECT count(*)::int AS n FROM tenant_alerts`))[0].n).toBe(0);
  });

  it('stores alerts, idempotently, in the tenant of the matching token', async () => {
    const body = payload([alert('f1', 'firing'), alert('f2', 'firing')]);
    const first = await send(body);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ message: 'Received 2 alerts', firing: 2, resolved: 0 });
    const rows1 = await t.db.query(`SELECT * FROM tenant_alerts ORDER BY fingerprint`);
    const again = await send(body);
    expect(again.status).toBe(200);
    const rows2 = await t.db.query(`SELECT * FROM tenant_alerts ORDER BY fingerprint`);
    expect(rows2).toEqual(rows1);
    expect(rows2).toHaveLength(2);
    expect(rows2[0].ends_at).toBeNull();
    // X-Alert-Token works too, and the other organisation's same-slug tenant has its own alerts
    const viaHeader = await t.http().post(hook()).set('X-Alert-Token', otherToken).send(payload([alert('o1', 'firing')]));
    expect(viaHeader.status).toBe(200);
    const mine = await t.as(org.users.VIEWER.token).get(`/api/v1/orgs/${org.slug}/alerts/production-web`);
    expect(mine.body.map((a: { fingerprint: string }) => a.fingerprint).sort()).toEqual(['f1', 'f2']);
    const theirs = await t.as(other.users.VIEWER.token).get(`/api/v1/orgs/${other.slug}/alerts/production-web`);
    expect(theirs.body.map((a: { fingerprint: string }) => a.fingerprint)).toEqual(['o1']);
  });

  it('audits receipt with the system actor', async () => {
    const rows = await t.db.query(
      `SELECT actor_username, actor_id, organisation_slug, cluster_slug, details FROM audit_events WHERE type = 'ALERTS_RECEIVED' ORDER BY id`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(rows[0]).toMatchObject({ actor_username: 'system', actor_id: null, organisation_slug: org.slug, cluster_slug: 'web' });
    expect(rows[0].details).toMatchObject({ firing: { old: null, new: 2 }, resolved: { old: null, new: 0 } });
    for (const r of rows) expect(JSON.stringify(r)).not.toContain(token);
  });

  it('resolved alerts update the stored ones', async () => {
    const res = await send(payload([alert('f1', 'resolved')], 'resolved'));
    expect(res.body).toMatchObject({ firing: 0, resolved: 1 });
    const list = await t.as(org.users.VIEWER.token).get(`/api/v1/orgs/${org.slug}/alerts/production-web`);
    expect(list.status).toBe(200);
    const f1 = list.body.find((a: { fingerprint: string }) => a.fingerprint === 'f1');
    expect(f1).toEqual({
      fingerprint: 'f1',
      status: 'resolved',
      state: 'resolved',
      silencedBy: [],
      labels: { alertname: 'A-f1', severity: 'critical' },
      annotations: { summary: 'summary f1' },
      startsAt: '2026-11-22T10:00:00.000Z',
      activeAt: '2026-11-22T10:00:00.000Z',
      endsAt: '2026-11-22T10:30:00.000Z',
      value: null,
    });
    expect(list.body[0].fingerprint).toBe('f2'); // firing first
    // A late repeat of the old firing notification does not reopen it; a new firing (later startsAt) does.
    await send(payload([alert('f1', 'firing')]));
    expect((await t.db.query(`SELECT status FROM tenant_alerts WHERE fingerprint = 'f1'`))[0].status).toBe('resolved');
    await send(payload([alert('f1', 'firing', { startsAt: '2026-11-22T11:00:00Z' })]));
    const [row] = await t.db.query(`SELECT status, ends_at FROM tenant_alerts WHERE fingerprint = 'f1'`);
    expect(row).toEqual({ status: 'firing', ends_at: null });
    await send(payload([alert('f1', 'resolved', { startsAt: '2026-11-22T11:00:00Z' })], 'resolved'));
  });

  it('prunes resolved alerts 30 days after they ended', async () => {
    const [tenant] = await t.db.query(`SELECT id FROM observability_tenants WHERE organisation_id = $1 AND slug = 'production-web'`, [org.id]);
    await t.db.query(
      `INSERT INTO tenant_alerts (tenant_id, fingerprint, status, starts_at, ends_at) VALUES
         ($1, 'old', 'resolved', now() - interval '41 days', now() - interval '31 days'),
         ($1, 'recent', 'resolved', now() - interval '10 days', now() - interval '29 days')`,
      [tenant.id],
    );
    await send(payload([alert('f2', 'firing')])).expect(200);
    const rows = await t.db.query(`SELECT fingerprint FROM tenant_alerts WHERE fingerprint IN ('old', 'recent')`);
    expect(rows).toEqual([{ fingerprint: 'recent' }]);
    await t.db.query(`DELETE FROM tenant_alerts WHERE fingerprint = 'recent'`);
  });

  it('derives a fingerprint from the labels when none is sent', async () => {
    const a = alert('x', 'firing');
    delete (a as Partial<typeof a>).fingerprint;
    await send(payload([a])).expect(200);
    await send(payload([a])).expect(200);
    const rows = await t.db.query(`SELECT fingerprint FROM tenant_alerts WHERE labels->>'alertname' = 'A-x'`);
    expect(rows).toHaveLength(1);
    expect(rows[0].fingerprint).toMatch(/^[0-9a-f]{16}$/);
  });

  it('lists the alerts of the organisation as one flat list, each with its tenant; counts per tenant in the summary', async () => {
    const res = await t.as(org.users.VIEWER.token).get(`/api/v1/orgs/${org.slug}/alerts`);
    expect(res.status).toBe(200);
    expect(res.body.length).toBeGreaterThan(0);
    // The original client's ObservabilityAlert fields (labels, annotations, state, activeAt, value) plus the references.
    for (const a of res.body) {
      expect(Object.keys(a).sort()).toEqual([
        'activeAt', 'annotations', 'clusterSlug', 'endsAt', 'environmentSlug', 'fingerprint', 'labels', 'silencedBy', 'startsAt', 'state', 'status', 'tenantSlug', 'value',
      ]);
      expect(a).toMatchObject({ tenantSlug: 'production-web', clusterSlug: 'web', environmentSlug: 'production' });
      expect(a.activeAt).toBe(a.startsAt);
    }
    // Firing first, then the newest.
    const firing = res.body.filter((a: { status: string }) => a.status === 'firing');
    expect(firing).toHaveLength(2);
    expect(res.body.slice(0, 2)).toEqual(firing);
    expect(firing.map((a: { state: string }) => a.state)).toEqual(['firing', 'firing']);
    // The same alerts as the tenant's own list.
    const tenant = await t.as(org.users.VIEWER.token).get(`/api/v1/orgs/${org.slug}/alerts/production-web`);
    expect(res.body.map(({ tenantSlug, clusterSlug, environmentSlug, ...rest }: Record<string, unknown>) => rest)).toEqual(tenant.body);

    const summary = await t.as(org.users.VIEWER.token).get(`/api/v1/orgs/${org.slug}/alerts-summary`);
    expect(summary.status).toBe(200);
    expect(summary.body).toEqual([
      { tenantSlug: 'production-api', clusterSlug: 'api', environmentSlug: 'production', firing: 0, suppressed: 0, resolved: 0 },
      {
        tenantSlug: 'production-web',
        clusterSlug: 'web',
        environmentSlug: 'production',
        firing: 2,
        suppressed: 0,
        resolved: res.body.length - 2,
      },
    ]);
  });

  it.each([
    ['status', { ...payload([]), status: 'bogus' }],
    ['alerts', { ...payload([]), alerts: 'x' }],
    ['alerts.0.status', payload([{ ...alert('z', 'firing'), status: 'bogus' }])],
    ['alerts.0.labels.a', payload([{ ...alert('z', 'firing'), labels: { a: 1 } }])],
    ['alerts.0.startsAt', payload([{ ...alert('z', 'firing'), startsAt: 'yesterday' }])],
    ['alerts.0.unknown', payload([{ ...alert('z', 'firing'), unknown: 1 }])],
    ['version', { ...payload([]), version: undefined }],
    ['alerts', payload(Array.from({ length: 1001 }, (_, i) => alert(`n${i}`, 'firing')))],
  ])('refuses an invalid payload with 400 naming %s', async (field, body) => {
    const res = await send(body);
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 400);
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    expect((await t.db.query(`SELECT count(*)::int AS n FROM tenant_alerts WHERE fingerprint IN ('z', 'n0')`))[0].n).toBe(0);
  });

  it('accepts 1000 alerts in one call', async () => {
    const res = await send(payload(Array.from({ length: 1000 }, (_, i) => alert(`m${i}`, 'firing'))));
    expect(res.status).toBe(200);
    expect(res.body.firing).toBe(1000);
  });

  it('a rotated token replaces the old one', async () => {
    const fresh = (await t.as(org.users.ADMIN.token).post(`/api/v1/orgs/${org.slug}/monitoring/production-web/alert-webhook-token`)).body.token;
    expect((await send(payload([alert('f2', 'firing')]))).status).toBe(401);
    expect((await send(payload([alert('f2', 'firing')]), fresh)).status).toBe(200);
  });

  it('role matrix and 404s of the alert listings', async () => {
    for (const role of ['OWNER', 'ADMIN', 'MEMBER', 'VIEWER'] as const) {
      expect((await t.as(org.users[role].token).get(`/api/v1/orgs/${org.slug}/alerts`)).status).toBe(200);
      expect((await t.as(org.users[role].token).get(`/api/v1/orgs/${org.slug}/alerts/production-web`)).status).toBe(200);
    }
    expect((await t.as(org.users.OUTSIDER.token).get(`/api/v1/orgs/${org.slug}/alerts`)).status).toBe(403);
    expect((await t.as(org.users.OUTSIDER.token).get(`/api/v1/orgs/${org.slug}/alerts-summary`)).status).toBe(403);
    expect((await t.as(other.users.OWNER.token).get(`/api/v1/orgs/${org.slug}/alerts/production-web`)).status).toBe(403);
    expect((await t.http().get(`/api/v1/orgs/${org.slug}/alerts`)).status).toBe(401);
    const missing = await t.as(org.users.VIEWER.token).get(`/api/v1/orgs/${org.slug}/alerts/nope`);
    expect(missing.status).toBe(404);
    expectErrorBody(missing.body, 404);
    expect((await t.as(org.users.VIEWER.token).post(`/api/v1/orgs/${org.slug}/monitoring/production-web/alert-webhook-token`)).status).toBe(403);
    expect((await t.as(org.users.MEMBER.token).post(`/api/v1/orgs/${org.slug}/monitoring/nope/alert-webhook-token`)).status).toBe(404);
  });
});

describe('alerts: label names like Object.prototype members', () => {
  let t: TestApp;
  let org: SeededOrg;
  beforeAll(async () => {
    t = await startTestApp();
    org = await seedOrg(t, 'alerts-proto');
    const env = await seedEnvironment(t, org.id, 'production');
    await seedCluster(t, org.id, env, 'web');
  });
  afterAll(() => t.close());

  it('keeps `constructor`, `toString` and `valueOf` labels as data (no 500, nothing dropped)', async () => {
    const token = (await t.as(org.users.MEMBER.token).post(`/api/v1/orgs/${org.slug}/monitoring/production-web/alert-webhook-token`)).body.token;
    const labels = { alertname: 'Proto', constructor: 'c', toString: 't', valueOf: 'v' };
    const res = await t
      .http()
      .post('/api/v1/observability/production-web/alerts/webhook')
      .set('Authorization', `Bearer ${token}`)
      .send(payload([alert('proto1', 'firing', { labels })]));
    expect(res.status).toBe(200);
    const list = await t.as(org.users.VIEWER.token).get(`/api/v1/orgs/${org.slug}/alerts/production-web`);
    expect(list.status).toBe(200);
    expect(list.body[0].labels).toEqual(labels);
  });
});
