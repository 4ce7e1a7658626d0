import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { BACKGROUND_DATA_SOURCE } from '../../src/database/background-pool';
import { buildDataSourceOptions, runMigrationsLocked } from '../../src/database/data-source-options';
import { MetricsService } from '../../src/metrics/metrics.service';
import { RETENTION_SQL } from '../../src/retention/retention-tables';
import { RetentionResult, RetentionService } from '../../src/retention/retention.service';
import { seedCluster, SeededOrg, seedEnvironment, seedOrg } from '../observability/fixtures';
import { createTestDatabase, startTestApp, TestApp } from '../support/test-app';

const DAY = 86_400_000;

/** Rows of every retained table, `age` days old, tagged so the test counts only its own. */
class Rows {
  constructor(
    private readonly t: TestApp,
    private readonly orgId: number,
    private readonly tenant: number,
    private readonly subscription: number,
  ) {}

  private alerts = 0;

  private at(ageDays: number, i = 0): Date {
    return new Date(this.t.clock.now().getTime() - ageDays * DAY - i * 1000);
  }

  async audit(tag: string, ageDays: number, n = 1): Promise<void> {
    for (let i = 0; i < n; i++) {
      await this.t.db.query(
        `INSERT INTO audit_events (type, actor_username, organisation_id, environment_slug, cluster_slug, created_at)
         VALUES ($1, 'retention', $2, 'production', 'web', $3)`,
        [tag, this.orgId, this.at(ageDays, i)],
      );
    }
  }

  async activity(tag: string, ageDays: number, n = 1): Promise<void> {
    for (let i = 0; i < n; i++) {
      await this.t.db.query(
        `INSERT INTO activity_events (organisation_id, type, message, actor_username, created_at) VALUES ($1, $2, 'm', 'retention', $3)`,
        [this.orgId, tag, this.at(ageDays, i)],
      );
    }
  }

  /** An idempotency key (tagged by its key) stored `ageDays` ago. */
  async idempotencyKey(tag: string, ageDays: number, n = 1): Promise<void> {
    for (let i = 0; i < n; i++) {
      await this.t.db.query(
        `INSERT INTO idempotency_keys (caller, idempotency_key, method, path, request_hash, status, answer, created_at)
         VALUES ('retention', $1, 'POST', '/x', 'h', 200, 'sealed', $2)`,
        [`${tag}-${i}-${ageDays}`, this.at(ageDays, i)],
      );
    }
  }

  /** A resolved alert that ended `ageDays` ago (started a day earlier), or a firing one that started then. */
  async alert(tag: string, ageDays: number, status: 'resolved' | 'firing' = 'resolved', n = 1): Promise<void> {
    for (let i = 0; i < n; i++) {
      const ended = this.at(ageDays, i);
      await this.t.db.query(
        `INSERT INTO tenant_alerts (tenant_id, fingerprint, status, labels, starts_at, ends_at, created_at, modified_at)
         VALUES ($1, $2, $3, $4::jsonb, $5, $6, $5, $5)`,
        [this.tenant, `${tag}-${++this.alerts}`, status, JSON.stringify({ tag }), new Date(ended.getTime() - DAY), status === 'resolved' ? ended : null],
      );
    }
  }

  /** A webhook event with one delivery per given status. */
  async webhook(tag: string, ageDays: number, statuses: ('PENDING' | 'DELIVERED' | 'FAILED')[], n = 1): Promise<void> {
    for (let i = 0; i < n; i++) {
      const at = this.at(ageDays, i);
      const [event] = await this.t.db.query(
        `INSERT INTO webhook_events (organisation_id, type, source, data, created_at) VALUES ($1, $2, '/test', '{}'::jsonb, $3) RETURNING id`,
        [this.orgId, tag, at],
      );
      for (const status of statuses) {
        await this.t.db.query(
          `INSERT INTO webhook_deliveries (subscription_id, event_id, status, next_attempt_at, created_at) VALUES ($1, $2, $3, $4, $5)`,
          [this.subscription, event.id, status, status === 'PENDING' ? new Date(at.getTime() + 365 * DAY) : null, at],
        );
      }
    }
  }
}

