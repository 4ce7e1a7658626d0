import { createOrgFixture, OrgFixture } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';
import { Receiver, waitFor } from './receiver';

/** The delivery loop runs by itself here (background jobs on; the other loops kept quiet). */
const POLL_MS = 300;
const PER_ORGANISATION = 4;
/** The noisy organisation's receiver: far slower than a poll interval, so waiting for it shows. */
const SLOW_MS = 4000;
const ENV = {
  BACKGROUND_JOBS_ENABLED: 'true',
  RECONCILE_INTERVAL_SECONDS: '600',
  SCHEDULER_INTERVAL_SECONDS: '0',
  OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false',
  OUTBOUND_ALLOWLIST: '127.0.0.1',
  WEBHOOK_POLL_INTERVAL_MS: String(POLL_MS),
  WEBHOOK_DELIVERY_CONCURRENCY: '16',
  WEBHOOK_DELIVERY_PER_ORGANISATION: String(PER_ORGANISATION),
  WEBHOOK_TIMEOUT_MS: String(SLOW_MS * 3),
};

describe('fair webhook delivery', () => {
  let t: TestApp;
  let receiver: Receiver;
  let slowInFlight = 0;
  let slowMaxInFlight = 0;
  /** Slow deliveries the receiver has finished answering. */
  let slowDone = 0;

  beforeAll(async () => {
    t = await startTestApp(ENV);
    receiver = await new Receiver().start();
    receiver.respond = (r) => {
      if (!r.path.startsWith('/slow')) return { status: 204 };
      slowInFlight++;
      slowMaxInFlight = Math.max(slowMaxInFlight, slowInFlight);
      setTimeout(() => {
        slowInFlight--;
        slowDone++;
      }, SLOW_MS);
      return { status: 204, delayMs: SLOW_MS };
    };
  });
  afterAll(async () => {
    await t.close();
    await receiver.stop();
  });

  const hook = async (f: OrgFixture, path: string) => {
    const res = await t.as(f.users.admin.token).post(`/api/v1/orgs/${f.orgSlug}/webhooks`).send({ url: receiver.url(path), eventTypes: ['WEBHOOK_PING'] });
    expect(res.status).toBe(200);
    return res.body.identity as string;
  };
  const ping = async (f: OrgFixture, identity: string) =>
    expect((await t.as(f.users.admin.token).post(`/api/v1/orgs/${f.orgSlug}/webhooks/${identity}/ping`)).status).toBe(200);

  /** Pings and waits until the receiver has the delivery; answers how many slow deliveries had finished by then. */
  async function deliver(f: OrgFixture, identity: string, path: string): Promise<number> {
    const before = receiver.on(path).length;
    await ping(f, identity);
    await waitFor(() => receiver.on(path).length > before, SLOW_MS * 10);
    return slowDone;
  }

  it("one organisation's 20 slow subscriptions (pinged twice each) do not make another's delivery wait for a slot", async () => {
    const noisy = await createOrgFixture(t);
    const quiet = await createOrgFixture(t);
    const quietHook = await hook(quiet, '/quiet');
    await deliver(quiet, quietHook, '/quiet');

    const noisyHooks: string[] = [];
    for (let i = 0; i < 20; i++) noisyHooks.push(await hook(noisy, `/slow-${i}`));
    for (const h of noisyHooks) await ping(noisy, h);
    for (const h of noisyHooks) await ping(noisy, h);
    // The noisy organisation's attempts are under way (each holds its slot for SLOW_MS).
    await waitFor(() => slowInFlight >= PER_ORGANISATION, SLOW_MS * 2);
    const doneBefore = slowDone;

    // The quiet organisation's delivery arrives while every noisy attempt still holds its slot: it took a slot of
    // its own instead of waiting for a slow receiver to free one (how soon is measured by the benchmarks).
    expect(await deliver(quiet, quietHook, '/quiet')).toBe(doneBefore);
    // The noisy organisation never had more than its share in flight, and keeps being served.
    await waitFor(() => receiver.received.filter((r) => r.path.startsWith('/slow')).length >= PER_ORGANISATION * 2, SLOW_MS * 4);
    expect(slowMaxInFlight).toBe(PER_ORGANISATION);
  }, 60_000);
});
