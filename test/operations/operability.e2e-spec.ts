import { TcpProxy } from '../support/tcp-proxy';
import { createTestDatabase, expectErrorBody, startTestApp, TestApp } from '../support/test-app';

describe('operability', () => {
  let t: TestApp;
  const METRICS_TOKEN = 'prometheus-scrape-token-0123456789';
  beforeAll(async () => (t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '30', AUTH_FAILURE_LIMIT_PER_MINUTE: '5', METRICS_TOKEN, FLEET_METRICS_ENABLED: 'true' })));
  afterAll(() => t.close());

  it('exposes Prometheus metrics with per-route latency and pool gauges', async () => {
    await t.admin().get('/sts/v1/personal-access-tokens').expect(200);
    // Not public: anonymous and ordinary users are refused; the scrape token and platform admins are served.
    expect((await t.http().get('/metrics')).status).toBe(401);
    const plain = await t.createUser('metrics-plain');
    expect((await t.as(plain.token).get('/metrics')).status).toBe(403);
    expect((await t.http().get('/metrics').set('Authorization', 'Bearer wrong-token-wrong-token')).status).toBe(401);
    expect((await t.admin().get('/metrics')).status).toBe(200);
    const res = await t.http().get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain('cms_authentication_failures_total{reason="unknown"}');
    expect(res.text).toMatch(/cms_rate_limit_rejections_total\{kind="principal"\} 0/);
    // Fleet gauges, build info, and every counter present from the start.
    expect(res.text).toMatch(/cms_build_info\{version="\d+\.\d+\.\d+",node="v24\.[\d.]+"\} 1/);
    expect(res.text).toMatch(/cms_clusters\{status="started",provider="any"\} 0/);
    expect(res.text).toMatch(/cms_scheduled_upgrades\{status="SCHEDULED"\} 0/);
    expect(res.text).toMatch(/cms_reconciler_steps_total\{outcome="failed"\} 0/);
    expect(res.text).toMatch(/cms_scheduler_transitions_total\{status="FAILED"\} 0/);
    expect(res.text).toMatch(/cms_http_request_duration_seconds_bucket\{.*route="\/sts\/v1\/personal-access-tokens".*\}/);
    expect(res.text).toMatch(/cms_db_pool_connections\{pool="request",state="total"\}/);
    expect(res.text).toMatch(/cms_db_pool_connections\{pool="background",state="total"\}/);
    expect(res.text).toContain('cms_reconciler_steps_total');
    expect(res.text).toContain('cms_scheduler_transitions_total');
  });

  it('redirects / to the Swagger UI', async () => {
    const res = await t.http().get('/');
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe('/swagger-ui');
  });

  it('sets security headers and a request id', async () => {
    const res = await t.http().get('/health');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBeDefined();
    expect(res.headers['content-security-policy']).toContain("default-src 'self'");
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const echoed = await t.http().get('/health').set('X-Request-Id', 'trace-abc.123');
    expect(echoed.headers['x-request-id']).toBe('trace-abc.123');
  });

  it('rate limits per credential with 429, Retry-After and the error body', async () => {
    const user = await t.createUser('limited');
    let last;
    for (let i = 0; i < 31; i++) last = await t.as(user.token).get('/sts/v1/personal-access-tokens');
    expect(last!.status).toBe(429);
    expectErrorBody(last!.body, 429);
    expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
    expect(last!.headers['ratelimit-limit']).toBe('30');
    expect(last!.headers['ratelimit-remaining']).toBe('0');
    // Another credential is counted separately.
    await t.admin().get('/sts/v1/personal-access-tokens').expect(200);
  });

  it('sends RateLimit-Limit, -Remaining and -Reset on authenticated and anonymous responses', async () => {
    const user = await t.createUser('ratelimit-headers');
    const first = await t.as(user.token).get('/sts/v1/personal-access-tokens').expect(200);
    expect(first.headers['ratelimit-limit']).toBe('30');
    expect(first.headers['ratelimit-remaining']).toBe('29');
    expect(Number(first.headers['ratelimit-reset'])).toBeGreaterThan(0);
    expect(Number(first.headers['ratelimit-reset'])).toBeLessThanOrEqual(60);
    const second = await t.as(user.token).get('/api/v1/memberships').expect(200);
    expect(second.headers['ratelimit-remaining']).toBe('28');
    // Errors after authentication carry the principal's budget too.
    const missing = await t.as(user.token).get('/api/v1/orgs/no-such-organisation/clusters');
    expect(missing.status).toBe(403);
    expect(missing.headers['ratelimit-remaining']).toBe('27');
    // A 401 carries the address's failed-authentication budget (AUTH_FAILURE_LIMIT_PER_MINUTE), the one it counts against.
    const anonymous = await t.http().get('/api/v1/memberships');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['ratelimit-limit']).toBe('5');
    expect(Number(anonymous.headers['ratelimit-remaining'])).toBeLessThan(5);
    expect(Number(anonymous.headers['ratelimit-reset'])).toBeGreaterThan(0);
  });

  it('counts every spelling of one credential in one budget', async () => {
    const user = await t.createUser('spelled');
    const spellings = [`Token ${user.token}`, `Bearer ${user.token}`, `token  ${user.token}`, `BEARER ${user.token} `];
    const statuses: number[] = [];
    for (let i = 0; i < 32; i++) {
      statuses.push((await t.http().get('/sts/v1/personal-access-tokens').set('Authorization', spellings[i % 4])).status);
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(30);
    expect(statuses.slice(30)).toEqual([429, 429]);
  });

  it('limits failed authentications per client address, before the credential is looked up', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      statuses.push((await t.http().get('/sts/v1/personal-access-tokens').set('Authorization', `Token random-${i}-${Date.now()}`)).status);
    }
    // Budget 5 per minute per address (earlier tests of this file already used two): 401s, then only 429s.
    const firstRefusal = statuses.indexOf(429);
    expect(firstRefusal).toBeGreaterThan(0);
    expect(firstRefusal).toBeLessThanOrEqual(5);
    expect(statuses.slice(0, firstRefusal).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(firstRefusal).every((s) => s === 429)).toBe(true);
    const refused = await t.http().get('/sts/v1/personal-access-tokens').set('Authorization', 'Token another-random');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    const metrics = await t.admin().get('/metrics');
    expect(metrics.status).toBe(429); // the address is blocked for every credential until the window passes
  });
});