async function rowsFor(t: TestApp, slug: string): Promise<Rows & { org: SeededOrg }> {
  const org = await seedOrg(t, slug);
  const env = await seedEnvironment(t, org.id, 'production');
  const { tenantId } = await seedCluster(t, org.id, env, 'web');
  // Disabled: nothing tries to deliver the test's pending deliveries.
  const [sub] = await t.db.query(
    `INSERT INTO webhook_subscriptions (organisation_id, url, event_types, enabled, secret_ciphertext, created_by, created_at, modified_at)
     VALUES ($1, 'https://hooks.example.com/x', ARRAY['*'], false, 'x', 'test', now(), now()) RETURNING id`,
    [org.id],
  );
  return Object.assign(new Rows(t, org.id, tenantId!, Number(sub.id)), { org });
}

/** Tagged rows left per table. */
async function left(t: TestApp, tag: string) {
  const one = async (sql: string) => Number((await t.db.query(sql, [tag]))[0].n);
  return {
    audit_events: await one(`SELECT count(*) AS n FROM audit_events WHERE type = $1`),
    activity_events: await one(`SELECT count(*) AS n FROM activity_events WHERE type = $1`),
    tenant_alerts: await one(`SELECT count(*) AS n FROM tenant_alerts WHERE labels->>'tag' = $1`),
    webhook_events: await one(`SELECT count(*) AS n FROM webhook_events WHERE type = $1`),
    webhook_deliveries: await one(`SELECT count(*) AS n FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE e.type = $1`),
    idempotency_keys: await one(`SELECT count(*) AS n FROM idempotency_keys WHERE idempotency_key LIKE $1 || '-%'`),
  };
}

async function deletedMetric(t: TestApp): Promise<Record<string, number>> {
  const { values } = await t.get(MetricsService).retentionDeletedRows.get();
  return Object.fromEntries(values.map((v) => [String(v.labels.table), v.value]));
}

const none: RetentionResult = { audit_events: 0, activity_events: 0, tenant_alerts: 0, webhook_events: 0, webhook_deliveries: 0, idempotency_keys: 0 };

