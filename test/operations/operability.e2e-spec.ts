import { TcpProxy } from '../support/tcp-proxy';
import { createTestDatabase, expectErrorBody, startTestApp, TestApp } from '../support/test-app';

describe('operability', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '30' })));
  afterAll(() => t.close());

  it('exposes Prometheus metrics with per-route latency and pool gauges', async () => {
    await t.admin().get('/sts/v1/personal-access-tokens').expect(200);
    const res = await t.http().get('/metrics');
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/cms_http_request_duration_seconds_bucket\{.*route="\/sts\/v1\/personal-access-tokens".*\}/);
    expect(res.text).toMatch(/cms_db_pool_connections\{state="total"\}/);
    expect(res.text).toContain('cms_reconciler_steps_total');
    expect(res.text).toContain('cms_scheduler_transitions_total');
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
    // Another credential is counted separately.
    await t.admin().get('/sts/v1/personal-access-tokens').expect(200);
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
    const started = Date.now();
    const res = await t.admin().get('/sts/v1/personal-access-tokens');
    expect(res.status).toBe(503);
    expectErrorBody(res.body, 503);
    expect(Date.now() - started).toBeLessThan(5000);
    const write = await t.admin().post('/sts/v1/personal-access-tokens').send({ name: 'during-outage' });
    expect(write.status).toBe(503);
    const ready = await t.http().get('/health/ready');
    expect(ready.status).toBe(503);
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
});
