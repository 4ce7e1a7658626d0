import { startTestApp, TestApp } from '../support/test-app';

/**
 * Public routes that take their own token (alert webhook, node registration) are not metered by the
 * authentication guard; a caller flooding them with made-up tokens meets the per-address limit.
 */
describe('rate limits on public routes with their own token', () => {
  // A fresh instance per route: the per-address budget is shared by every route of one instance.
  let t: TestApp;
  beforeEach(async () => (t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '5' })));
  afterEach(() => t.close());

  it.each([
    ['the alert webhook', '/api/v1/observability/production-web/alerts/webhook', { version: '4', status: 'firing', receiver: 'r', alerts: [] }],
    ['node registration', '/api/v1/node-registrations', { name: 'node-1', address: '10.0.0.1', kubeletVersion: 'v1.31.5' }],
  ])('%s answers 429 after the per-address budget, whatever token is sent', async (_name, path, body) => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await t.http().post(path).set('Authorization', `Bearer made-up-token-${i}-0123456789abcdef`).send(body);
      statuses.push(res.status);
      if (res.status === 429) expect(res.headers['retry-after']).toBeDefined();
    }
    expect(statuses.slice(0, 5).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(5)).toEqual([429, 429]);
  });
});

/**
 * The per-address limit applies to every request the authentication guard does not meter, whatever
 * Authorization header it carries: unmatched routes and the API document included. The guard meters a
 * credential per user, so new personal access tokens share their user's budget.
 */
describe('per-address and per-user budgets', () => {
  let t: TestApp;
  beforeEach(async () => (t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '5' })));
  afterEach(() => t.close());

  it.each([
    ['an unmatched route', '/api/v1/no-such-route', 404],
    ['the API document', '/v3/api-docs', 200],
  ])('%s answers 429 after the per-address budget, with any Authorization header', async (_name, path, status) => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await t.http().get(path).set('Authorization', `Token made-up-token-${i}-0123456789abcdef`);
      statuses.push(res.status);
      if (res.status === 429) {
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
        expect(res.body.message).toMatch(/Rate limit of 5 requests per minute exceeded/);
      }
    }
    expect(statuses).toEqual([status, status, status, status, status, 429, 429]);
    // A credential on a guarded route is counted against its user, not the exhausted address budget.
    await t.admin().get('/sts/v1/personal-access-tokens').expect(200);
  });

  it('a new personal access token shares its user budget, and creating it counts against that budget', async () => {
    const user = await t.createUser('many-tokens');
    for (let i = 0; i < 2; i++) await t.as(user.token).get('/sts/v1/personal-access-tokens').expect(200);
    const created = await t.as(user.token).post('/sts/v1/personal-access-tokens').send({ name: 'fresh' });
    expect(created.status).toBe(200);
    expect(created.headers['ratelimit-remaining']).toBe('2');
    const fresh = await t.as(created.body.token).get('/sts/v1/personal-access-tokens');
    expect(fresh.status).toBe(200);
    expect(fresh.headers['ratelimit-remaining']).toBe('1');
    await t.as(created.body.token).get('/sts/v1/personal-access-tokens').expect(200);
    // Five requests of the user in this minute, over both tokens: the sixth is refused whichever token it uses.
    expect((await t.as(created.body.token).get('/sts/v1/personal-access-tokens')).status).toBe(429);
    expect((await t.as(user.token).post('/sts/v1/personal-access-tokens').send({ name: 'another' })).status).toBe(429);
    // Another user keeps a budget of its own.
    await t.admin().get('/sts/v1/personal-access-tokens').expect(200);
  });
});
