import { Client } from 'pg';
import { NotifyListener } from '../../src/jobs/notify-listener';
import { MetricsService } from '../../src/metrics/metrics.service';
import { TcpProxy } from '../support/tcp-proxy';
import { startTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../webhooks/receiver';

/** Log lines a listener writes, by level. */
class RecordingLog {
  lines: { level: 'log' | 'warn' | 'debug'; fields: Record<string, unknown>; message: string }[] = [];
  log = (fields: Record<string, unknown>, message: string) => void this.lines.push({ level: 'log', fields, message });
  warn = (fields: Record<string, unknown>, message: string) => void this.lines.push({ level: 'warn', fields, message });
  debug = (fields: Record<string, unknown>, message: string) => void this.lines.push({ level: 'debug', fields, message });
  at(level: 'log' | 'warn' | 'debug') {
    return this.lines.filter((l) => l.level === level);
  }
}

async function gauge(metrics: MetricsService, name: string, listener: string): Promise<number | undefined> {
  const metric = metrics.registry.getSingleMetric(name);
  const values = (await metric?.get())?.values ?? [];
  return values.find((v) => v.labels.listener === listener)?.value;
}

describe('the LISTEN connection notices a silent network partition (issue 42, item 5)', () => {
  jest.setTimeout(60_000);
  let t: TestApp;
  let proxy: TcpProxy;
  let listener: NotifyListener;
  let notifier: Client;

  beforeAll(async () => {
    t = await startTestApp();
    const u = new URL(t.databaseUrl);
    proxy = new TcpProxy(u.hostname, Number(u.port));
    await proxy.start();
    notifier = new Client({ connectionString: t.databaseUrl });
    await notifier.connect();
  });
  afterAll(async () => {
    await listener?.close();
    await notifier.end();
    await proxy.stop();
    await t.close();
  });

  it('a blackholed connection is declared dead by its own NOTIFY probe; reconnects at once, then with backoff; one line for the loss and one for the recovery', async () => {
    const metrics = t.get(MetricsService);
    const log = new RecordingLog();
    const payloads: (string | undefined)[] = [];
    const events: string[] = [];
    listener = new NotifyListener(proxy.wrap(t.databaseUrl), {
      purpose: 'the probe test',
      metrics,
      logger: log as never,
      probeEveryMs: 100,
      probeTimeoutMs: 300,
      retryMinMs: 100,
      retryMaxMs: 400,
      connectTimeoutMs: 300,
      onListening: (reconnect) => events.push(reconnect ? 'listening again' : 'listening'),
      onLost: () => events.push('lost'),
    });
    listener.add('cms_probe_test', (payload) => payloads.push(payload));
    await waitFor(() => listener.isListening, 5000);
    expect(await gauge(metrics, 'cms_listen_up', 'the probe test')).toBe(1);
    await notifier.query(`SELECT pg_notify('cms_probe_test', 'before')`);
    await waitFor(() => payloads.includes('before'), 5000);

    // Nothing is forwarded and nothing is reset: only the probe can tell.
    proxy.freeze();
    await waitFor(() => events.includes('lost'), 5000);
    expect(listener.isListening).toBe(false);
    expect(await gauge(metrics, 'cms_listen_up', 'the probe test')).toBe(0);
    // Attempts go on (each one times out against the frozen proxy) while the partition lasts.
    await waitFor(() => log.at('debug').length >= 2, 10_000);

    await proxy.restore();
    await waitFor(() => events.includes('listening again'), 10_000);
    // Every subscriber is woken once without a payload: what was notified meanwhile is gone.
    expect(payloads).toContain(undefined);
    await notifier.query(`SELECT pg_notify('cms_probe_test', 'after')`);
    await waitFor(() => payloads.includes('after'), 5000);

    expect(events).toEqual(['listening', 'lost', 'listening again']);
    expect(log.at('warn').map((l) => l.fields.event)).toEqual(['listen_lost']);
    expect(log.at('warn')[0].message).toMatch(/its own NOTIFY did not come back within 300 ms/);
    expect(log.at('log').map((l) => l.fields.event)).toEqual(['listen_recovered']);
    expect(await gauge(metrics, 'cms_listen_up', 'the probe test')).toBe(1);
    expect(await gauge(metrics, 'cms_listen_last_outage_seconds', 'the probe test')).toBeGreaterThan(0);
  });
});
