import { ConfigValidationError, loadConfig } from '../../src/config/app-config';
import { DEMO_IDENTITIES, DEMO_SLUGS, identityParameterExample } from '../../src/demo/demo-identities';
import { settle } from '../clusters/cluster-fixtures';
import { OpenApiParameter, prefill, prefilledUrl } from '../support/openapi-prefill';
import { ADMIN_TOKEN, startTestApp, TestApp } from '../support/test-app';

type Parameter = OpenApiParameter;
type Doc = { paths: Record<string, Record<string, { parameters?: Parameter[] }>> };

/**
 * A fresh install with demo data (DEMO_DATA=true; the default with the embedded database): the demo organisation
 * the document's examples name exists, owned by the bootstrap administrator, and every GET operation of the document
 * answers 2xx with only its pre-filled values (the in-process twin of `npm run test:browser`).
 */
describe('Demo data on a fresh install', () => {
  let t: TestApp;
  let doc: Doc;

  beforeAll(async () => {
    t = await startTestApp({ DEMO_DATA: 'true' });
    await settle(t); // the simulated driver provisions the demo cluster (background jobs are off in tests)
    doc = (await t.http().get('/v3/api-docs').expect(200)).body;
  });
  afterAll(() => t.close());

  it('creates acme with the fixed identities, owned by the bootstrap administrator, and cluster web reaches started', async () => {
    const admin = t.admin();
    const org = await admin.get(`/api/v1/organisations/${DEMO_SLUGS.organisation}`).expect(200);
    expect(org.body.identity).toBe(DEMO_IDENTITIES.organisation);
    const members = await admin.get(`/api/v1/organisations/acme/members`).expect(200);
    const list = members.body.content ?? members.body;
    expect(list).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ identity: DEMO_IDENTITIES.organisationMember, role: 'OWNER' }),
        expect.objectContaining({ identity: DEMO_IDENTITIES.colleagueMember, role: 'MEMBER' }),
      ]),
    );
    expect(list).toHaveLength(2);

    const cluster = await admin.get('/api/v1/orgs/acme/clusters/production/web').expect(200);
    expect(cluster.body).toMatchObject({ identity: DEMO_IDENTITIES.cluster, status: 'started', version: '1.31.6' });
    expect((await admin.get(`/admin/v1/clusters/${DEMO_IDENTITIES.cluster}`).expect(200)).body.slug).toBe('web');
    const pools = await admin.get('/api/v1/orgs/acme/clusters/production/web/pools').expect(200);
    expect(pools.body.map((p: { identity: string }) => p.identity)).toContain(DEMO_IDENTITIES.nodePool);

    const account = await admin.get(`/api/v1/orgs/acme/cloud-accounts/${DEMO_IDENTITIES.cloudAccount}`).expect(200);
    expect(account.body.displayName).toBe('Production account');
    const creds = await admin.get(`/api/v1/orgs/acme/cloud-accounts/${DEMO_IDENTITIES.cloudAccount}/credentials`).expect(200);
    const keys = creds.body.content.map((c: { identity: string; isPrimary: boolean }) => [c.identity, c.isPrimary]);
    expect(keys).toEqual(expect.arrayContaining([[DEMO_IDENTITIES.cloudCredentials, true], [DEMO_IDENTITIES.spareCloudCredentials, false]]));
    expect(keys).toHaveLength(2);
    await admin.get(`/api/v1/organisations/acme/maintenance-schedule/${DEMO_IDENTITIES.maintenanceSchedule}`).expect(200);
    const upgrade = await admin.get(`/admin/v1/scheduled-cluster-upgrades/${DEMO_IDENTITIES.scheduledClusterUpgrade}`).expect(200);
    expect(upgrade.body).toMatchObject({ toClusterVersion: '1.32.1', status: 'SCHEDULED' });
    const webhook = await admin.get(`/api/v1/orgs/acme/webhooks/${DEMO_IDENTITIES.webhook}`).expect(200);
    expect(webhook.body).toMatchObject({ enabled: false, url: 'https://hooks.example.com/cluster-events' });
    const policy = await admin.get(`/api/v1/orgs/acme/cluster-policies/${DEMO_IDENTITIES.clusterPolicy}`).expect(200);
    expect(policy.body.action).toBe('Warn');
    const platformPolicy = await admin.get(`/admin/v1/cluster-policies/${DEMO_IDENTITIES.platformPolicy}`).expect(200);
    expect(platformPolicy.body.action).toBe('Audit');
    const alerts = await admin.get(`/api/v1/orgs/acme/alerts/${DEMO_SLUGS.tenant}`).expect(200);
    expect(JSON.stringify(alerts.body)).toContain('KubePodCrashLooping');

    // Created through the services: audited as the administrator (the alert as the alert manager, i.e. system).
    const audit: { type: string; actor_username: string; referenced_entity_identity: string | null }[] = await t.db.query(
      `SELECT type, actor_username, referenced_entity_identity FROM audit_events WHERE organisation_slug = 'acme' ORDER BY id`,
    );
    const byType = Object.fromEntries(audit.map((a) => [a.type, a]));
    expect(byType.ORGANISATION_CREATED).toMatchObject({ actor_username: 'admin', referenced_entity_identity: DEMO_IDENTITIES.organisation });
    expect(byType.CLUSTER_CREATED).toMatchObject({ actor_username: 'admin', referenced_entity_identity: DEMO_IDENTITIES.cluster });
    expect(byType.WEBHOOK_CREATED).toMatchObject({ actor_username: 'admin', referenced_entity_identity: DEMO_IDENTITIES.webhook });
    expect(byType.ALERTS_RECEIVED).toMatchObject({ actor_username: 'system' });
    expect(Object.keys(byType)).toEqual(
      expect.arrayContaining(['ENVIRONMENT_CREATED', 'CLOUD_ACCOUNT_CREATED', 'CLOUD_CREDENTIALS_CREATED', 'MAINTENANCE_SCHEDULE_CREATED', 'SCHEDULED_CLUSTER_UPGRADE_CREATED', 'CLUSTER_POLICY_CREATED']),
    );
  });

  it('shows a month of usage, its statement and a budget (issue 41)', async () => {
    const admin = t.admin();
    const list = await admin.get('/api/v1/orgs/acme/statements').expect(200);
    const [current, last] = list.body.content;
    expect(current.status).toBe('OPEN');
    const now = new Date();
    // Closed at the first start, unless that was within the grace hour after the month ended.
    if (now.getTime() - Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) > 3_600_000) expect(last.status).toBe('CLOSED');
    const statement = await admin.get(`/api/v1/orgs/acme/statements/${last.period}`).expect(200);
    const days = (Date.parse(statement.body.periodEnd) - Date.parse(statement.body.periodStart)) / 86_400_000;
    expect(statement.body.lines.map((l: Record<string, string>) => [l.resource, l.nodePoolName, l.unitPrice, l.quantity])).toEqual([
      ['CONTROL_PLANE', null, '0.09', `${days * 24}.000000`],
      ['NODES', 'system', '0.09', `${days * 24 * 2}.000000`],
      ['NODES', 'workers', '0.18', `${10 * 24 * 4 + (days - 10) * 24 * 2}.000000`],
    ]);
    expect(Number(statement.body.totals.billedCost)).toBeGreaterThan(0);
    const usage = await admin.get('/api/v1/orgs/acme/usage?groupBy=nodeType').expect(200);
    expect(usage.body.groups.map((g: { nodeType: string | null }) => g.nodeType)).toEqual([null, 'm5.large', 'm5.xlarge']);
    const budget = await admin.get(`/api/v1/orgs/acme/budgets/${DEMO_IDENTITIES.budget}`).expect(200);
    expect(budget.body).toMatchObject({ name: 'Monthly platform spend', amount: '500.00', currency: 'EUR' });
    await admin.get(`/admin/v1/price-book/${DEMO_IDENTITIES.priceBookEntry}`).expect(200);
  });

  it("the demo webhook sends nothing (disabled: no ping), and the API's own creates still check the address", async () => {
    const ping = await t.admin().post(`/api/v1/orgs/acme/webhooks/${DEMO_IDENTITIES.webhook}/ping`);
    expect(ping.status).toBe(409);
    const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM webhook_deliveries`);
    expect(n).toBe(0);
    // Saving a webhook does not resolve its host (every delivery does, which DNS rebinding needs anyway): a first
    // contact without DNS works (test/unit/outbound-policy.spec.ts: an internal address literal is refused at once).
    const viaApi = await t
      .admin()
      .post('/api/v1/orgs/acme/webhooks')
      .send({ url: 'https://no-such-host.invalid/hook', eventTypes: ['CLUSTER_STATUS_CHANGED'], enabled: false });
    expect(viaApi.status).toBe(200);
    expect((await t.admin().delete(`/api/v1/orgs/acme/webhooks/${viaApi.body.identity}`)).status).toBe(204);
  });

  it('the document uses the demo identities as the example of every UUID path parameter', () => {
    const missing: string[] = [];
    // Every one is pre-filled; deliveryIdentity names no delivery (a fresh install has delivered nothing), so the
    // redeliver answers 404 saying so (test/browser's SENSIBLE_4XX).
    const deliberate = new Set<string>();
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const p of op.parameters ?? []) {
          if (p.in !== 'path' || deliberate.has(p.name)) continue;
          if (p.schema?.format === 'uuid' || /Identity$|^identity$|^nodePoolId$/.test(p.name)) {
            if (prefill(p) === undefined || prefill(p) !== identityParameterExample(path, p.name)) missing.push(`${method} ${path}: ${p.name}=${String(prefill(p))}`);
          } else if (prefill(p) === undefined) missing.push(`${method} ${path}: ${p.name} has no example`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('every GET operation answers 2xx with only its pre-filled values, as the platform administrator', async () => {
    const failures: string[] = [];
    let tried = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      const op = ops.get;
      if (!op) continue;
      const url = prefilledUrl(path, op.parameters ?? []);
      const res = await t.as(ADMIN_TOKEN).get(url);
      tried++;
      if (res.status < 200 || res.status > 299) failures.push(`GET ${url}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    }
    expect(failures).toEqual([]);
    expect(tried).toBeGreaterThan(60);
  });

  it('platform administrators get 404 for an organisation that does not exist; others still 403', async () => {
    const missing = await t.admin().get('/api/v1/orgs/no-such-org/clusters');
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe("Organisation 'no-such-org' does not exist.");
    const user = await t.createUser('outsider');
    const outsider = await t.as(user.token).get('/api/v1/orgs/no-such-org/clusters');
    expect(outsider.status).toBe(403);
    expect((await t.as(user.token).get('/api/v1/orgs/acme/clusters')).status).toBe(403);
  });

  it("the examples' delete targets can be changed and deleted: the colleague's membership and the old key, not the owner's or the primary", async () => {
    const admin = t.admin();
    const member = await admin.patch(`/api/v1/organisations/acme/members/${DEMO_IDENTITIES.colleagueMember}`).send({ role: 'ADMIN' });
    expect(member.status).toBe(200);
    const owner = await admin.patch(`/api/v1/organisations/acme/members/${DEMO_IDENTITIES.organisationMember}`).send({ role: 'ADMIN' });
    expect(owner.status).toBe(409);
    const primary = await admin.delete(`/api/v1/orgs/acme/cloud-accounts/${DEMO_IDENTITIES.cloudAccount}/credentials/${DEMO_IDENTITIES.cloudCredentials}`);
    expect(primary.status).toBe(409);
    expect(String((await admin.delete(`/api/v1/orgs/acme/cloud-accounts/${DEMO_IDENTITIES.cloudAccount}/credentials/${DEMO_IDENTITIES.spareCloudCredentials}`)).status)).toMatch(/^20[04]$/);
    expect(String((await admin.delete(`/api/v1/organisations/acme/members/${DEMO_IDENTITIES.colleagueMember}`)).status)).toMatch(/^20[04]$/);
  });

  it('is created once: a second start on the same database adds nothing (a marker row records it)', async () => {
    const count = async () =>
      (await t.db.query(`SELECT (SELECT count(*) FROM organisations)::int AS orgs, (SELECT count(*) FROM audit_events)::int AS audit, (SELECT count(*) FROM clusters)::int AS clusters`))[0];
    const before = await count();
    expect(await t.db.query(`SELECT name FROM start_up_markers`)).toEqual([{ name: 'demo-data' }]);
    const again = await startTestApp({ DEMO_DATA: 'true' }, t.databaseUrl);
    try {
      expect(await count()).toEqual(before);
      // A resource created afterwards gets a random identity: nothing stays pinned.
      const env = await again.admin().post('/api/v1/orgs/acme/environments').send({ name: 'staging' }).expect(200);
      expect(Object.values(DEMO_IDENTITIES)).not.toContain(env.body.identity);
    } finally {
      await again.close();
    }
  });
});

describe('Demo data settings', () => {
  it('on by default with the embedded database, off with DATABASE_URL unless DEMO_DATA=true, and checked', () => {
    expect(loadConfig({}).demoData).toBe(true);
    expect(loadConfig({ DEMO_DATA: 'false' }).demoData).toBe(false);
    expect(loadConfig({ DATABASE_URL: 'postgres://db/x' }).demoData).toBe(false);
    expect(loadConfig({ DATABASE_URL: 'postgres://db/x', DEMO_DATA: 'true' }).demoData).toBe(true);
    expect(() => loadConfig({ DEMO_DATA: 'perhaps' })).toThrow(ConfigValidationError);
    expect(() => loadConfig({ DEMO_DATA: 'perhaps' })).toThrow(/DEMO_DATA/);
  });

  it('tests (DATABASE_URL) start without it: no organisation on a fresh database', async () => {
    const t = await startTestApp();
    try {
      const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM organisations`);
      expect(n).toBe(0);
      expect((await t.admin().get('/api/v1/orgs/acme/clusters')).status).toBe(404);
    } finally {
      await t.close();
    }
  });
});
