import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { seedCluster, seedEnvironment, seedOrg, SeededOrg } from './fixtures';

const T0 = new Date('2026-11-23T10:00:00Z');
const iso = (minutes: number) => new Date(T0.getTime() + minutes * 60_000).toISOString();

describe('alert silences per tenant', () => {
  let t: TestApp;
  let org: SeededOrg;
  const base = () => `/api/v1/orgs/${org.slug}/observability/production-web/silences`;
  const as = (role: keyof SeededOrg['users']) => t.as(org.users[role].token);

  beforeAll(async () => {
    t = await startTestApp();
    org = await seedOrg(t, 'silenced');
    const env = await seedEnvironment(t, org.id, 'production');
    await seedCluster(t, org.id, env, 'web');
    t.clock.set(T0);
    const token = (await as('MEMBER').post(`/api/v1/orgs/${org.slug}/monitoring/production-web/alert-webhook-token`)).body.token;
    const alert = (fingerprint: string, alertname: string, severity: string) => ({
      status: 'firing',
      labels: { alertname, severity },
      annotations: { summary: alertname, value: '42' },
      startsAt: iso(-30),
      endsAt: '0001-01-01T00:00:00Z',
      fingerprint,
    });
    const res = await t
      .http()
      .post('/api/v1/observability/production-web/alerts/webhook')
      .set('Authorization', `Bearer ${token}`)
      .send({ version: '4', status: 'firing', receiver: 'r', alerts: [alert('a1', 'NodeDown', 'critical'), alert('a2', 'DiskFull', 'warning')] });
    expect(res.status).toBe(200);
  });
  afterAll(async () => {
    t.clock.set(null);
    await t.close();
  });

  it('goes pending -> active -> expired with the clock, suppresses matching alerts while active, and is audited', async () => {
    const created = await as('MEMBER')
      .post(base())
      .send({ matchers: [{ name: 'alertname', value: 'Node.*', isRegex: true }], startsAt: iso(10), endsAt: iso(70), comment: 'maintenance' });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      id: expect.any(String),
      matchers: [{ name: 'alertname', value: 'Node.*', isRegex: true, isEqual: true }],
      startsAt: iso(10),
      endsAt: iso(70),
      createdBy: org.users.MEMBER.username,
      comment: 'maintenance',
      status: { state: 'pending' },
    });
    const [audit] = await t.db.query(`SELECT actor_username FROM audit_events WHERE type = 'ALERT_SILENCE_CREATED' AND referenced_entity_identity = $1`, [created.body.id]);
    expect(audit.actor_username).toBe(org.users.MEMBER.username);

    const alertsNow = async () => {
      const list = (await as('VIEWER').get(`/api/v1/orgs/${org.slug}/alerts/production-web`)).body as { fingerprint: string; state: string }[];
      const summary = (await as('VIEWER').get(`/api/v1/orgs/${org.slug}/alerts-summary`)).body as { tenantSlug: string; firing: number }[];
      return { states: Object.fromEntries(list.map((a) => [a.fingerprint, a.state])), firing: summary.find((x) => x.tenantSlug === 'production-web')!.firing };
    };
    expect(await alertsNow()).toEqual({ states: { a1: 'firing', a2: 'firing' }, firing: 2 });

    t.clock.set(new Date(iso(20)));
    expect((await as('VIEWER').get(base())).body[0].status.state).toBe('active');
    expect(await alertsNow()).toEqual({ states: { a1: 'suppressed', a2: 'firing' }, firing: 1 });
    const one = (await as('VIEWER').get(`/api/v1/orgs/${org.slug}/alerts/production-web`)).body.find((a: { fingerprint: string }) => a.fingerprint === 'a1');
    expect(one).toMatchObject({ silencedBy: [created.body.id], activeAt: iso(-30), value: '42', labels: { alertname: 'NodeDown' } });

    // Expired early by a MEMBER: the alert fires again.
    expect((await as('VIEWER').delete(`${base()}/${created.body.id}`)).status).toBe(403);
    expect((await as('MEMBER').delete(`${base()}/${created.body.id}`).set('Content-Type', 'application/json')).status).toBe(204);
    expect((await as('VIEWER').get(base())).body[0].status.state).toBe('expired');
    expect(await alertsNow()).toEqual({ states: { a1: 'firing', a2: 'firing' }, firing: 2 });
    const again = await as('MEMBER').delete(`${base()}/${created.body.id}`);
    expect(again.status).toBe(409);
    expect((await t.db.query(`SELECT 1 FROM audit_events WHERE type = 'ALERT_SILENCE_EXPIRED'`)).length).toBe(1);

    // A silence also ends by itself.
    const timed = await as('MEMBER').post(base()).send({ matchers: [{ name: 'severity', value: 'warning' }], startsAt: iso(20), endsAt: iso(30), comment: 'short' });
    expect(timed.status).toBe(200);
    expect((await alertsNow()).states.a2).toBe('suppressed');
    t.clock.set(new Date(iso(31)));
    expect((await alertsNow()).states.a2).toBe('firing');
  });

  it('validates matchers, times and roles; 404 for unknown tenants and silences', async () => {
    t.clock.set(T0);
    const ok = { matchers: [{ name: 'alertname', value: 'X' }], startsAt: iso(0), endsAt: iso(60), comment: 'c' };
    for (const [body, field] of [
      [{ ...ok, matchers: [] }, 'matchers'],
      [{ ...ok, matchers: [{ name: 'alertname', value: '(', isRegex: true }] }, 'matchers.0.value'],
      [{ ...ok, endsAt: iso(0) }, 'endsAt'],
      [{ ...ok, startsAt: iso(-120), endsAt: iso(-60) }, 'endsAt'],
      [{ ...ok, comment: '' }, 'comment'],
      [{ ...ok, matchers: [{ name: 'alertname', value: '.*', isRegex: true }] }, 'matchers'],
      [{ ...ok, startsAt: 'tomorrow' }, 'startsAt'],
    ] as [object, string][]) {
      const res = await as('MEMBER').post(base()).send(body);
      expect({ field, status: res.status }).toEqual({ field, status: 400 });
      expectErrorBody(res.body, 400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    expect((await as('VIEWER').post(base()).send(ok)).status).toBe(403);
    expect((await t.as(org.users.OUTSIDER.token).get(base())).status).toBe(403);
    expect((await as('VIEWER').get(`/api/v1/orgs/${org.slug}/observability/nope/silences`)).status).toBe(404);
    expect((await as('MEMBER').delete(`${base()}/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
  });
});
