import { Logger } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsService } from 'nestjs-cls';
import { Client } from 'pg';
import { APPLICATION_NAME } from '../../src/database/data-source-options';
import { isRetryableRead, retryReadOnce } from '../../src/database/read-retry';
import { clusterBody, clustersPath, createOrgFixture } from '../clusters/cluster-fixtures';
import { TestIssuer } from '../support/jwks-server';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestDatabase, expectErrorBody, startTestApp, TestApp, TestUser } from '../support/test-app';

/**
 * Every way the database can be unusable answers 503 with Retry-After and a body naming the cause, never 500
 * (issue 42, item 1): each fault made for real against PostgreSQL.
 */

/** Waits until a backend of the app's request pool waits on a lock, and answers its pid. */
async function blockedBackend(admin: Client, database: string, count = 1, except: number[] = []): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await admin.query(
      `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = $2 AND wait_event_type = 'Lock' AND NOT pid = ANY($3)`,
      [database, APPLICATION_NAME, except],
    );
    if (rows.length >= count) return rows[0].pid as number;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('no request of the app waited on the lock');
}

function expectUnavailable(res: { status: number; body: Record<string, unknown>; headers: Record<string, string> }, cause: RegExp): void {
  expect({ status: res.status, message: res.body.message }).toEqual({ status: 503, message: expect.stringMatching(cause) });
  expectErrorBody(res.body, 503);
  expect(res.headers['retry-after']).toBe('2');
}

