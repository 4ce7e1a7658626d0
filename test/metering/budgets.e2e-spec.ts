import { BudgetsService } from '../../src/metering/budgets.service';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, settle } from '../clusters/cluster-fixtures';
import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';

/**
 * Budgets (issue 41 step 5): thresholds on the actual and forecast cost of the month; each crossing is reported once
 * per period, as a BUDGET_THRESHOLD_CROSSED webhook event and activity entry. The only priced usage here is one
 * control plane at 1.00 an hour, so the actual cost is the hours since the month began and the forecast is the
 * hourly cost times the month's hours.
 */
const at = (s: string) => new Date(`2026-${s}Z`);

describe('budgets', () => {
  let t: TestApp;
  let f: OrgFixture;
  let budget: string;
  const base = () => `/api/v1/orgs/${f.orgSlug}/budgets`;
  const crossings = async () =>
    (
      await t.db.query(
        `SELECT message FROM activity_events WHERE organisation_id = $1 AND type = 'BUDGET_THRESHOLD_CROSSED' ORDER BY id`,
        [f.orgId],
      )
    ).map((r: { message: string }) => r.message);
  const webhookEvents = async () =>
    Number((await t.db.query(`SELECT count(*)::int AS n FROM webhook_events WHERE organisation_id = $1 AND type = 'BUDGET_THRESHOLD_CROSSED'`, [f.orgId]))[0].n);

  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
    t.clock.set(at('04-30T12:00:00'));
    const price = await t.admin().post('/admin/v1/price-book').send({
      kind: 'CONTROL_PLANE',
      cloudProvider: 'platform_1',
      region: 'eu-central-1',
      highlyAvailable: false,
      currency: 'EUR',
      listPricePerHour: '1.00',
      effectiveFrom: '2026-05-01T00:00:00Z',
    });
    expect(price.status).toBe(200);
    const hook = await t.as(f.users.admin.token).post(`/api/v1/orgs/${f.orgSlug}/webhooks`).send({ url: 'http://127.0.0.1:9/budgets', eventTypes: ['BUDGET_THRESHOLD_CROSSED'] });
    expect(hook.status).toBe(200);
    t.clock.set(at('05-01T00:00:00'));
    expect((await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'costly' }))).status).toBe(200);
    await settle(t);
  });
  afterAll(() => t.close());

  it('ADMIN creates, changes and deletes budgets; VIEWER reads them; bad input is refused', async () => {
    const body = { name: 'Monthly', amount: '100', currency: 'EUR' };
    expect((await t.as(f.users.member.token).post(base()).send(body)).status).toBe(403);
    const created = await t.as(f.users.admin.token).post(base()).send(body);
    expect(created.status).toBe(200);
    budget = created.body.identity;
    expect(created.body).toMatchObject({
      name: 'Monthly',
      environmentSlug: null,
      amount: '100.00',
      currency: 'EUR',
      thresholds: [
        { percent: 50, basis: 'ACTUAL' },
        { percent: 90, basis: 'ACTUAL' },
        { percent: 100, basis: 'ACTUAL' },
        { percent: 100, basis: 'FORECAST' },
      ],
      period: '2026-05',
      actualCost: '0.00',
      forecastCost: '0.00',
      crossed: [],
    });
    expect((await t.as(f.users.viewer.token).get(`${base()}/${budget}`)).status).toBe(200);
    expect((await t.as(f.users.viewer.token).get(base())).body.content).toHaveLength(1);
    const env = await t.as(f.users.admin.token).post(base()).send({ ...body, name: 'Production', environmentSlug: 'production', amount: '1000.50' });
    expect(env.body).toMatchObject({ environmentSlug: 'production', amount: '1000.50' });

    for (const [bad, status, text] of [
      [{ ...body, name: 'Other', environmentSlug: 'nowhere' }, 400, /environment 'nowhere' does not exist/],
      [{ ...body, name: 'Other', currency: 'USD' }, 400, /currency must be EUR/],
      [{ ...body, name: 'Other', amount: '-5' }, 400, /amount must be a decimal string/],
      [{ ...body, name: 'Other', thresholds: [{ percent: 80, basis: 'ACTUAL' }, { percent: 80, basis: 'ACTUAL' }] }, 400, /listed twice/],
      [{ ...body, name: 'Other', thresholds: [{ percent: 0, basis: 'ACTUAL' }] }, 400, /percent/],
      [body, 409, /has a budget named 'Monthly' already/],
    ] as const) {
      const res = await t.as(f.users.admin.token).post(base()).send(bad);
      expect(res.status).toBe(status);
      expectErrorBody(res.body, status);
      expect(JSON.stringify(res.body)).toMatch(text);
    }
    const renamed = await t.as(f.users.admin.token).patch(`${base()}/${env.body.identity}`).send({ name: 'Prod' });
    expect(renamed.body.name).toBe('Prod');
    expect((await t.as(f.users.viewer.token).patch(`${base()}/${env.body.identity}`).send({ name: 'x' })).status).toBe(403);
    expect((await t.as(f.users.admin.token).delete(`${base()}/${env.body.identity}`)).status).toBe(204);
    expect((await t.as(f.users.viewer.token).get(`${base()}/${env.body.identity}`)).status).toBe(404);
    const audited = await t.db.query(`SELECT type FROM audit_events WHERE referenced_entity_identity = $1 ORDER BY id`, [env.body.identity]);
    expect(audited.map((r: { type: string }) => r.type)).toEqual(['BUDGET_CREATED', 'BUDGET_UPDATED', 'BUDGET_DELETED']);
  });

  it('reports each threshold once per period, on the actual and on the forecast cost', async () => {
    const evaluate = () => t.get(BudgetsService).evaluateNow();
    t.clock.set(at('05-02T00:00:00')); // 24.00 so far; heading for 744.00
    expect(await evaluate()).toBe(1);
    expect(await evaluate()).toBe(0);
    const seen = await t.as(f.users.viewer.token).get(`${base()}/${budget}`);
    expect(seen.body).toMatchObject({ actualCost: '24.00', forecastCost: '744.00', crossed: [{ percent: 100, basis: 'FORECAST', cost: '744.00', crossedAt: '2026-05-02T00:00:00.000Z' }] });

    t.clock.set(at('05-03T04:00:00')); // 52.00
    expect(await evaluate()).toBe(1);
    t.clock.set(at('05-04T18:00:00')); // 90.00
    expect(await evaluate()).toBe(1);
    expect(await evaluate()).toBe(0);
    t.clock.set(at('05-05T04:00:00')); // 100.00
    expect(await evaluate()).toBe(1);
    t.clock.set(at('05-20T00:00:00'));
    expect(await evaluate()).toBe(0);

    t.clock.set(at('06-01T10:00:00')); // a new period: 10.00 so far, heading for 720.00
    expect(await evaluate()).toBe(1);
    expect(await crossings()).toEqual([
      'budget Monthly of organisation ' + f.orgSlug + ' crossed 100 % of 100.00 EUR (forecast cost 744.00 EUR) in 2026-05',
      'budget Monthly of organisation ' + f.orgSlug + ' crossed 50 % of 100.00 EUR (actual cost 52.00 EUR) in 2026-05',
      'budget Monthly of organisation ' + f.orgSlug + ' crossed 90 % of 100.00 EUR (actual cost 90.00 EUR) in 2026-05',
      'budget Monthly of organisation ' + f.orgSlug + ' crossed 100 % of 100.00 EUR (actual cost 100.00 EUR) in 2026-05',
      'budget Monthly of organisation ' + f.orgSlug + ' crossed 100 % of 100.00 EUR (forecast cost 720.00 EUR) in 2026-06',
    ]);
    expect(await webhookEvents()).toBe(5);
  });
});
