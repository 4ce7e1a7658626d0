import { execFileSync } from 'child_process';
import { Client } from 'pg';
import { MetricsService } from '../../src/metrics/metrics.service';
import { FLEET_METRICS_APPLICATION_NAME } from '../../src/metrics/fleet-metrics-lock';
import { ADMIN_TOKEN, createTestDatabase, startTestApp, TestApp } from '../support/test-app';

/**
 * The scrape as Prometheus and promtool see it (issue 39, item 4): `promtool check metrics` finds nothing, no label
 * collides with a target label, both pools have their gauges, the fleet-wide gauges come from one replica only, and a
 * scrape needs no connection of the request pool.
 */

const TARGET_LABELS = ['job', 'instance', 'namespace', 'pod', 'container', 'service', 'endpoint'];
const FLEET_GAUGES = ['cms_clusters', 'cms_scheduled_upgrades', 'cms_webhook_outbox_lag_seconds', 'cms_reconciler_oldest_observation_age_seconds'];

/** Prometheus's credential: no database statement to authenticate it. */
const METRICS_TOKEN = 'f3a9c1d27be04e5a8c6d1f0b9e2a7c4d';

async function scrape(t: TestApp): Promise<string> {
  const res = await t.http().get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
  expect(res.status).toBe(200);
  return res.text;
}

/** The metric families of a scrape (its `# TYPE` lines). */
const families = (text: string) => new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));

describe('the metrics a scrape exports', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ DEMO_DATA: 'true', FLEET_METRICS_ENABLED: 'true', DATABASE_POOL_SIZE: '1', DATABASE_TIMEOUT_MS: '60000', METRICS_TOKEN });
  });
  afterAll(() => t.close());

  it('pass promtool check metrics', async () => {
    // Some traffic first, so the request histograms have series.
    for (const p of ['/api/v1/memberships', '/api/v1/orgs/acme/clusters', '/health/ready']) await t.http().get(p).set('Authorization', `Token ${ADMIN_TOKEN}`);
    const text = await scrape(t);
    for (const name of ['cms_http_request_duration_seconds', 'cms_nodejs_active_handles', ...FLEET_GAUGES]) expect(families(text)).toContain(name);
    let findings: string;
    try {
      findings = execFileSync(process.env.PROMTOOL || 'promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (e) {
      const err = e as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
      if (err.code === 'ENOENT') {
        throw new Error("promtool not found: install Debian's prometheus package (.ci/run does), or set PROMTOOL to a promtool binary");
      }
      findings = `${err.stdout ?? ''}${err.stderr ?? ''}`;
    }
    expect(findings.trim()).toBe('');
  });

  it('carry no label Prometheus sets on a target', () => {
    const service = t.get(MetricsService);
    const all = [...service.registry.getMetricsAsArray(), ...service.fleetRegistry.getMetricsAsArray()] as unknown as { name: string; labelNames?: string[] }[];
    const clashes = all.flatMap((m) => (m.labelNames ?? []).filter((l) => TARGET_LABELS.includes(l)).map((l) => `${m.name}{${l}}`));
    expect(clashes).toEqual([]);
    expect(all.find((m) => m.name === 'cms_job_passes_total')?.labelNames).toEqual(['loop', 'outcome']);
  });

  it("have both pools' gauges, and need no connection of the request pool", async () => {
    // The request pool's only connection is taken: a scrape that needed one would wait for it (DATABASE_TIMEOUT_MS).
    const held = t.db.createQueryRunner();
    await held.connect();
    try {
      const text = await scrape(t);
      for (const pool of ['request', 'background']) {
        for (const state of ['total', 'idle', 'waiting']) expect(text).toMatch(new RegExp(`^cms_db_pool_connections\\{pool="${pool}",state="${state}"\\} \\d+$`, 'm'));
      }
      expect(text).toMatch(/^cms_db_pool_connections\{pool="request",state="total"\} 1$/m);
      expect(text).toMatch(/^cms_db_pool_connections\{pool="request",state="waiting"\} 0$/m);
      // The fleet figures were read (on the background pool) during this scrape: the demo cluster is counted.
      expect(text).toMatch(/^cms_clusters\{status="[a-z_]+",provider="[a-z0-9_]+"\} 1$/m);
    } finally {
      await held.release();
    }
  });
});

describe('the fleet-wide gauges', () => {
  it('are exported by the one replica holding the fleet metrics lock, and by the next one when it stops', async () => {
    const url = await createTestDatabase();
    const a = await startTestApp({ FLEET_METRICS_ENABLED: 'true', METRICS_TOKEN }, url);
    const b = await startTestApp({ FLEET_METRICS_ENABLED: 'true', METRICS_TOKEN }, url);
    const api = await startTestApp({ FLEET_METRICS_ENABLED: 'false', METRICS_TOKEN }, url);
    let bClosed = false;
    try {
      const fleetOf = async (t: TestApp) => {
        const exported = families(await scrape(t));
        return FLEET_GAUGES.filter((g) => exported.has(g));
      };
      expect(await fleetOf(a)).toEqual(FLEET_GAUGES);
      expect(await fleetOf(b)).toEqual([]);
      expect(await fleetOf(api)).toEqual([]);
      // Their own metrics are there on every replica.
      expect(families(await scrape(b))).toContain('cms_http_request_duration_seconds');
      const db = new Client({ connectionString: url });
      await db.connect();
      try {
        const sessions = await db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, [
          FLEET_METRICS_APPLICATION_NAME,
        ]);
        // One session per competing replica (a and b); none for the API process.
        expect(sessions.rows[0].n).toBe(2);
      } finally {
        await db.end();
      }
      await a.close();
      expect(await fleetOf(b)).toEqual(FLEET_GAUGES);
      expect(await fleetOf(api)).toEqual([]);
      await b.close();
      bClosed = true;
    } finally {
      if (!bClosed) await b.close().catch(() => undefined);
      await api.close();
    }
  });
});