describe('retention of audit, activity, resolved alerts and the webhook outbox', () => {
  describe('default retention periods', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp();
    });
    afterAll(() => t?.close());

    it('deletes rows older than each cutoff, keeps newer ones and every pending webhook delivery, and counts them', async () => {
      const r = await rowsFor(t, 'retention-defaults');
      await r.audit('OLD', 401, 3);
      await r.audit('NEW', 399, 2);
      await r.activity('OLD', 91, 4);
      await r.activity('NEW', 89, 2);
      await r.alert('OLD', 31, 'resolved', 2);
      await r.alert('NEW', 29, 'resolved', 1);
      await r.alert('NEW', 300, 'firing', 1); // firing alerts never expire, however old
      await r.webhook('OLD', 31, ['DELIVERED', 'FAILED'], 2);
      await r.webhook('OLD', 31, [], 1); // no subscription matched
      await r.webhook('NEW', 29, ['DELIVERED'], 1);
      await r.webhook('PENDING', 60, ['PENDING', 'DELIVERED'], 1); // a pending delivery keeps its event and siblings
      await r.webhook('PENDING', 400, ['PENDING'], 1);
      await r.idempotencyKey('OLD', 1.05, 2); // idempotency keys are kept 24 h
      await r.idempotencyKey('NEW', 0.95, 1);
      expect(await deletedMetric(t)).toEqual(none);

      const deleted = await t.get(RetentionService).runOnce();
      expect(deleted).toEqual({ audit_events: 3, activity_events: 4, tenant_alerts: 2, webhook_events: 3, webhook_deliveries: 4, idempotency_keys: 2 });
      expect(await left(t, 'OLD')).toEqual(none);
      expect(await left(t, 'NEW')).toEqual({
        audit_events: 2,
        activity_events: 2,
        tenant_alerts: 2,
        webhook_events: 1,
        webhook_deliveries: 1,
        idempotency_keys: 1,
      });
      expect(await left(t, 'PENDING')).toEqual({ ...none, webhook_events: 2, webhook_deliveries: 3 });
      expect(await deletedMetric(t)).toEqual(deleted);

      // Nothing more to do; the metric stays.
      expect(await t.get(RetentionService).runOnce()).toEqual(none);
      const text = (await t.admin().get('/metrics')).text;
      expect(text).toContain('cms_retention_deleted_rows_total{table="audit_events"} 3');
      expect(text).toContain('cms_retention_deleted_rows_total{table="webhook_deliveries"} 4');

      // Once the pending delivery has been delivered, its event goes too; time moves on and the NEW rows expire.
      await t.db.query(
        `UPDATE webhook_deliveries SET status = 'DELIVERED' WHERE status = 'PENDING' AND event_id IN (SELECT id FROM webhook_events WHERE type = 'PENDING')`,
      );
      t.clock.advance(2 * DAY);
      expect(await t.get(RetentionService).runOnce()).toEqual({
        audit_events: 2,
        activity_events: 2,
        tenant_alerts: 1,
        webhook_events: 3,
        webhook_deliveries: 4,
        idempotency_keys: 1,
      });
      expect(await left(t, 'NEW')).toEqual({ ...none, tenant_alerts: 1 }); // the firing alert
      expect(await left(t, 'PENDING')).toEqual(none);
    });
  });

  it('keeps everything forever with 0', async () => {
    const t = await startTestApp({
      AUDIT_RETENTION_DAYS: '0',
      ACTIVITY_RETENTION_DAYS: '0',
      RESOLVED_ALERT_RETENTION_DAYS: '0',
      WEBHOOK_EVENT_RETENTION_DAYS: '0',
    });
    try {
      const r = await rowsFor(t, 'retention-forever');
      await r.audit('OLD', 5000);
      await r.activity('OLD', 5000);
      await r.alert('OLD', 5000);
      await r.webhook('OLD', 5000, ['DELIVERED']);
      expect(await t.get(RetentionService).runOnce()).toEqual(none);
      expect(await left(t, 'OLD')).toEqual({ ...none, audit_events: 1, activity_events: 1, tenant_alerts: 1, webhook_events: 1, webhook_deliveries: 1 });
      // The alert webhook's own pruning of its tenant follows the same setting.
      const org = r.org;
      const token = (await t.as(org.users.MEMBER.token).post(`/api/v1/orgs/${org.slug}/monitoring/production-web/alert-webhook-token`)).body.token;
      await t
        .http()
        .post('/api/v1/observability/production-web/alerts/webhook')
        .set('Authorization', `Bearer ${token}`)
        .send({
          version: '4',
          status: 'firing',
          receiver: 'service',
          groupKey: '{}',
          alerts: [{ status: 'firing', labels: { alertname: 'A' }, annotations: {}, startsAt: '2026-11-22T10:00:00Z', fingerprint: 'f1' }],
        })
        .expect(200);
      expect((await left(t, 'OLD')).tenant_alerts).toBe(1);
    } finally {
      await t.close();
    }
  });

  it('stops between batches when the app shuts down, after the batch in flight', async () => {
    const t = await startTestApp({ RETENTION_BATCH_SIZE: '5' });
    const r = await rowsFor(t, 'retention-shutdown');
    await r.audit('STOP', 500, 100);
    const pass = t.get(RetentionService).runOnce();
    await new Promise((resolve) => setTimeout(resolve, 250));
    const [{ n: during }] = await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE type = 'STOP'`);
    const check = await startTestApp({}, t.databaseUrl); // to look at the database once the first app is gone
    try {
      await t.close(); // waits for the pass to leave off after its current batch
      const deleted = await pass;
      expect(deleted.audit_events).toBeGreaterThan(0);
      expect(deleted.audit_events).toBeLessThan(100);
      expect(deleted.audit_events % 5).toBe(0); // whole batches only
      const [{ n: after }] = await check.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE type = 'STOP'`);
      expect(after).toBe(100 - deleted.audit_events);
      expect(after).toBeLessThanOrEqual(during);
    } finally {
      await check.close();
    }
  });

  describe('batches and replicas', () => {
    let a: TestApp;
    let b: TestApp;
    beforeAll(async () => {
      const url = await createTestDatabase();
      a = await startTestApp({ RETENTION_BATCH_SIZE: '5' }, url);
      b = await startTestApp({ RETENTION_BATCH_SIZE: '5' }, url);
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
    });

    it('deletes in batches of RETENTION_BATCH_SIZE until a batch is short', async () => {
      const r = await rowsFor(a, 'retention-batches');
      await r.audit('BATCH', 500, 12);
      await r.audit('KEEP', 10, 3);
      const counts: number[] = [];
      // Retention runs on the background pool.
      const background = a.app.get<DataSource>(BACKGROUND_DATA_SOURCE);
      const original = background.query.bind(background);
      const spy = jest.spyOn(background, 'query').mockImplementation(async (...args: Parameters<typeof original>) => {
        const result = await original(...args);
        if (args[0] === RETENTION_SQL.audit_events) counts.push((result as [unknown, number])[1]);
        return result;
      });
      try {
        const deleted = await a.get(RetentionService).runOnce();
        expect(deleted.audit_events).toBe(12);
      } finally {
        spy.mockRestore();
      }
      expect(counts).toEqual([5, 5, 2]);
      expect(await left(a, 'BATCH')).toEqual(none);
      expect((await left(a, 'KEEP')).audit_events).toBe(3);
    });

    it('two instances on one database running at once delete each row once, without errors', async () => {
      const r = await rowsFor(a, 'retention-replicas');
      await r.audit('R', 500, 60);
      await r.activity('R', 500, 40);
      await r.alert('R', 500, 'resolved', 30);
      await r.webhook('R', 500, ['DELIVERED', 'FAILED'], 25);
      const before = await left(a, 'R');
      const results = await Promise.all([a.get(RetentionService).runOnce(), b.get(RetentionService).runOnce()]);
      const sum = Object.fromEntries(Object.keys(none).map((k) => [k, results[0][k as keyof RetentionResult] + results[1][k as keyof RetentionResult]]));
      expect(sum).toEqual(before);
      expect(await left(a, 'R')).toEqual(none);
      // Each replica's metric counts its own deletions; together they count each row once.
      const total = (x: RetentionResult) => Object.values(x).reduce((s, n) => s + n, 0);
      expect(total(results[0])).toBeGreaterThan(0);
      expect(total(results[1])).toBeGreaterThan(0);
      expect(await deletedMetric(b)).toEqual(results[1]);
      expect(await deletedMetric(a)).toEqual({ ...results[0], audit_events: results[0].audit_events + 12 }); // + the batch test's
    });
  });

  it('two replicas migrating a fresh database at once both start (the indexes are built CONCURRENTLY)', async () => {
    // A replica waiting for the migration lock inside one statement held a snapshot that CREATE INDEX
    // CONCURRENTLY waits for: it failed (deadlock or timeout). The lock is now polled.
    const server = process.env.CMS_TEST_SERVER_URL!;
    const name = `cms_t_migrate_${process.pid}`;
    const admin = new Client({ connectionString: server });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(server);
    url.pathname = `/${name}`;
    const replicas = [new DataSource(buildDataSourceOptions(url.toString())), new DataSource(buildDataSourceOptions(url.toString()))];
    try {
      await Promise.all(replicas.map((ds) => ds.initialize()));
      await Promise.all(replicas.map((ds) => runMigrationsLocked(ds)));
      const indexes = await replicas[0].query(
        `SELECT indexname FROM pg_indexes JOIN pg_class c ON c.relname = indexname JOIN pg_index i ON i.indexrelid = c.oid
          WHERE i.indisvalid AND indexname IN ('audit_events_created_idx', 'activity_events_created_idx', 'tenant_alerts_resolved_ends_idx', 'audit_events_cluster_slug_idx')
          ORDER BY 1`,
      );
      expect(indexes.map((r: { indexname: string }) => r.indexname)).toEqual([
        'activity_events_created_idx',
        'audit_events_cluster_slug_idx',
        'audit_events_created_idx',
        'tenant_alerts_resolved_ends_idx',
      ]);
    } finally {
      await Promise.all(replicas.map((ds) => (ds.isInitialized ? ds.destroy() : undefined)));
      await admin.query(`DROP DATABASE IF EXISTS ${name}`);
      await admin.end();
    }
  });
});