describe('database outage', () => {
  let t: TestApp;
  let proxy: TcpProxy;

  beforeAll(async () => {
    const url = await createTestDatabase();
    const u = new URL(url);
    proxy = new TcpProxy(u.hostname, Number(u.port));
    await proxy.start();
    t = await startTestApp({ DATABASE_TIMEOUT_MS: '500' }, proxy.wrap(url));
  });
  afterAll(async () => {
    proxy.restore();
    await t.close();
    await proxy.stop();
  });

  it('answers 503 with the error body while PostgreSQL is unreachable, and recovers by itself', async () => {
    await t.admin().get('/sts/v1/personal-access-tokens').expect(200);
    proxy.cut();
    const res = await t.admin().get('/sts/v1/personal-access-tokens');
    expect(res.status).toBe(503);
    expectErrorBody(res.body, 503);
    const write = await t.admin().post('/sts/v1/personal-access-tokens').send({ name: 'during-outage' });
    expect(write.status).toBe(503);
    const ready = await t.http().get('/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.errors).toEqual([expect.objectContaining({ field: 'database' })]);
    await t.http().get('/health').expect(200);

    proxy.restore();
    let recovered = 0;
    for (let i = 0; i < 20 && recovered !== 200; i++) {
      recovered = (await t.admin().get('/sts/v1/personal-access-tokens')).status;
      if (recovered !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(recovered).toBe(200);
    await t.http().get('/health/ready').expect(200);
    const rows = await t.db.query(`SELECT count(*)::int AS n FROM personal_access_tokens WHERE name = 'during-outage'`);
    expect(rows[0].n).toBe(0);
  });

  it('answers 503 when PostgreSQL hangs (connections open, no answers), and recovers', async () => {
    const user = await t.createUser('hang-watcher');
    await t.as(user.token).get('/sts/v1/personal-access-tokens').expect(200);
    proxy.freeze();
    // A frozen database never answers: the 503 is DATABASE_TIMEOUT_MS (500 ms here) firing.
    const res = await t.as(user.token).get('/sts/v1/personal-access-tokens');
    expect(res.status).toBe(503);
    expectErrorBody(res.body, 503);
    proxy.restore();
    let recovered = 0;
    for (let i = 0; i < 30 && recovered !== 200; i++) {
      recovered = (await t.as(user.token).get('/sts/v1/personal-access-tokens')).status;
      if (recovered !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(recovered).toBe(200);
  });
});
