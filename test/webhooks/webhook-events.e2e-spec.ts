import { UpgradeSchedulerService } from '../../src/scheduler/upgrade-scheduler.service';
import { WebhookDeliveryWorker } from '../../src/webhooks/webhook-delivery.worker';
import { seedCluster, seedEnvironment, seedOrg } from '../observability/fixtures';
import { startTestApp, TestApp } from '../support/test-app';
import { createChannel, createCluster, createOrg, moveChannel } from '../upgrades/fixtures';
import { Receiver } from './receiver';

/** The events that exist for webhooks only: an upgrade's announcement, and alerts firing and resolving. */
describe('webhook-only events', () => {
  let t: TestApp;
  let receiver: Receiver;
  const types = (path: string) => receiver.on(path).map((r) => JSON.parse(r.body) as { type: string; subject?: string; data: Record<string, unknown> });

  beforeAll(async () => {
    t = await startTestApp({ OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false', OUTBOUND_ALLOWLIST: '127.0.0.1' });
    receiver = await new Receiver().start();
  });
  afterAll(async () => {
    t.clock.set(null);
    await receiver.stop();
    await t.close();
  });

  it('announces a scheduled upgrade (SCHEDULED_CLUSTER_UPGRADE_ANNOUNCED) when the scheduler notifies it', async () => {
    const owner = await t.createUser('announce-owner');
    const org = await createOrg(t, 'announce', [{ user: owner, role: 'OWNER' }]);
    const hook = await t.as(owner.token).post('/api/v1/orgs/announce/webhooks').send({ url: receiver.url('/announce'), eventTypes: ['SCHEDULED_CLUSTER_UPGRADE_ANNOUNCED'] });
    expect(hook.status).toBe(200);
    await createChannel(t, 'ch-announce', '1.31.5');
    await createCluster(t, org, { slug: 'web', version: '1.31.5', updateChannel: 'ch-announce', autoUpgrade: true });
    await moveChannel(t, 'ch-announce', '1.31.6');
    const scheduler = t.get(UpgradeSchedulerService);
    t.clock.set(new Date('2026-11-22T10:00:00Z'));
    await scheduler.runOnce(); // planned in the default window, 24 h ahead
    await scheduler.runOnce(); // within 24 h of the window: announced
    await t.get(WebhookDeliveryWorker).drain();
    const got = types('/announce');
    expect(got.map((e) => e.type)).toEqual(['SCHEDULED_CLUSTER_UPGRADE_ANNOUNCED']);
    expect(got[0]).toMatchObject({ subject: 'clusters/production/web', data: { organisation: { slug: 'announce' }, actor: { username: 'system' } } });
    expect(String(got[0].data.message)).toMatch(/will be upgraded from 1\.31\.5 to 1\.31\.6/);
  });

  it('sends ALERT_FIRING and ALERT_RESOLVED once per alert that changed', async () => {
    const org = await seedOrg(t, 'alerted');
    const env = await seedEnvironment(t, org.id, 'production');
    await seedCluster(t, org.id, env, 'web');
    const admin = t.as(org.users.ADMIN.token);
    expect((await admin.post('/api/v1/orgs/alerted/webhooks').send({ url: receiver.url('/alerts'), eventTypes: ['ALERT_FIRING', 'ALERT_RESOLVED'] })).status).toBe(200);
    const token = (await t.as(org.users.MEMBER.token).post('/api/v1/orgs/alerted/monitoring/production-web/alert-webhook-token')).body.token;
    const send = (status: 'firing' | 'resolved') =>
      t
        .http()
        .post('/api/v1/observability/production-web/alerts/webhook')
        .set('Authorization', `Bearer ${token}`)
        .send({
          version: '4',
          status,
          receiver: 'cms',
          alerts: [
            {
              status,
              labels: { alertname: 'NodeDown', severity: 'critical' },
              annotations: { summary: 'node down' },
              startsAt: '2026-11-22T09:00:00Z',
              endsAt: status === 'resolved' ? '2026-11-22T09:30:00Z' : '0001-01-01T00:00:00Z',
              fingerprint: 'f1',
            },
          ],
        });
    expect((await send('firing')).status).toBe(200);
    expect((await send('firing')).status).toBe(200); // the same notification again: nothing changed
    expect((await send('resolved')).status).toBe(200);
    await t.get(WebhookDeliveryWorker).drain();
    const got = types('/alerts');
    expect(got.map((e) => e.type)).toEqual(['ALERT_FIRING', 'ALERT_RESOLVED']);
    expect(got[0]).toMatchObject({
      subject: 'clusters/production/web',
      data: { message: 'Alert NodeDown is firing in monitoring tenant production-web', details: { fingerprint: 'f1', status: 'firing', labels: { alertname: 'NodeDown' } } },
    });
  });
});