describe('database faults answer 503 with Retry-After, never 500', () => {
  jest.setTimeout(60_000);
  let t: TestApp;
  let url: string;
  let database: string;
  let admin: Client;
  let owner: TestUser;
  const base = '/api/v1/orgs/faults/environments';

  beforeAll(async () => {
    url = await createTestDatabase();
    database = new URL(url).pathname.slice(1);
    t = await startTestApp({ DATABASE_TIMEOUT_MS: '4000' }, url);
    admin = new Client({ connectionString: url });
    await admin.connect();
    owner = await t.createUser('fault-owner');
    await t.insertOrganisation('faults', [{ user: owner, role: 'OWNER' }]);
    await t.as(owner.token).post(base).send({ name: 'staging' }).expect(200);
  });
  afterAll(async () => {
    await admin.query(`ALTER DATABASE ${database} RESET default_transaction_read_only`).catch(() => undefined);
    await admin.end();
    await t.close();
  });

  it("a write whose backend is terminated mid-request (pg_terminate_backend, 57P01) is 503 and changes nothing", async () => {
    const locker = new Client({ connectionString: url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM environments WHERE slug = 'staging' FOR UPDATE`);
      const patch = t.as(owner.token).patch(`${base}/staging`).send({ description: 'during the fault' }).then((r) => r);
      const pid = await blockedBackend(admin, database);
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      expectUnavailable(await patch, /connection to the database was lost \(57P01\)/);
      await locker.query('ROLLBACK');
    } finally {
      await locker.end();
    }
    const after = await t.as(owner.token).get(`${base}/staging`).expect(200);
    expect(after.body.description ?? null).not.toBe('during the fault');
    const audit = await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE type = 'ENVIRONMENT_UPDATED'`);
    expect(audit[0].n).toBe(0);
  });

  it('a write on a read-only server (25006, a primary restarted read-only by a failover) is 503; reads go on; the next connection after it is writable again', async () => {
    await admin.query(`ALTER DATABASE ${database} SET default_transaction_read_only = on`);
    // Every session made from now on is read-only; end the pool's current ones as a failover would.
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2`, [database, APPLICATION_NAME]);
    const answers: { status: number; message: string }[] = [];
    let readOnly: Awaited<ReturnType<ReturnType<TestApp['as']>['post']>> | undefined;
    for (let i = 0; i < 6 && !readOnly; i++) {
      const res = await t.as(owner.token).post(base).send({ name: `ro-${i}` });
      answers.push({ status: res.status, message: String(res.body.message) });
      if (/25006/.test(String(res.body.message))) readOnly = res;
    }
    // Connections the termination closed answer 503 too (lost), and then a fresh one finds the server read-only.
    expect(answers.every((a) => a.status === 503)).toBe(true);
    expect(readOnly).toBeDefined();
    expectUnavailable(readOnly!, /accepts only reads .*\(25006\)/);
    await t.as(owner.token).get(base).expect(200);

    await admin.query(`ALTER DATABASE ${database} RESET default_transaction_read_only`);
    // The read-only session that answered 25006 was closed, and the pool hands out no session made before it.
    let status = 0;
    for (let i = 0; i < 6 && status !== 200; i++) {
      await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2 AND state = 'idle'`, [
        database,
        APPLICATION_NAME,
      ]);
      status = (await t.as(owner.token).post(base).send({ name: 'after-ro' })).status;
      expect([200, 503]).toContain(status);
    }
    expect(status).toBe(200);
    const rows = await t.db.query(`SELECT slug FROM environments WHERE slug LIKE 'ro-%'`);
    expect(rows).toEqual([]);
  });

  it('a request that waits for a pool connection beyond its budget is 503 (timeout), and so are those holding them', async () => {
    // Two connections (start-up's migration step needs both), both held by requests blocked on a lock.
    const small = await startTestApp({ DATABASE_TIMEOUT_MS: '1500', DATABASE_POOL_SIZE: '2' }, url);
    const locker = new Client({ connectionString: url });
    await locker.connect();
    try {
      await small.as(owner.token).get(base).expect(200);
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE environments IN ACCESS EXCLUSIVE MODE`);
      const holding = [1, 2].map((n) =>
        small.as(owner.token).patch(`${base}/staging`).send({ description: `holds connection ${n}` }).then((r) => r),
      );
      await blockedBackend(admin, database, 2);
      const waiting = await small.as(owner.token).get(`${base}/count`);
      expectUnavailable(waiting, /did not answer in time \((pool-timeout|ETIMEDOUT)\)/);
      for (const res of await Promise.all(holding)) expectUnavailable(res, /did not answer in time/);
      await locker.query('ROLLBACK');
      await small.as(owner.token).get(base).expect(200);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
      await small.close();
    }
  });
});

describe('a database that refuses connections answers 503 with Retry-After', () => {
  let t: TestApp;
  let proxy: TcpProxy;

  beforeAll(async () => {
    const url = await createTestDatabase();
    const u = new URL(url);
    proxy = new TcpProxy(u.hostname, Number(u.port));
    await proxy.start();
    t = await startTestApp({ DATABASE_TIMEOUT_MS: '1000' }, proxy.wrap(url));
  });
  afterAll(async () => {
    await proxy.restore();
    await t.close();
    await proxy.stop();
  });

  it('ECONNREFUSED, and a connection dropped by the network (connection lost): 503 naming each; recovers by itself', async () => {
    await t.admin().get('/sts/v1/personal-access-tokens').expect(200);
    await proxy.refuse();
    expectUnavailable(await t.admin().get('/sts/v1/personal-access-tokens'), /refused the connection \(ECONNREFUSED\)/);
    expectUnavailable(await t.admin().post('/sts/v1/personal-access-tokens').send({ name: 'refused' }), /refused the connection/);
    await proxy.restore();
    await t.admin().get('/sts/v1/personal-access-tokens').expect(200);

    // Accepted and closed at once: the server went away under the connection.
    proxy.cut();
    expectUnavailable(await t.admin().post('/sts/v1/personal-access-tokens').send({ name: 'lost' }), /connection to the database was lost/);
    await proxy.restore();
    await t.admin().get('/sts/v1/personal-access-tokens').expect(200);
    const rows = await t.db.query(`SELECT count(*)::int AS n FROM personal_access_tokens WHERE name IN ('refused', 'lost')`);
    expect(rows[0].n).toBe(0);
  });
});

describe('a GET whose connection is lost is run once more on a fresh connection; writes never are', () => {
  jest.setTimeout(60_000);
  let t: TestApp;
  let proxy: TcpProxy;
  let url: string;
  let database: string;
  let admin: Client;
  let owner: TestUser;
  const base = '/api/v1/orgs/retries/environments';
  const issuer = new TestIssuer();
  // The retry's debug line names the read it ran again. Watched at the logger: with several apps in one process
  // (this file starts three), nestjs-pino writes every application line to the first app's destination.
  let debugLines: jest.SpyInstance;

  beforeAll(async () => {
    url = await createTestDatabase();
    database = new URL(url).pathname.slice(1);
    const u = new URL(url);
    proxy = new TcpProxy(u.hostname, Number(u.port));
    await proxy.start();
    await issuer.start();
    debugLines = jest.spyOn(Logger.prototype, 'debug');
    t = await startTestApp({ DATABASE_TIMEOUT_MS: '5000', OIDC_ISSUER_URL: issuer.url, OIDC_AUDIENCE: 'cms-api' }, proxy.wrap(url));
    admin = new Client({ connectionString: url });
    await admin.connect();
    owner = await t.createUser('retry-owner');
    await t.insertOrganisation('retries', [{ user: owner, role: 'OWNER' }]);
    await t.as(owner.token).post(base).send({ name: 'staging' }).expect(200);
  });
  afterAll(async () => {
    await admin.end();
    await t.close();
    await proxy.stop();
    await issuer.stop();
    debugLines.mockRestore();
  });

  /** Where the debug lines are now, for retriedSince. */
  const mark = () => debugLines.mock.calls.length;
  /** The reads the service ran once more since `from` (a mark), by the name its debug line gives them. */
  function retriedSince(from: number): string[] {
    return debugLines.mock.calls
      .slice(from)
      .filter(([, message]) => typeof message === 'string' && message.includes('running it once more on a fresh one'))
      .map(([fields]) => String((fields as { read?: unknown }).read));
  }

  /**
   * Runs `send` while a lock holds its statement (by default a lock of the environments table; `lock` takes another),
   * drops the app's connections, then lifts the lock.
   */
  async function cutWhileBlocked<T>(send: () => Promise<T>, lock = 'LOCK TABLE environments IN ACCESS EXCLUSIVE MODE'): Promise<T> {
    const locker = new Client({ connectionString: url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(lock);
      const answer = send();
      await blockedBackend(admin, database);
      // The connection dies under the waiting statement; a second run would wait on the lock again.
      proxy.dropConnections();
      await new Promise((r) => setTimeout(r, 100));
      await locker.query('ROLLBACK');
      return await answer;
    } finally {
      await locker.end();
    }
  }

  it('the environment list (page query and count) answers 200 after its connection is cut', async () => {
    const res = await cutWhileBlocked(() => t.as(owner.token).get(base).then((r) => r));
    expect(res.status).toBe(200);
    expect(res.body.content.map((e: { slug: { slugValue: string } }) => e.slug.slugValue)).toEqual(['staging']);
  });

  // The reads made before the handler (guards, interceptors, hooks) run once more as well: in a failover most requests
  // find their pooled connection dead at the first statement, which is one of these.

  it("authentication's token lookup whose connection is cut runs once more: the GET answers 200", async () => {
    const reader = await t.createUser('retry-reader');
    await t.db.query(`INSERT INTO organisation_members (organisation_id, user_id, role, kubernetes_role, joined_at)
                      SELECT id, $1, 'VIEWER', 'VIEW', now() FROM organisations WHERE slug = 'retries'`, [reader.id]);
    const from = mark();
    // A token never used: not in the principal cache, so the guard reads it (personal_access_tokens is locked).
    const res = await cutWhileBlocked(() => t.as(reader.token).get(base).then((r) => r), 'LOCK TABLE personal_access_tokens IN ACCESS EXCLUSIVE MODE');
    expect(res.status).toBe(200);
    expect(res.body.content.map((e: { slug: { slugValue: string } }) => e.slug.slugValue)).toEqual(['staging']);
    expect(retriedSince(from)).toEqual(['authentication (token lookup)']);
  });

  it("authentication's last-use stamp of a token whose connection is cut runs once more: the GET answers 200", async () => {
    await t.as(owner.token).get(base).expect(200);
    // Two minutes later the token's use is stamped (an UPDATE of its row: a row lock holds it, reads go on).
    const later = new Date(Date.now() + 2 * 60_000);
    t.clock.set(later);
    try {
      const [{ id }] = await t.db.query(`SELECT t.id FROM personal_access_tokens t JOIN users u ON u.id = t.user_id WHERE u.username = 'retry-owner'`);
      const from = mark();
      const res = await cutWhileBlocked(() => t.as(owner.token).get(base).then((r) => r), `SELECT 1 FROM personal_access_tokens WHERE id = ${Number(id)} FOR UPDATE`);
      expect(res.status).toBe(200);
      expect(res.body.content.map((e: { slug: { slugValue: string } }) => e.slug.slugValue)).toEqual(['staging']);
      expect(retriedSince(from)).toEqual(['authentication (token last use)']);
      const [token] = await t.db.query(`SELECT last_used_at FROM personal_access_tokens WHERE id = $1`, [id]);
      expect(new Date(token.last_used_at).toISOString()).toBe(later.toISOString());
    } finally {
      t.clock.set(null);
    }
  });

  it("authentication's OIDC user and the organisation access guard's membership read run once more: the GET answers 200", async () => {
    const jwt = await issuer.sign({ sub: 'retry-subject', email: 'oidc-reader@example.com', email_verified: true, preferred_username: 'oidc-reader' });
    const call = () => t.http().get(base).set('Authorization', `Bearer ${jwt}`).then((r) => r);
    // The first call creates the user; a membership lets it read the organisation.
    expect((await call()).status).toBe(403);
    await t.db.query(`INSERT INTO organisation_members (organisation_id, user_id, role, kubernetes_role, joined_at)
                      SELECT o.id, u.id, 'VIEWER', 'VIEW', now() FROM organisations o, users u WHERE o.slug = 'retries' AND u.oidc_id = 'retry-subject'`);
    const slugs = (r: { body: { content: { slug: { slugValue: string } }[] } }) => r.body.content.map((e) => e.slug.slugValue);

    let from = mark();
    // An OIDC caller's user is read on every request (no principal cache for OIDC).
    let res = await cutWhileBlocked(call, 'LOCK TABLE users IN ACCESS EXCLUSIVE MODE');
    expect({ status: res.status, slugs: slugs(res) }).toEqual({ status: 200, slugs: ['staging'] });
    expect(retriedSince(from)).toEqual(['authentication (OIDC user)']);

    from = mark();
    // Without a membership resolved with a token, the organisation access guard reads it.
    res = await cutWhileBlocked(call, 'LOCK TABLE organisation_members IN ACCESS EXCLUSIVE MODE');
    expect({ status: res.status, slugs: slugs(res) }).toEqual({ status: 200, slugs: ['staging'] });
    expect(retriedSince(from)).toEqual(['organisation access']);
  });

  it("a POST's Idempotency-Key lookup whose connection is cut runs once more; the change is made once", async () => {
    const from = mark();
    const post = () => t.as(owner.token).post(base).set('Idempotency-Key', 'retry-lookup-1').send({ name: 'keyed' }).then((r) => r);
    const res = await cutWhileBlocked(post, 'LOCK TABLE idempotency_keys IN ACCESS EXCLUSIVE MODE');
    expect(res.status).toBe(200);
    expect(res.body.slug.slugValue).toBe('keyed');
    expect(retriedSince(from)).toEqual(['idempotency key lookup']);
    const again = await post();
    expect({ status: again.status, replayed: again.headers['idempotent-replayed'] }).toEqual({ status: 200, replayed: 'true' });
    const rows = await t.db.query(`SELECT count(*)::int AS n FROM environments WHERE slug = 'keyed' AND deleted_at IS NULL`);
    expect(rows[0].n).toBe(1);
  });

  it("a /compat answer's written-forms read (after the handler, before any byte) whose connection is cut runs once more", async () => {
    const f = await createOrgFixture(t);
    const created = await t.as(f.users.owner.token).post(clustersPath(f)).send(clusterBody(f)).expect(200);
    const from = mark();
    const res = await cutWhileBlocked(
      () => t.as(f.users.owner.token).get(`/compat${clustersPath(f)}/web`).then((r) => r),
      'LOCK TABLE compat_cluster_forms IN ACCESS EXCLUSIVE MODE',
    );
    expect(res.status).toBe(200);
    // The plain representation of the original clients: slugs as plain strings.
    expect({ identity: res.body.identity, slug: res.body.slug }).toEqual({ identity: created.body.identity, slug: 'web' });
    expect(retriedSince(from)).toEqual(['compat written forms (answer)']);
  });

  it('a read inside a transaction is not run again: the transaction died with its connection', async () => {
    const txHost = t.get(TransactionHost) as TransactionHost<TransactionalAdapterTypeOrm>;
    const from = mark();
    const failure = await cutWhileBlocked(() =>
      t
        .get(ClsService)
        .run(() => txHost.withTransaction(() => retryReadOnce(() => txHost.tx.query('SELECT count(*) FROM environments'), 'in a transaction')))
        .then(
          () => null,
          (err: unknown) => err,
        ),
    );
    expect(isRetryableRead(failure)).toBe(true);
    expect(retriedSince(from)).toEqual([]);
  });

  it('a PATCH whose connection is cut is 503 with Retry-After and is not run again', async () => {
    const res = await cutWhileBlocked(() => t.as(owner.token).patch(`${base}/staging`).send({ description: 'cut' }).then((r) => r));
    expectUnavailable(res, /connection to the database was lost/);
    const after = await t.as(owner.token).get(`${base}/staging`).expect(200);
    expect(after.body.description ?? null).not.toBe('cut');
  });

  it('a GET whose retry loses its connection too is 503 (one retry only)', async () => {
    const locker = new Client({ connectionString: url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE environments IN ACCESS EXCLUSIVE MODE');
      const answer = t.as(owner.token).get(base).then((r) => r);
      const first = await blockedBackend(admin, database);
      proxy.dropConnections();
      // The retry waits on the lock on a fresh connection (another backend): cut that one too.
      await blockedBackend(admin, database, 1, [first]);
      proxy.dropConnections();
      expectUnavailable(await answer, /connection to the database was lost/);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
  });
});

describe('a read whose retry meets a database refusing connections waits for it (READ_RETRY_WAIT_MS), within its budget', () => {
  jest.setTimeout(60_000);
  let t: TestApp;
  let url: string;
  let database: string;
  let proxy: TcpProxy;
  let admin: Client;
  let owner: TestUser;
  const base = '/api/v1/orgs/waits/environments';
  const apps: TestApp[] = [];
  let debugLines: jest.SpyInstance;

  beforeAll(async () => {
    url = await createTestDatabase();
    database = new URL(url).pathname.slice(1);
    const u = new URL(url);
    proxy = new TcpProxy(u.hostname, Number(u.port));
    await proxy.start();
    debugLines = jest.spyOn(Logger.prototype, 'debug');
    t = await startTestApp({ DATABASE_TIMEOUT_MS: '8000', READ_RETRY_WAIT_MS: '3000' }, proxy.wrap(url));
    apps.push(t);
    admin = new Client({ connectionString: url });
    await admin.connect();
    owner = await t.createUser('wait-owner');
    await t.insertOrganisation('waits', [{ user: owner, role: 'OWNER' }]);
    await t.as(owner.token).post(base).send({ name: 'staging' }).expect(200);
  });
  afterEach(async () => {
    await proxy.restore();
  });
  afterAll(async () => {
    await admin.end();
    for (const app of apps) await app.close();
    await proxy.stop();
    debugLines.mockRestore();
  });

  /** Another app on the same database and proxy, with other settings, its principal cache warmed by one GET. */
  async function otherApp(env: Record<string, string>): Promise<TestApp> {
    const app = await startTestApp(env, proxy.wrap(url));
    apps.push(app);
    await app.as(owner.token).get(base).expect(200);
    return app;
  }

  const mark = () => debugLines.mock.calls.length;
  /** The pauses (ms) the retries since `from` made before an attempt because the database refused connections. */
  function pausesSince(from: number): number[] {
    return debugLines.mock.calls
      .slice(from)
      .filter(([, message]) => typeof message === 'string' && message.includes('refusing connections'))
      .map(([fields]) => Number((fields as { pauseMs?: unknown }).pauseMs));
  }
  async function until(what: string, check: () => boolean): Promise<void> {
    for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
    if (!check()) throw new Error(`never: ${what}`);
  }

  /**
   * Sends a GET of the environment list of `app` while a lock holds its statement, then makes the proxy fail
   * (`refuse`: new connections refused, ECONNREFUSED; `cut`: accepted and closed at once, as HAProxy does while its
   * server is down) and kills the connection under the statement, then lifts the lock. `then` runs while the
   * proxy still fails.
   */
  async function getWhileFailing(app: TestApp, how: 'refuse' | 'cut', then: () => Promise<void>) {
    const locker = new Client({ connectionString: url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE environments IN ACCESS EXCLUSIVE MODE');
      const answer = app.as(owner.token).get(base).then((r) => r);
      await blockedBackend(admin, database);
      if (how === 'refuse') await proxy.refuse();
      else proxy.cut();
      await locker.query('ROLLBACK');
      await then();
      return await answer;
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
  }

  it.each(['refuse', 'cut'] as const)(
    'a GET whose connection is lost and whose retry is refused (%s) waits and answers 200 once connections are accepted again',
    async (how) => {
      const from = mark();
      const res = await getWhileFailing(t, how, async () => {
        // The retry has met the refusal and pauses; the database accepts connections again.
        await until('a retry paused for a database refusing connections', () => pausesSince(from).length > 0);
        await proxy.restore();
      });
      expect(res.status).toBe(200);
      expect(res.body.content.map((e: { slug: { slugValue: string } }) => e.slug.slugValue)).toEqual(['staging']);
      expect(pausesSince(from)[0]).toBe(100);
    },
  );

  it('with READ_RETRY_WAIT_MS=0 the same GET is retried once at once and answers 503 with Retry-After', async () => {
    const now = await otherApp({ DATABASE_TIMEOUT_MS: '8000', READ_RETRY_WAIT_MS: '0' });
    const from = mark();
    const res = await getWhileFailing(now, 'refuse', async () => undefined);
    expectUnavailable(res, /refused the connection \(ECONNREFUSED\)/);
    expect(pausesSince(from)).toEqual([]);
    await proxy.restore();
    await now.as(owner.token).get(base).expect(200);
  });

  it('a database refusing connections for longer than READ_RETRY_WAIT_MS: 503 with Retry-After after waiting it out', async () => {
    const from = mark();
    const started = Date.now();
    const res = await getWhileFailing(t, 'refuse', async () => undefined);
    expectUnavailable(res, /refused the connection \(ECONNREFUSED\)/);
    // 100, 250, 500, 1000, 1000 and the 150 left of the 3000 ms.
    expect(pausesSince(from)).toEqual([100, 250, 500, 1000, 1000, 150]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3000);
    await proxy.restore();
    await t.as(owner.token).get(base).expect(200);
  });

  it("the pauses never go beyond the request's budget (DATABASE_TIMEOUT_MS): 503 with Retry-After, not a timeout", async () => {
    const short = await otherApp({ DATABASE_TIMEOUT_MS: '1000', READ_RETRY_WAIT_MS: '3000' });
    const from = mark();
    await proxy.refuse();
    const res = await short.as(owner.token).get(base);
    expectUnavailable(res, /refused the connection \(ECONNREFUSED\)/);
    const pauses = pausesSince(from);
    expect(pauses.length).toBeGreaterThan(0);
    // A fifth of the budget is left for the attempt after the last pause.
    expect(pauses.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(800);
  });
});
