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
