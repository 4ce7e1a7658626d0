import { Logger } from '@nestjs/common';
import { PassThrough } from 'stream';
import { EnvironmentsService } from '../../src/environments/environments.service';
import { clusterBody, clustersPath, createOrgFixture, settle } from '../clusters/cluster-fixtures';
import { createOrgWithRoles, OrgFixture } from '../environments/fixtures';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestDatabase, startTestApp, TestApp } from '../support/test-app';

/** Reads the service's own log output (pino's destination) as an operator would. */
class LogCapture extends PassThrough {
  text = '';
  constructor() {
    super();
    this.on('data', (d: Buffer) => (this.text += d.toString()));
  }
  lines(): Record<string, unknown>[] {
    return this.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}

describe('logs an operator can use', () => {
  let t: TestApp;
  let org: OrgFixture;
  let proxy: TcpProxy;
  const logs = new LogCapture();
  const SECRET = 'cms_test_credential_value_never_logged_1234';

  beforeAll(async () => {
    const url = await createTestDatabase();
    const u = new URL(url);
    proxy = new TcpProxy(u.hostname, Number(u.port));
    await proxy.start();
    // A short budget keeps the outage test quick; 500 ms was too short for a cluster create on a loaded
    // machine (503 seen at load 11 on 2 cores). Reads do not wait for the refused database (READ_RETRY_WAIT_MS=0): with
    // the wait the outage test's 20 requests would last about 50 s, past the 10 s summary interval.
    t = await startTestApp({ LOG_LEVEL: 'info', DATABASE_TIMEOUT_MS: '3000', READ_RETRY_WAIT_MS: '0' }, proxy.wrap(url), logs);
    org = await createOrgWithRoles(t, 'logged');
  });
  afterAll(async () => {
    proxy.restore();
    await t.close();
    await proxy.stop();
  });

  it('writes one line per request with route template, status, duration, request id, principal and organisation', async () => {
    logs.text = '';
    await t.as(org.users.MEMBER.token).get(`/api/v1/orgs/${org.slug}/environments`).set('X-Request-Id', 'trace-one').expect(200);
    await t.as(org.users.MEMBER.token).get(`/api/v1/orgs/${org.slug}/environments/missing`).set('X-Request-Id', 'trace-two').expect(404);
    await t.http().get('/sts/v1/personal-access-tokens').set('Authorization', `Token ${SECRET}`).set('X-Request-Id', 'trace-three').expect(401);
    await new Promise((r) => setTimeout(r, 50));
    const lines = logs.lines().filter((l) => typeof l.route === 'string');
    const one = lines.filter((l) => l.reqId === 'trace-one');
    expect(one).toHaveLength(1);
    expect(one[0]).toMatchObject({
      level: 30,
      method: 'GET',
      route: '/api/v1/orgs/:organisationSlug/environments',
      status: 200,
      principal: org.users.MEMBER.identity,
      organisation: org.slug,
      durationMs: expect.any(Number),
    });
    expect(lines.find((l) => l.reqId === 'trace-two')).toMatchObject({ level: 40, status: 404 });
    expect(lines.find((l) => l.reqId === 'trace-three')).toMatchObject({ level: 40, status: 401 });
    expect(logs.text).not.toContain(SECRET);
    expect(logs.text).not.toContain(org.users.MEMBER.token);
  });

  it('gives a line the application writes while handling a request the request id; an error keeps its stack', async () => {
    const list = EnvironmentsService.prototype.list;
    const spy = jest.spyOn(EnvironmentsService.prototype, 'list').mockImplementation(function (this: EnvironmentsService, ...args) {
      const logger = new Logger('Probe');
      logger.log('listing environments');
      logger.warn({ slug: args[0].slug }, 'with fields');
      logger.error('failed here', 'Error: failed here\n    at probe (probe.ts:1:1)');
      return list.apply(this, args);
    });
    try {
      logs.text = '';
      await t.as(org.users.MEMBER.token).get(`/api/v1/orgs/${org.slug}/environments`).set('X-Request-Id', 'trace-probe').expect(200);
      await new Promise((r) => setTimeout(r, 50));
      const probe = logs.lines().filter((l) => l.context === 'Probe');
      expect(probe).toEqual([
        expect.objectContaining({ level: 30, reqId: 'trace-probe', msg: 'listing environments' }),
        expect.objectContaining({ level: 40, reqId: 'trace-probe', slug: org.slug, msg: 'with fields' }),
        expect.objectContaining({ level: 50, reqId: 'trace-probe', err: expect.objectContaining({ message: 'failed here', stack: expect.stringContaining('at probe') }) }),
      ]);
      // Outside a request (start-up, background work) a line has no request id.
      logs.text = '';
      new Logger('Probe').log('no request here');
      await new Promise((r) => setTimeout(r, 50));
      expect(logs.lines().find((l) => l.msg === 'no request here')).not.toHaveProperty('reqId');
    } finally {
      spy.mockRestore();
    }
  });

  it('logs a database outage once when it starts and once when it ends, with the count of 503s instead of a line each', async () => {
    logs.text = '';
    await t.as(org.users.VIEWER.token).get(`/api/v1/orgs/${org.slug}/environments`).expect(200);
    proxy.cut();
    let failed = 0;
    for (let i = 0; i < 20; i++) {
      const res = await t.as(org.users.VIEWER.token).post(`/api/v1/orgs/${org.slug}/environments`).send({ name: `down-${i}` });
      expect(res.status).toBe(503);
      failed++;
    }
    proxy.restore();
    let status = 0;
    for (let i = 0; i < 30 && status !== 200; i++) {
      status = (await t.as(org.users.VIEWER.token).get(`/api/v1/orgs/${org.slug}/environments`)).status;
      if (status !== 200) {
        failed++;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    expect(status).toBe(200);
    const events = logs.lines().filter((l) => typeof l.event === 'string' && String(l.event).startsWith('database_'));
    expect(events.map((e) => [e.event, e.level])).toEqual([
      ['database_unavailable', 50],
      ['database_available', 30],
    ]);
    expect(events[0].code).toEqual(expect.any(String));
    expect(events[1]).toMatchObject({ requests: failed, outageSeconds: expect.any(Number) });
    // No line per failed request: the outage is two lines however many requests failed.
    expect(logs.lines().filter((l) => l.status === 503)).toEqual([]);
  });

  it('logs every cluster status change with its ids', async () => {
    const f = await createOrgFixture(t);
    const created = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'logged' }));
    expect(created.status).toBe(200);
    logs.text = '';
    await settle(t);
    const changes = logs.lines().filter((l) => l.cluster === created.body.identity && 'to' in l);
    expect(changes.map((l) => `${l.from}->${l.to}`)).toEqual(['new->provisioning', 'provisioning->provisioned', 'provisioned->starting', 'starting->started']);
    expect(changes[0]).toMatchObject({ level: 30, organisation: f.orgSlug, environment: f.envSlug, clusterSlug: 'logged' });
  });
});
