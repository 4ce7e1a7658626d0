import { PassThrough } from 'stream';
import { ClusterDriverResolver } from '../../src/cluster-drivers/cluster-driver-resolver';
import type { ApplyRequest } from '../../src/cluster-drivers/driver-contract';
import { SecretBox } from '../../src/common/secret-box';
import { ADMIN_TOKEN, startTestApp, TestApp } from '../support/test-app';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, reconciler, settle } from '../clusters/cluster-fixtures';
import { RecordingDriver } from './recording-driver';

const CANARY_ID = 'AKIA-CANARY-7f3e0c51d9';
const CANARY_SECRET = 'canary-secret-4b9d2e7a1f6c8305';

/**
 * The cloud account's credentials reach the driver's request and nowhere else (issue 38): a cluster goes through its
 * whole life (create, a pool change, a terminal driver error, stop, start, delete) with a canary secret in its
 * account's primary credentials; the canary must be in the driver's requests, and in no log line (every level),
 * audit row, activity event, webhook event, metrics text, API answer (error answers included) or other table.
 */
describe('credentials canary', () => {
  let t: TestApp;
  let f: OrgFixture;
  const logs: string[] = [];
  const answers: string[] = [];
  let driver: RecordingDriver;

  beforeAll(async () => {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    t = await startTestApp({ LOG_LEVEL: 'trace' }, undefined, stream);
    driver = new RecordingDriver();
    jest.spyOn(t.app.get<ClusterDriverResolver>(ClusterDriverResolver as never), 'resolve').mockResolvedValue(driver);
    f = await createOrgFixture(t);
    // The account's primary credentials, sealed as the credentials API seals them.
    const [cred] = await t.db.query(
      `SELECT c.id, c.identity FROM cloud_credentials c JOIN cloud_accounts a ON a.primary_credentials_id = c.id WHERE a.identity = $1`,
      [f.accountIdentity],
    );
    const sealed = t.get(SecretBox).seal(JSON.stringify({ accessKeyId: CANARY_ID, accessKeySecret: CANARY_SECRET }), cred.identity);
    await t.db.query(`UPDATE cloud_credentials SET secret_ciphertext = $2 WHERE id = $1`, [cred.id, sealed]);
    // A subscription to every event: the webhook outbox holds each event's payload.
    await t.db.query(
      `INSERT INTO webhook_subscriptions (organisation_id, url, event_types, secret_ciphertext, created_by, created_at, modified_at)
       VALUES ($1, 'https://hooks.example.com/cms', '{*}', 'v1.x.y.z', 'test', now(), now())`,
      [f.orgId],
    );
  });
  afterAll(() => t.close());

  /** Every answer of the test is kept (status and body) to be searched. */
  const call = async (method: 'get' | 'post' | 'put' | 'patch' | 'delete', path: string, body?: object, token = f.users.member.token) => {
    const req = t.as(token)[method](path);
    const res = body ? await req.send(body) : await req;
    answers.push(`${method} ${path} ${res.status} ${res.text}`);
    return res;
  };

  it('reaches the driver in the request, and appears nowhere else', async () => {
    const path = `${clustersPath(f)}/canary`;
    expect((await call('post', clustersPath(f), clusterBody(f, { name: 'canary' }))).status).toBe(200);
    await settle(t);
    const pools = (await call('get', `${path}/pools`)).body;
    expect((await call('put', `${path}/pools/${pools[0].identity}`, { name: 'workers', nodeSize: 'm5.large', minSize: 3, maxSize: 4 })).status).toBe(200);
    await settle(t);
    // A terminal error: its message is shown (it must not carry the secret, and the service adds none).
    driver.failWith = (req) =>
      req.cluster.nodePools.some((p) => p.minSize === 5) ? { error: { class: 'terminal', code: 'AccessDenied', message: 'The provider refused the credentials' } } : null;
    expect((await call('put', `${path}/pools/${pools[0].identity}`, { name: 'workers', nodeSize: 'm5.large', minSize: 5, maxSize: 6 })).status).toBe(200);
    await reconciler(t).runOnce();
    driver.failWith = null;
    expect((await call('put', `${path}/pools/${pools[0].identity}`, { name: 'workers', nodeSize: 'm5.large', minSize: 2, maxSize: 4 })).status).toBe(200);
    await settle(t);
    expect((await call('patch', path, { status: 'stopping' })).status).toBe(200);
    await settle(t);
    expect((await call('patch', path, { status: 'starting' })).status).toBe(200);
    await settle(t);
    // Error answers: a refused change and an unknown pool.
    expect((await call('patch', path, { version: '9.9.9' })).status).toBe(400);
    expect((await call('put', `${path}/pools/00000000-0000-4000-8000-000000000000`, { name: 'x', nodeSize: 'm5.large', minSize: 1, maxSize: 1 })).status).toBe(404);
    // Everything a user or operator can read about the cluster.
    for (const p of [path, `${path}?includeDetails=true`, `${path}/pools`, `${clustersPath(f)}`, `/api/v1/orgs/${f.orgSlug}/audit-events`]) await call('get', p);
    await call('get', `/admin/v1/clusters`, undefined, ADMIN_TOKEN);
    const metrics = await t.http().get('/metrics').set('Authorization', `Token ${ADMIN_TOKEN}`);
    expect(metrics.status).toBe(200);
    answers.push(metrics.text);
    expect((await call('delete', path)).status).toBe(200);
    await settle(t);

    // In the driver's requests: every apply and delete carried the credentials.
    const requests = driver.requests as ApplyRequest[];
    expect(requests.length).toBeGreaterThan(5);
    for (const r of requests) expect(r.cloudAccount?.credentials?.values).toEqual({ accessKeyId: CANARY_ID, accessKeySecret: CANARY_SECRET });

    // Nowhere else.
    const leaks = (where: string, text: string) => (text.includes(CANARY_SECRET) || text.includes(CANARY_ID) ? [where] : []);
    const found: string[] = [];
    found.push(...leaks('logs', logs.join('')));
    for (const a of answers) found.push(...leaks(`answer ${a.slice(0, 80)}`, a));
    expect(logs.join('').length).toBeGreaterThan(1000); // the logs were captured (trace level)
    const tables: { table_name: string }[] = await t.db.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`,
    );
    for (const { table_name } of tables) {
      const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM "${table_name}" x WHERE x::text LIKE $1 OR x::text LIKE $2`, [
        `%${CANARY_SECRET}%`,
        `%${CANARY_ID}%`,
      ]);
      if (n > 0) found.push(`table ${table_name}`);
    }
    expect(found).toEqual([]);
    // The outlets were exercised: audit rows, activity, webhook events, a Degraded message.
    const [{ audits }] = await t.db.query(`SELECT count(*)::int AS audits FROM audit_events WHERE cluster_slug = 'canary'`);
    const [{ events }] = await t.db.query(`SELECT count(*)::int AS events FROM webhook_events WHERE organisation_id = $1`, [f.orgId]);
    const [{ degraded }] = await t.db.query(`SELECT count(*)::int AS degraded FROM audit_events WHERE cluster_slug = 'canary' AND type = 'CLUSTER_DEGRADED'`);
    expect(audits).toBeGreaterThan(10);
    expect(events).toBeGreaterThan(10);
    expect(degraded).toBe(1);
  });
});
