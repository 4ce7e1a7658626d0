import { parseDocument, visit } from 'yaml';
import { AppConfig } from '../../src/config/app-config';
import { Executor } from '../../src/executor/executor';
import { startTestApp, TestApp } from '../support/test-app';
import { seedCluster, seedEnvironment, seedOrg, SeededOrg } from './fixtures';

/**
 * Expensive work on user input (YAML of alerting configurations, silence patterns) runs on the executor: one
 * organisation's heavy or hostile input is handled on the worker threads (the executor counts each task), `/health`
 * and another organisation's requests answer meanwhile, and the organisation's backlog is bounded (429). How fast
 * they answer under that load is measured by `npm run bench:isolation` (docs/performance.md), not asserted here: the
 * test machine is shared.
 */

/**
 * A valid Alertmanager configuration of about 128 KiB with about 15,000 keys: a PagerDuty receiver (its routing key
 * secret) whose `details` map (a real Alertmanager map of strings) is long, and a webhook with header secrets.
 */
function heavyConfig(): string {
  const head =
    'route:\n  receiver: team\nreceivers:\n  - name: team\n    webhook_configs:\n      - url: https://hooks.example.com/hook-token\n' +
    '        http_config:\n          http_headers: {X-Api-Key: {secrets: [header-secret]}}\n' +
    '    pagerduty_configs:\n      - routing_key: pd-routing-secret\n        details: {';
  const parts: string[] = [];
  let size = head.length + 4;
  for (let i = 0; size < 128 * 1024 - 16; i++) {
    const part = `d${i.toString(36)}: x`;
    parts.push(part);
    size += part.length + 1;
  }
  return `${head}${parts.join(',')}}\n`;
}

function keyCount(text: string): number {
  let n = 0;
  visit(parseDocument(text, { uniqueKeys: false }), { Pair: () => void n++ });
  return n;
}

/** Statuses of `fn` called one after another until `load` settles (at least once). */
async function whileLoaded(load: Promise<unknown>, fn: () => PromiseLike<{ status: number }>): Promise<number[]> {
  let done = false;
  void load.finally(() => (done = true)).catch(() => undefined);
  const statuses: number[] = [];
  do statuses.push((await fn()).status);
  while (!done);
  return statuses;
}

