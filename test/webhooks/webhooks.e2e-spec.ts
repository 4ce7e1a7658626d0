import { Webhook } from 'standardwebhooks';
import { OutboundPolicy } from '../../src/common/outbound-policy';
import { MAX_PINGS_PER_SUBSCRIPTION, PING_WINDOW_SECONDS } from '../../src/webhooks/dto/webhook.dto';
import { WebhookDeliveryClaims } from '../../src/webhooks/webhook-delivery-claims';
import { WebhookDeliveryWorker } from '../../src/webhooks/webhook-delivery.worker';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, settle } from '../clusters/cluster-fixtures';
import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { Receiver, ReceivedRequest, waitFor } from './receiver';

/** The receiver is on loopback: allow-listed, while every other internal address stays refused. */
const ENV = { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false', OUTBOUND_ALLOWLIST: '127.0.0.1', WEBHOOK_DELIVERY_CONCURRENCY: '4', WEBHOOK_TIMEOUT_MS: '3000', FLEET_METRICS_ENABLED: 'true' };

interface CloudEvent {
  specversion: string;
  id: string;
  source: string;
  type: string;
  subject?: string;
  time: string;
  datacontenttype: string;
  data: { organisation: { slug: string }; details?: Record<string, { old: unknown; new: unknown }>; message?: string; actor?: { username: string } };
}

const verify = (secret: string, r: ReceivedRequest) =>
  new Webhook(secret).verify(r.body, {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  }) as CloudEvent;

describe('webhooks', () => {
  let t: TestApp;
  let f: OrgFixture;
  let receiver: Receiver;
  const base = () => `/api/v1/orgs/${f.orgSlug}/webhooks`;
  const admin = () => t.as(f.users.admin.token);
  const worker = () => t.get(WebhookDeliveryWorker);

  beforeAll(async () => {
    t = await startTestApp(ENV);
    receiver = await new Receiver().start();
  });
  beforeEach(async () => {
    f = await createOrgFixture(t);
    receiver.received.length = 0;
    receiver.respond = () => ({ status: 204 });
  });
  afterEach(() => t.clock.set(null));
  afterAll(async () => {
    await receiver.stop();
    await t.close();
  });

  async function subscribe(path: string, eventTypes: string[] = ['*']): Promise<{ identity: string; secret: string }> {
    const res = await admin().post(base()).send({ url: receiver.url(path), description: 'test receiver', eventTypes });
    expect(res.status).toBe(200);
    return res.body;
  }

  it('manages subscriptions: ADMIN only, secret shown once, validated, audited', async () => {
    expect((await t.as(f.users.member.token).get(base())).status).toBe(403);
    expect((await t.as(f.users.member.token).post(base()).send({ url: receiver.url(), eventTypes: ['*'] })).status).toBe(403);

    const created = await admin().post(base()).send({ url: receiver.url(), eventTypes: ['CLUSTER_CREATED', 'CLUSTER_STATUS_CHANGED'] });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      identity: expect.stringMatching(/^[0-9a-f-]{36}$/),
      url: receiver.url(),
      description: '',
      eventTypes: ['CLUSTER_CREATED', 'CLUSTER_STATUS_CHANGED'],
      enabled: true,
      disabledReason: null,
      createdBy: f.users.admin.username,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const listed = await admin().get(base());
    expect(listed.body).toHaveLength(1);
    expect(listed.body[0].secret).toBeUndefined();
    const [stored] = await t.db.query(`SELECT secret_ciphertext FROM webhook_subscriptions WHERE identity = $1`, [created.body.identity]);
    expect(stored.secret_ciphertext).not.toContain(created.body.secret.slice(6, 20));
    const [audit] = await t.db.query(`SELECT details FROM audit_events WHERE type = 'WEBHOOK_CREATED' AND referenced_entity_identity = $1`, [created.body.identity]);
    expect(audit.details.url).toEqual({ old: null, new: receiver.url() });
    expect(JSON.stringify(audit.details)).not.toContain(created.body.secret);

    // Bad input: each a 400 naming the field.
    const bad = async (body: Record<string, unknown>, field: string) => {
      const res = await admin().post(base()).send(body);
      expect(res.status).toBe(400);
      expectErrorBody(res.body, 400);
      expect(JSON.stringify(res.body)).toContain(field);
    };
    await bad({ url: 'http://10.1.2.3/hook', eventTypes: ['*'] }, 'url');
    await bad({ url: 'http://169.254.169.254/latest', eventTypes: ['*'] }, 'url');
    await bad({ url: 'ftp://example.com/x', eventTypes: ['*'] }, 'url');
    await bad({ url: receiver.url(), eventTypes: [] }, 'eventTypes');
    await bad({ url: receiver.url(), eventTypes: ['cluster created'] }, 'eventTypes');
    await bad({ url: receiver.url(), eventTypes: ['A', 'A'] }, 'eventTypes');
    await bad({ url: receiver.url() }, 'eventTypes');

    // A PATCH repeating the values changes nothing and writes no audit row; a real change is audited.
    const path = `${base()}/${created.body.identity}`;
    const same = await admin().patch(path).send({ eventTypes: ['CLUSTER_CREATED', 'CLUSTER_STATUS_CHANGED'] });
    expect(same.status).toBe(200);
    expect(same.body.modifiedAt).toBe(created.body.modifiedAt);
    const changed = await admin().patch(path).send({ description: 'chat', enabled: false });
    expect(changed.body).toMatchObject({ description: 'chat', enabled: false });
    const updates = await t.db.query(`SELECT details FROM audit_events WHERE type = 'WEBHOOK_UPDATED' AND referenced_entity_identity = $1`, [created.body.identity]);
    expect(updates).toHaveLength(1);
    expect(updates[0].details).toEqual({ description: { old: '', new: 'chat' }, enabled: { old: true, new: false } });
    expect((await admin().get(`${base()}/not-a-uuid`)).status).toBe(404);
    expect((await admin().get(`${base()}/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    expect((await admin().delete(path)).status).toBe(204);
    expect((await admin().get(path)).status).toBe(404);
    expect(await t.db.query(`SELECT 1 FROM audit_events WHERE type = 'WEBHOOK_DELETED' AND referenced_entity_identity = $1`, [created.body.identity])).toHaveLength(1);
  });

  it('accepts "*" or known event types only: an unknown type is 400 naming the valid ones, nothing stored', async () => {
    const before = await t.db.query(`SELECT count(*)::int AS n FROM webhook_subscriptions`);
    for (const eventTypes of [['NOPE'], ['CLUSTER_CREATED', 'CLUSTER_CREATD']]) {
      const res = await admin().post(base()).send({ url: receiver.url(), eventTypes });
      expect(res.status).toBe(400);
      expectErrorBody(res.body, 400);
      expect(res.body.errors[0]).toEqual({ field: 'eventTypes', message: expect.stringContaining(`unknown event types (${eventTypes[eventTypes.length - 1]})`) });
      expect(res.body.errors[0].message).toMatch(/use "\*" or any of: .*CLUSTER_CREATED.*CLUSTER_STATUS_CHANGED.*WEBHOOK_UPDATED/);
    }
    expect(await t.db.query(`SELECT count(*)::int AS n FROM webhook_subscriptions`)).toEqual(before);
    const { identity } = await subscribe('/known', ['*', 'ALERT_FIRING', 'ENVIRONMENT_MEMBER_UPDATED']);
    const patched = await admin().patch(`${base()}/${identity}`).send({ eventTypes: ['NOPE'] });
    expect(patched.status).toBe(400);
    expect(patched.body.errors[0].field).toBe('eventTypes');
  });

  it('seals a token in the URL query: delivered to the whole URL, redacted in audit, activity, pings and to READ_ONLY tokens; sent back redacted it is kept', async () => {
    const url = `${receiver.url('/q')}?token=tok-9f8e7d&team=ops`;
    const created = await admin().post(base()).send({ url, eventTypes: ['ENVIRONMENT_CREATED'] });
    expect(created.status).toBe(200);
    expect(created.body.url).toBe(url);
    const [row] = await t.db.query(`SELECT url, url_ciphertext FROM webhook_subscriptions WHERE identity = $1`, [created.body.identity]);
    expect(row.url).toBe(`${receiver.url('/q')}?token=[redacted]&team=[redacted]`);
    expect(row.url_ciphertext).toMatch(/^v1\./);
    const ro = await t.as(f.users.admin.token).post('/sts/v1/personal-access-tokens').send({ name: 'ro', type: { name: 'READ_ONLY' } });
    expect((await t.as(ro.body.token).get(`${base()}/${created.body.identity}`)).body.url).toBe(`${receiver.url('/q')}?token=<secret>&team=<secret>`);
    expect((await admin().get(`${base()}/${created.body.identity}`)).body.url).toBe(url);

    await t.as(f.users.member.token).post(`/api/v1/orgs/${f.orgSlug}/environments`).send({ name: 'hooked' }).expect(200);
    await admin().post(`${base()}/${created.body.identity}/ping`).expect(200);
    await worker().drain();
    expect(receiver.on('/q?token=tok-9f8e7d&team=ops')).toHaveLength(2);

    const audit = await t.db.query(`SELECT details FROM audit_events WHERE referenced_entity_identity = $1`, [created.body.identity]);
    const activity = await t.db.query(`SELECT message FROM activity_events WHERE organisation_id = $1`, [f.orgId]);
    const events = await t.db.query(`SELECT data FROM webhook_events WHERE organisation_id = $1`, [f.orgId]);
    for (const rows of [audit, activity, events]) expect(JSON.stringify(rows)).not.toContain('tok-9f8e7d');
    expect(audit[0].details.url).toEqual({ old: null, new: `${receiver.url('/q')}?token=[redacted]&team=[redacted]` });
    const viewerFeed = await t.as(f.users.viewer.token).get(`/api/v1/organisations/${f.orgSlug}/activity`);
    expect(viewerFeed.status).toBe(200);
    expect(JSON.stringify(viewerFeed.body)).not.toContain('tok-9f8e7d');

    // The URL as shown redacted, sent back with another change, keeps the stored URL; a partly redacted one is 400.
    const kept = await admin().patch(`${base()}/${created.body.identity}`).send({ url: `${receiver.url('/q')}?token=<secret>&team=<secret>`, description: 'kept' });
    expect(kept.status).toBe(200);
    expect(kept.body.url).toBe(url);
    const partial = await admin().patch(`${base()}/${created.body.identity}`).send({ url: `${receiver.url('/other')}?token=<secret>` });
    expect(partial.status).toBe(400);
    expect(partial.body.errors[0].field).toBe('url');
  });

  it('delivers a cluster lifecycle in order as signed CloudEvents', async () => {
    const sub = await subscribe('/lifecycle', ['CLUSTER_CREATED', 'CLUSTER_STATUS_CHANGED']);
    const created = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f));
    expect(created.status).toBe(200);
    await settle(t);
    const sending = Math.floor(Date.now() / 1000);
    expect(await worker().drain()).toBeGreaterThan(2);
    const sent = Math.ceil(Date.now() / 1000);

    const events = receiver.on('/lifecycle').map((r) => {
      expect(r.headers['content-type']).toBe('application/cloudevents+json; charset=utf-8');
      expect(r.headers['webhook-id']).toMatch(/^[0-9a-f-]{36}$/);
      // Signed when it was sent (Standard Webhooks' replay window is checked against it).
      const stamp = Number(r.headers['webhook-timestamp']);
      expect(stamp >= sending && stamp <= sent).toBe(true);
      return verify(sub.secret, r); // throws on a bad signature
    });
    expect(events[0]).toMatchObject({
      specversion: '1.0',
      type: 'CLUSTER_CREATED',
      source: `/api/v1/orgs/${f.orgSlug}`,
      subject: `clusters/${f.envSlug}/web`,
      datacontenttype: 'application/json',
      data: { organisation: { slug: f.orgSlug }, actor: { username: f.users.member.username } },
    });
    const statuses = events.filter((e) => e.type === 'CLUSTER_STATUS_CHANGED').map((e) => e.data.details!.status.new);
    expect(statuses).toEqual(['provisioning', 'provisioned', 'starting', 'started']);
    const times = events.map((e) => Date.parse(e.time));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    // Only the subscribed types arrive.
    expect(new Set(events.map((e) => e.type))).toEqual(new Set(['CLUSTER_CREATED', 'CLUSTER_STATUS_CHANGED']));

    const page = await admin().get(`${base()}/${sub.identity}/deliveries?size=2&sort=createdAt,asc`);
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ totalElements: events.length, size: 2, number: 0 });
    expect(page.body.content[0]).toMatchObject({ eventType: 'CLUSTER_CREATED', status: 'DELIVERED', attempts: 1, lastResponseCode: 204, nextAttemptAt: null });
    expect((await admin().get(`${base()}/${sub.identity}/deliveries?sort=secret,asc`)).status).toBe(400);
  });

  it('retries a receiver that is down with growing gaps on the clock, then delivers once it recovers', async () => {
    const T0 = new Date('2026-11-23T10:00:00Z');
    t.clock.set(T0);
    const sub = await subscribe('/flaky', ['ENVIRONMENT_UPDATED']);
    receiver.respond = () => ({ status: 503 });
    expect((await t.as(f.users.member.token).patch(`/api/v1/orgs/${f.orgSlug}/environments/${f.envSlug}`).send({ description: 'first' })).status).toBe(200);

    const delivery = async () => (await admin().get(`${base()}/${sub.identity}/deliveries`)).body.content[0];
    expect(await worker().drain()).toBe(1);
    const first = await delivery();
    expect(first).toMatchObject({ status: 'PENDING', attempts: 1, lastResponseCode: 503, lastError: 'The receiver answered HTTP 503' });
    const gap1 = Date.parse(first.nextAttemptAt) - T0.getTime();
    expect(gap1).toBeGreaterThanOrEqual(4000);
    expect(gap1).toBeLessThanOrEqual(6000);

    expect(await worker().drain()).toBe(0); // not due yet
    t.clock.advance(gap1);
    expect(await worker().drain()).toBe(1);
    const second = await delivery();
    expect(second.attempts).toBe(2);
    const gap2 = Date.parse(second.nextAttemptAt) - Date.parse(second.lastAttemptAt);
    expect(gap2).toBeGreaterThanOrEqual(48_000);
    expect(gap2).toBeGreaterThan(gap1 * 5);

    receiver.respond = () => ({ status: 200 });
    t.clock.advance(gap2);
    expect(await worker().drain()).toBe(1);
    expect(await delivery()).toMatchObject({ status: 'DELIVERED', attempts: 3, lastResponseCode: 200, lastError: null, nextAttemptAt: null });
    const got = receiver.on('/flaky');
    expect(got).toHaveLength(3);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1); // the same message id on every retry
    expect((await admin().get(`${base()}/${sub.identity}`)).body.failingSince).toBeNull();
    const metrics = await t.http().get('/metrics').set('Authorization', 'Token cms_test_bootstrap_admin_token_0123456789');
    expect(metrics.text).toMatch(/cms_webhook_deliveries_total\{outcome="retrying"\} [1-9]/);
    expect(metrics.text).toMatch(/cms_webhook_outbox_lag_seconds 0/);
  });

  it('gives up after 24 h and disables a subscription that failed for 3 days, in the activity feed', async () => {
    const T0 = new Date('2026-11-23T10:00:00Z');
    t.clock.set(T0);
    const sub = await subscribe('/dead', ['ENVIRONMENT_UPDATED']);
    receiver.respond = () => ({ status: 500 });
    const patchEnv = (d: string) => t.as(f.users.member.token).patch(`/api/v1/orgs/${f.orgSlug}/environments/${f.envSlug}`).send({ description: d });
    await patchEnv('one');
    let attempts = 0;
    const gaps: number[] = [];
    for (let i = 0; i < 20; i++) {
      attempts += await worker().drain();
      const [d] = (await admin().get(`${base()}/${sub.identity}/deliveries`)).body.content;
      if (!d.nextAttemptAt) break;
      gaps.push(Date.parse(d.nextAttemptAt) - t.clock.now().getTime());
      t.clock.set(new Date(d.nextAttemptAt));
    }
    const [d] = (await admin().get(`${base()}/${sub.identity}/deliveries`)).body.content;
    expect(d).toMatchObject({ status: 'FAILED', attempts: 8, nextAttemptAt: null, lastResponseCode: 500 });
    expect(attempts).toBe(8);
    // 5 s, 1 min, 5 min, 30 min, 2 h, 5 h, 10 h, each +-20 %: growing, and all within 24 h.
    expect(gaps).toHaveLength(7);
    gaps.forEach((g, i) => i > 0 && expect(g).toBeGreaterThan(gaps[i - 1]));
    expect(gaps.reduce((a, b) => a + b, 0)).toBeLessThan(24 * 3600_000);
    // Keep failing past 3 days: the subscription is disabled.
    for (let day = 0; day < 4; day++) {
      await patchEnv(`day ${day}`);
      await worker().drain();
      t.clock.advance(24 * 3600_000);
    }
    const after = (await admin().get(`${base()}/${sub.identity}`)).body;
    expect(after.enabled).toBe(false);
    expect(after.disabledReason).toMatch(/failed for 3 days/);
    const feed = await admin().get(`/api/v1/organisations/${f.orgSlug}/activity`);
    expect(feed.body.content.some((e: { type: string; message: string }) => e.type === 'WEBHOOK_DISABLED' && /system disabled webhook/.test(e.message))).toBe(true);
    // Disabled: nothing more is queued; a ping is refused; re-enabling clears the reason.
    expect((await admin().post(`${base()}/${sub.identity}/ping`)).status).toBe(409);
    // Deliveries queued before it was disabled do not wait forever: after 24 h they are FAILED.
    await t.db.query(
      `INSERT INTO webhook_deliveries (subscription_id, event_id, status, next_attempt_at, created_at)
       SELECT s.id, (SELECT max(id) FROM webhook_events), 'PENDING', $2, $2 FROM webhook_subscriptions s WHERE s.identity = $1`,
      [sub.identity, t.clock.now()],
    );
    t.clock.advance(25 * 3600_000);
    expect(await worker().drain()).toBe(0);
    const stale = (await admin().get(`${base()}/${sub.identity}/deliveries?sort=createdAt,desc`)).body.content[0];
    expect(stale).toMatchObject({ status: 'FAILED', attempts: 0, lastError: 'not delivered within 24 hours' });
    const enabled = await admin().patch(`${base()}/${sub.identity}`).send({ enabled: true });
    expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null, failingSince: null });
  });

  it('a slow receiver does not hold up the other subscriptions', async () => {
    await subscribe('/slow', ['ENVIRONMENT_UPDATED']);
    await subscribe('/fast', ['ENVIRONMENT_UPDATED']);
    receiver.respond = (r) => (r.path === '/slow' ? { status: 200, delayMs: 2000 } : { status: 200 });
    await t.as(f.users.member.token).patch(`/api/v1/orgs/${f.orgSlug}/environments/${f.envSlug}`).send({ description: 'x' });
    let drained = false;
    const draining = worker().drain().then((n) => ((drained = true), n));
    await waitFor(() => receiver.on('/fast').length === 1);
    // The fast subscription got its delivery while the slow one was still being answered (the drain waits for both).
    expect(drained).toBe(false);
    await draining;
    expect(receiver.on('/slow')).toHaveLength(1);
  });

  it('a request that rolls back emits nothing', async () => {
    await subscribe('/rollback', ['*']);
    await worker().drain(); // its own WEBHOOK_CREATED event
    receiver.received.length = 0;
    // Fails the transaction at COMMIT, after the audit, activity and outbox rows were written.
    await t.db.query(`
      CREATE OR REPLACE FUNCTION test_fail_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.details::text LIKE '%boom%' THEN RAISE EXCEPTION 'boom at commit'; END IF; RETURN NULL; END $$;
      DROP TRIGGER IF EXISTS test_fail_commit ON audit_events;
      CREATE CONSTRAINT TRIGGER test_fail_commit AFTER INSERT ON audit_events DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW EXECUTE FUNCTION test_fail_commit();`);
    try {
      const before = await t.db.query(`SELECT count(*)::int AS n FROM webhook_events WHERE organisation_id = $1`, [f.orgId]);
      const res = await t.as(f.users.member.token).patch(`/api/v1/orgs/${f.orgSlug}/environments/${f.envSlug}`).send({ description: 'boom' });
      expect(res.status).toBe(500);
      const after = await t.db.query(`SELECT count(*)::int AS n FROM webhook_events WHERE organisation_id = $1`, [f.orgId]);
      expect(after[0].n).toBe(before[0].n);
      expect(await worker().drain()).toBe(0);
      expect(receiver.on('/rollback')).toHaveLength(0);
      // The same change without the failure is delivered.
      expect((await t.as(f.users.member.token).patch(`/api/v1/orgs/${f.orgSlug}/environments/${f.envSlug}`).send({ description: 'fine' })).status).toBe(200);
      await worker().drain();
      expect(receiver.on('/rollback').map((r) => JSON.parse(r.body).type)).toEqual(['ENVIRONMENT_UPDATED']);
    } finally {
      await t.db.query(`DROP TRIGGER IF EXISTS test_fail_commit ON audit_events`);
    }
  });

  it('rotating the secret signs with both secrets for 24 h, then with the new one only', async () => {
    const sub = await subscribe('/rotate', ['WEBHOOK_PING']);
    const rotated = await admin().post(`${base()}/${sub.identity}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(sub.secret);
    expect(Date.parse(rotated.body.previousSecretExpiresAt) - Date.parse(rotated.body.secretRotatedAt)).toBe(24 * 3600_000);
    const [audit] = await t.db.query(`SELECT details FROM audit_events WHERE type = 'WEBHOOK_SECRET_ROTATED' AND referenced_entity_identity = $1`, [sub.identity]);
    expect(JSON.stringify(audit.details)).not.toContain(rotated.body.secret);

    const ping = await admin().post(`${base()}/${sub.identity}/ping`);
    expect(ping.status).toBe(200);
    expect(ping.body).toMatchObject({ eventType: 'WEBHOOK_PING', status: 'PENDING', attempts: 0 });
    await worker().drain();
    const [during] = receiver.on('/rotate');
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verify(sub.secret, during).type).toBe('WEBHOOK_PING');
    expect(verify(rotated.body.secret, during).type).toBe('WEBHOOK_PING');

    t.clock.advance(24 * 3600_000 + 1000);
    await admin().post(`${base()}/${sub.identity}/ping`);
    await worker().drain();
    const after = receiver.on('/rotate')[1];
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verify(rotated.body.secret, after).type).toBe('WEBHOOK_PING');
    expect(() => verify(sub.secret, after)).toThrow();
  });

  it('redelivers an event with the same webhook-id', async () => {
    const sub = await subscribe('/again', ['WEBHOOK_PING']);
    const ping = await admin().post(`${base()}/${sub.identity}/ping`);
    // Still pending: nothing to redeliver yet.
    expect((await admin().post(`${base()}/${sub.identity}/deliveries/${ping.body.identity}/redeliver`)).status).toBe(409);
    await worker().drain();
    const again = await admin().post(`${base()}/${sub.identity}/deliveries/${ping.body.identity}/redeliver`);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ eventId: ping.body.eventId, status: 'PENDING', attempts: 0 });
    expect(again.body.identity).not.toBe(ping.body.identity);
    await worker().drain();
    const got = receiver.on('/again');
    expect(got).toHaveLength(2);
    expect(got[0].headers['webhook-id']).toBe(got[1].headers['webhook-id']);
    expect((await admin().post(`${base()}/${sub.identity}/deliveries/00000000-0000-4000-8000-000000000000/redeliver`)).status).toBe(404);
    expect(await t.db.query(`SELECT 1 FROM audit_events WHERE type = 'WEBHOOK_DELIVERY_REDELIVERED' AND referenced_entity_identity = $1`, [sub.identity])).toHaveLength(1);
  });

  it('refuses at delivery time a URL whose DNS now points to an internal address', async () => {
    const policy = t.get(OutboundPolicy);
    const original = policy.resolver;
    let answer = '93.184.216.34';
    policy.resolver = async (host) => (host === 'hooks.example.test' ? [{ address: answer, family: 4 }] : original(host));
    try {
      const created = await admin().post(base()).send({ url: `http://hooks.example.test:${receiver.port}/rebound`, eventTypes: ['WEBHOOK_PING'] });
      expect(created.status).toBe(200);
      answer = '169.254.169.254';
      await admin().post(`${base()}/${created.body.identity}/ping`);
      await worker().drain();
      const [d] = (await admin().get(`${base()}/${created.body.identity}/deliveries`)).body.content;
      expect(d).toMatchObject({ status: 'PENDING', attempts: 1, lastResponseCode: null });
      expect(d.lastError).toMatch(/Refused by the outbound policy.*169\.254\.169\.254/);
      expect(receiver.on('/rebound')).toHaveLength(0);
      // Its retry (due again 4-6 s later) must not be claimed by the next test's drains.
      expect((await admin().delete(`${base()}/${created.body.identity}`)).status).toBe(204);
    } finally {
      policy.resolver = original;
    }
  });

  it('pings are audited, in the activity feed, and limited per subscription (429 with Retry-After)', async () => {
    const T0 = new Date(Date.now() + 3600_000);
    t.clock.set(T0);
    const sub = await subscribe('/ping-limit', ['WEBHOOK_PING']);
    const other = await subscribe('/ping-other', ['WEBHOOK_PING']);
    for (let i = 0; i < MAX_PINGS_PER_SUBSCRIPTION; i++) {
      expect((await admin().post(`${base()}/${sub.identity}/ping`)).status).toBe(200);
      t.clock.advance(1000);
    }
    const refused = await admin().post(`${base()}/${sub.identity}/ping`);
    expect(refused.status).toBe(429);
    expectErrorBody(refused.body, 429);
    expect(refused.body.message).toBe(
      `Webhook '${sub.identity}' was pinged ${MAX_PINGS_PER_SUBSCRIPTION} times in the last ${PING_WINDOW_SECONDS} s, the most allowed; retry in ${PING_WINDOW_SECONDS - MAX_PINGS_PER_SUBSCRIPTION} s.`,
    );
    expect(refused.headers['retry-after']).toBe(String(PING_WINDOW_SECONDS - MAX_PINGS_PER_SUBSCRIPTION));
    // The limit is the subscription's: another subscription of the organisation may still be pinged.
    expect((await admin().post(`${base()}/${other.identity}/ping`)).status).toBe(200);

    const audit = await t.db.query(
      `SELECT actor_username, details FROM audit_events WHERE type = 'WEBHOOK_PINGED' AND referenced_entity_identity = $1 ORDER BY id`,
      [sub.identity],
    );
    expect(audit).toHaveLength(MAX_PINGS_PER_SUBSCRIPTION);
    const deliveries = (await admin().get(`${base()}/${sub.identity}/deliveries?sort=createdAt,asc`)).body.content;
    expect(deliveries).toHaveLength(MAX_PINGS_PER_SUBSCRIPTION);
    expect(audit[0]).toEqual({ actor_username: f.users.admin.username, details: { delivery: { old: null, new: deliveries[0].identity }, eventId: { old: null, new: deliveries[0].eventId } } });
    const feed = await admin().get(`/api/v1/organisations/${f.orgSlug}/activity`);
    const pinged = feed.body.content.filter((e: { type: string }) => e.type === 'WEBHOOK_PINGED');
    expect(pinged).toHaveLength(MAX_PINGS_PER_SUBSCRIPTION + 1);
    expect(pinged[0].message).toBe(`${f.users.admin.username} pinged webhook ${receiver.url('/ping-other')}`);

    // Once the oldest ping is a window old, one more is allowed.
    t.clock.set(new Date(T0.getTime() + PING_WINDOW_SECONDS * 1000 + 1));
    expect((await admin().post(`${base()}/${sub.identity}/ping`)).status).toBe(200);
    expect((await admin().post(`${base()}/${sub.identity}/ping`)).status).toBe(429);
    await worker().drain();
    expect(receiver.on('/ping-limit')).toHaveLength(MAX_PINGS_PER_SUBSCRIPTION + 1);
  });

  it('claims organisations round-robin and at most WEBHOOK_DELIVERY_PER_ORGANISATION in flight each', async () => {
    const claims = t.get(WebhookDeliveryClaims);
    // A clean outbox: what earlier tests left pending must not take the slots counted here.
    await t.db.query(`UPDATE webhook_deliveries SET status = 'FAILED', next_attempt_at = NULL, lease_until = NULL WHERE status = 'PENDING'`);
    const busy = await createOrgFixture(t);
    const quiet = await createOrgFixture(t);
    // The busy organisation: 8 subscriptions, each with an event due before the quiet organisation's one.
    const busyHooks: string[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await t.as(busy.users.admin.token).post(`/api/v1/orgs/${busy.orgSlug}/webhooks`).send({ url: receiver.url(`/busy-${i}`), eventTypes: ['WEBHOOK_PING'] });
      busyHooks.push(res.body.identity);
    }
    const quietHook = (await t.as(quiet.users.admin.token).post(`/api/v1/orgs/${quiet.orgSlug}/webhooks`).send({ url: receiver.url('/quiet'), eventTypes: ['WEBHOOK_PING'] })).body.identity;
    const [{ now }] = await t.db.query(`SELECT now() AS now`);
    t.clock.set(new Date(new Date(now).getTime() + 3600_000));
    for (const h of busyHooks) expect((await t.as(busy.users.admin.token).post(`/api/v1/orgs/${busy.orgSlug}/webhooks/${h}/ping`)).status).toBe(200);
    t.clock.advance(1000);
    expect((await t.as(quiet.users.admin.token).post(`/api/v1/orgs/${quiet.orgSlug}/webhooks/${quietHook}/ping`)).status).toBe(200);
    t.clock.advance(1000);

    const orgOf = (rows: { org_slug: string }[]) => rows.map((r) => r.org_slug);
    // Two slots: the busy organisation's oldest, then the quiet one (its first turn), not the busy one's second.
    const first = await claims.claim(2, []);
    expect(orgOf(first)).toEqual([busy.orgSlug, quiet.orgSlug]);
    // With one of its attempts in flight, the busy organisation gets at most 3 more (WEBHOOK_DELIVERY_PER_ORGANISATION = 4).
    const second = await claims.claim(10, []);
    expect(orgOf(second)).toEqual([busy.orgSlug, busy.orgSlug, busy.orgSlug]);
    expect(await claims.claim(10, [])).toEqual([]);
    // The leases are what is counted: an attempt recorded frees its organisation's turn.
    await t.db.query(`UPDATE webhook_deliveries SET status = 'DELIVERED', lease_until = NULL WHERE id = $1`, [second[0].id]);
    expect(orgOf(await claims.claim(10, []))).toEqual([busy.orgSlug]);
    await t.db.query(`DELETE FROM webhook_subscriptions WHERE identity = ANY($1::uuid[])`, [[...busyHooks, quietHook]]);
  });
  // Last: a second app on the same database replaces the default data source of the process's registry, which
  // leaves this file's app unusable after the second one closes.
  it('two replicas deliver each event exactly once', async () => {
    // What is counted is this test's own deliveries, never the drains' attempt totals: a drain also attempts
    // whatever else is due in the database, e.g. a retry an earlier test left pending (that retry, due 4-6 s
    // after the earlier test, is how this test once counted 31 attempts for 30 events on a loaded machine).
    const other = await startTestApp(ENV, t.databaseUrl);
    try {
      const subs = [await subscribe('/shared-1', ['WEBHOOK_UPDATED']), await subscribe('/shared-2', ['WEBHOOK_UPDATED']), await subscribe('/shared-3', ['WEBHOOK_UPDATED'])];
      await worker().drain(); // nothing of theirs yet: WEBHOOK_CREATED is not subscribed
      // Ten changes, each one event delivered to the three subscriptions: 30 deliveries.
      for (let i = 0; i < 10; i++) expect((await admin().patch(`${base()}/${subs[0].identity}`).send({ description: `change ${i}` })).status).toBe(200);
      await Promise.all([worker().drain(), other.get(WebhookDeliveryWorker).drain()]);
      const ids = ['/shared-1', '/shared-2', '/shared-3'].flatMap((p) => receiver.on(p).map((r) => `${p} ${String(r.headers['webhook-id'])}`));
      expect(ids).toHaveLength(30);
      expect(new Set(ids).size).toBe(30);
      const rows = await t.db.query(
        `SELECT d.status, d.attempts FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id WHERE s.identity = ANY($1::uuid[])`,
        [subs.map((s) => s.identity)],
      );
      expect(rows).toHaveLength(30);
      expect(rows.every((r: { status: string; attempts: number }) => r.status === 'DELIVERED' && r.attempts === 1)).toBe(true);
    } finally {
      await other.close();
    }
  });
});