describe('expensive work on user input runs on the executor, and other tenants are served meanwhile', () => {
  let t: TestApp;
  let heavy: SeededOrg;
  let other: SeededOrg;
  const config = heavyConfig();
  const SMALL = { alertingConfig: 'route:\n  receiver: team\nreceivers:\n  - name: team\n' };
  const heavyPath = () => `/api/v1/orgs/${heavy.slug}/monitoring/production-web/alerting`;
  const otherPost = () => t.as(other.users.MEMBER.token).post(`/api/v1/orgs/${other.slug}/monitoring/production-web/alerting`).send(SMALL);
  const health = () => t.http().get('/health');
  const ran = (task: string) => t.get(Executor).outcomes.get(`${task} ok`) ?? 0;

  beforeAll(async () => {
    // The tasks' deadline is test/executor's subject, not this file's: on a shared machine at load 8 (the suite beside
    // `npm run bench`), the niced worker thread took more than the default 10 s over the 128 KiB configuration.
    t = await startTestApp({ EXECUTOR_TASK_TIMEOUT_MS: '120000' });
    heavy = await seedOrg(t, 'heavy-input');
    other = await seedOrg(t, 'other-tenant');
    for (const org of [heavy, other]) await seedCluster(t, org.id, await seedEnvironment(t, org.id, 'production'), 'web');
    const stored = await t.as(heavy.users.MEMBER.token).post(heavyPath()).send({ alertingConfig: config });
    expect([stored.status, stored.body.message?.slice(0, 300)]).toEqual([200, expect.stringMatching(/replaced/)]);
  }, 180_000);
  afterAll(async () => {
    t.clock.set(null);
    await t.close();
  });

  it('a VIEWER reading a 128 KiB configuration with ~15,000 keys: redacted on a worker thread while /health and another organisation answer', async () => {
    expect(Buffer.byteLength(config)).toBeGreaterThan(120 * 1024);
    expect(Buffer.byteLength(config)).toBeLessThanOrEqual(128 * 1024);
    expect(keyCount(config)).toBeGreaterThan(14_000);
    const redacted = ran('alerting.redact');
    const reading = t.as(heavy.users.VIEWER.token).get(heavyPath()).then((r) => r);
    const healthStatuses = await whileLoaded(reading, health);
    const res = await reading;
    expect(res.status).toBe(200);
    expect(res.body.alertingConfig).not.toMatch(/hook-token|header-secret|pd-routing-secret/);
    expect(res.body.alertingConfig).toContain('<secret>');
    expect(ran('alerting.redact') - redacted).toBe(1);
    expect(healthStatuses.length).toBeGreaterThan(0);
    expect(healthStatuses.every((s) => s === 200)).toBe(true);
    const otherStatuses = await whileLoaded(t.as(heavy.users.VIEWER.token).get(heavyPath()).then((r) => r), otherPost);
    expect(otherStatuses.every((s) => s === 200)).toBe(true);
    expect(ran('alerting.redact') - redacted).toBe(2);
  });

  it("a catastrophic-backtracking silence pattern ((a+)+$) against a long label does not stall anyone, and RE2's rules apply", async () => {
    const base = `/api/v1/orgs/${heavy.slug}`;
    const member = t.as(heavy.users.MEMBER.token);
    const T0 = new Date('2026-11-23T10:00:00Z');
    t.clock.set(T0);
    const token = (await member.post(`${base}/monitoring/production-web/alert-webhook-token`)).body.token;
    // 29 characters take a backtracking engine seconds (doubling with each one); label values may be 8 KiB.
    const alerts = [
      { status: 'firing', labels: { alertname: 'Backtrack', path: `${'a'.repeat(29)}!` }, startsAt: T0.toISOString(), fingerprint: 'bt1' },
      { status: 'firing', labels: { alertname: 'Backtrack', path: `${'a'.repeat(8000)}!` }, startsAt: T0.toISOString(), fingerprint: 'bt2' },
      { status: 'firing', labels: { alertname: 'Backtrack', path: 'aaaa' }, startsAt: T0.toISOString(), fingerprint: 'bt3' },
    ];
    const sent = await t.http().post('/api/v1/observability/production-web/alerts/webhook').set('Authorization', `Bearer ${token}`).send({ version: '4', status: 'firing', receiver: 'r', alerts });
    expect(sent.status).toBe(200);
    const list = () => t.as(heavy.users.VIEWER.token).get(`${base}/alerts/production-web`).expect(200);
    await list();

    const window = { startsAt: new Date(T0.getTime() - 60_000).toISOString(), endsAt: new Date(T0.getTime() + 3600_000).toISOString(), comment: 'c' };
    const silence = await member.post(`${base}/observability/production-web/silences`).send({ ...window, matchers: [{ name: 'path', value: '(a+)+$', isRegex: true }] });
    expect(silence.status).toBe(200);
    const matched = ran('silences.match');
    const listing = list().then((r) => r);
    const healthStatuses = await whileLoaded(listing, health);
    const states = Object.fromEntries(((await listing).body as { fingerprint: string; state: string }[]).map((a) => [a.fingerprint, a.state]));
    expect(states).toEqual({ bt1: 'firing', bt2: 'firing', bt3: 'suppressed' });
    // Matched by RE2 on a worker thread (a backtracking engine on the event loop would not answer at all).
    expect(ran('silences.match') - matched).toBe(1);
    expect(healthStatuses.every((s) => s === 200)).toBe(true);

    // RE2 syntax (as Alertmanager): a lookahead or a backreference is refused naming the field; so is an over-long value.
    for (const [value, message] of [
      ['(?=a)b', /matchers\.0\.value is not a valid RE2 regular expression/],
      ['(a)\\1', /matchers\.0\.value is not a valid RE2 regular expression/],
      ['a)|(b', /matchers\.0\.value is not a valid RE2 regular expression/],
      ['a'.repeat(1025), /matchers\.0\.value must be shorter than or equal to 1024 characters/],
    ] as [string, RegExp][]) {
      const res = await member.post(`${base}/observability/production-web/silences`).send({ ...window, matchers: [{ name: 'path', value, isRegex: true }] });
      expect({ value: value.slice(0, 20), status: res.status }).toEqual({ value: value.slice(0, 20), status: 400 });
      expect(res.body.errors[0].field).toBe('matchers.0.value');
      expect(res.body.message).toMatch(message);
    }
    // Alertmanager's rule: at least one matcher must not match the empty string, however it is spelled.
    for (const matchers of [
      [{ name: 'nonexistent', value: 'zzz', isEqual: false }],
      [{ name: 'alertname', value: '', isEqual: true }],
      [{ name: 'alertname', value: 'x|', isRegex: true }],
      [{ name: 'alertname', value: '.+', isRegex: true, isEqual: false }],
      [{ name: 'alertname', value: 'a*', isRegex: true }, { name: 'other', value: 'b', isEqual: false }],
    ]) {
      const res = await member.post(`${base}/observability/production-web/silences`).send({ ...window, matchers });
      expect({ matchers, status: res.status }).toEqual({ matchers, status: 400 });
      expect(res.body.errors).toEqual([{ field: 'matchers', message: expect.stringMatching(/at least one matcher must not match the empty string/) }]);
    }
    const fine = await member.post(`${base}/observability/production-web/silences`).send({ ...window, matchers: [{ name: 'nonexistent', value: 'zzz', isEqual: false }, { name: 'alertname', value: 'Backtrack' }] });
    expect(fine.status).toBe(200);
    t.clock.set(null);
  });

  it("one organisation flooding with worst-case inputs: all of it on the executor, while /health and another organisation's alerting POST answer", async () => {
    const before = { redact: ran('alerting.redact'), check: ran('alerting.check') };
    const viewer = t.as(heavy.users.VIEWER.token);
    const flood = Promise.all([
      ...[1, 2, 3, 4].map(() => viewer.get(heavyPath()).then((r) => r.status)),
      ...[1, 2, 3, 4].map(() => viewer.post(`${heavyPath()}/validate`).send({ alertingConfig: config }).then((r) => r.status)),
      ...[1, 2].map(() => viewer.get(`/api/v1/orgs/${heavy.slug}/alerts/production-web`).then((r) => r.status)),
    ]);
    const healthStatuses = await whileLoaded(flood, health);
    const otherStatus = (await otherPost()).status;
    const statuses = await flood;

    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(healthStatuses.length).toBeGreaterThan(0);
    expect(healthStatuses.every((s) => s === 200)).toBe(true);
    expect(otherStatus).toBe(200);
    expect(ran('alerting.redact') - before.redact).toBe(4);
    // The four validations, and the other organisation's POST.
    expect(ran('alerting.check') - before.check).toBe(5);
  });

  it("one organisation's concurrent heavy writes hold at most a quarter of the request pool: the rest are 429 and another organisation's write goes through", async () => {
    const member = t.as(heavy.users.MEMBER.token);
    // A write waits for its check inside its transaction, holding a connection: a quarter of the pool may do so.
    const limit = Math.max(1, Math.floor(t.get(AppConfig).DATABASE_POOL_SIZE / 4));
    const writes = Promise.all(Array.from({ length: limit + 4 }, () => member.post(heavyPath()).send({ alertingConfig: config })));
    await new Promise((r) => setTimeout(r, 100));
    const other = (await otherPost()).status;
    const results = await writes;
    // The first `limit` to arrive are admitted; the others are refused unless they arrive after one finished (a
    // loaded machine may spread the arrivals), so at least half of the four extra ones are refused.
    expect(results.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(limit);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused.length).toBeGreaterThanOrEqual(2);
    expect(new Set(refused.map((r) => r.status))).toEqual(new Set([429]));
    expect(Number(refused[0].headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refused[0].body.message).toMatch(new RegExp(`already has ${limit} expensive operations? in progress in changes`));
    expect(other).toBe(200);
  });
});
