import { Client } from 'pg';
import type { AfterQueryEvent, EntitySubscriberInterface } from 'typeorm';
import { PRINCIPAL_CACHE_LISTENER_APPLICATION_NAME, PrincipalCache } from '../../src/auth/principal-cache';
import { LISTEN_RETRY_MAX_MS } from '../../src/jobs/notify-listener';
import { MetricsService } from '../../src/metrics/metrics.service';
import { createTestDatabase, startTestApp, TestApp, TestUser } from '../support/test-app';
import { waitFor } from '../webhooks/receiver';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function counter(t: TestApp, name: 'principalCacheHits' | 'principalCacheMisses'): Promise<number> {
  return (await t.get(MetricsService)[name].get()).values[0]?.value ?? 0;
}

async function invalidations(t: TestApp, cause: string): Promise<number> {
  const { values } = await t.get(MetricsService).principalCacheInvalidations.get();
  return values.find((v) => v.labels.cause === cause)?.value ?? 0;
}

/**
 * Polls `probe` (every 20 ms) until it answers `status`; returns how long that took, or fails after `timeoutMs` (a
 * bound on waiting for the behaviour, not an assertion of how fast it is: benchmarks measure that).
 */
async function untilStatus(probe: () => PromiseLike<{ status: number }>, status: number, timeoutMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const res = await probe();
    if (res.status === status) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`still ${res.status} after ${timeoutMs} ms (waiting for ${status})`);
    await sleep(20);
  }
}

/** Records every SQL statement the app runs (a TypeORM subscriber on its DataSource). */
function recordQueries(t: TestApp): { queries: string[]; stop(): void } {
  const queries: string[] = [];
  const subscriber: EntitySubscriberInterface = { afterQuery: (e: AfterQueryEvent) => void queries.push(e.query) };
  t.db.subscribers.push(subscriber);
  return { queries, stop: () => t.db.subscribers.splice(t.db.subscribers.indexOf(subscriber), 1) };
}

const quotas = (slug: string) => `/api/v1/organisations/${slug}/quotas`;

describe('principal cache (two replicas on one database)', () => {
  let a: TestApp;
  let b: TestApp;
  let owner: TestUser;
  let admin: TestUser;
  let viewer: TestUser;
  let leaving: TestUser;
  let org: { id: number; slug: string; memberIdentities: string[] };

  beforeAll(async () => {
    const url = await createTestDatabase();
    // A TTL far longer than any test: what changes on B while the test waits, a NOTIFY changed.
    a = await startTestApp({ TRUST_PROXY: '1', PRINCIPAL_CACHE_TTL_MS: '600000' }, url);
    b = await startTestApp({ TRUST_PROXY: '1', PRINCIPAL_CACHE_TTL_MS: '600000' }, url);
    owner = await a.createUser('owner');
    admin = await a.createUser('org-admin');
    viewer = await a.createUser('viewer');
    leaving = await a.createUser('leaving');
    org = await a.insertOrganisation('acme', [
      { user: owner, role: 'OWNER' },
      { user: admin, role: 'ADMIN' },
      { user: viewer, role: 'VIEWER' },
      { user: leaving, role: 'MEMBER' },
    ]);
    // Both replicas listen before anything is cached.
    await waitFor(() => a.get(PrincipalCache).isListening && b.get(PrincipalCache).isListening, 10_000);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('a hit runs no SQL at all for authentication and the organisation role', async () => {
    await a.as(viewer.token).get(quotas('acme')).expect(200);
    const hitsBefore = await counter(a, 'principalCacheHits');
    const missesBefore = await counter(a, 'principalCacheMisses');
    const rec = recordQueries(a);
    try {
      const res = await a.as(viewer.token).get(quotas('acme'));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ clustersPerCustomer: 25 });
      // The handler answers from the organisation the guard resolved: nothing at all reaches the database.
      expect(rec.queries).toEqual([]);
    } finally {
      rec.stop();
    }
    expect(await counter(a, 'principalCacheHits')).toBe(hitsBefore + 1);
    expect(await counter(a, 'principalCacheMisses')).toBe(missesBefore);

    // A miss (another organisation slug for the same token) reads token, user and membership in one statement.
    const miss = recordQueries(a);
    try {
      await a.as(viewer.token).get(quotas('no-such-org')).expect(403);
    } finally {
      miss.stop();
    }
    expect(miss.queries.filter((q) => /personal_access_tokens/.test(q))).toHaveLength(1);
    expect(await counter(a, 'principalCacheMisses')).toBe(missesBefore + 1);
  });

  it('a revoked token stops working on the other replica when it hears the NOTIFY (long before its TTL)', async () => {
    const created = await a.as(owner.token).post('/sts/v1/personal-access-tokens').send({ name: 'short-lived' }).expect(200);
    const token: string = created.body.token;
    await b.as(token).get('/sts/v1/personal-access-tokens').expect(200);
    const hits = await counter(b, 'principalCacheHits');
    await b.as(token).get('/sts/v1/personal-access-tokens').expect(200);
    expect(await counter(b, 'principalCacheHits')).toBe(hits + 1); // B serves it from its cache

    await a.as(owner.token).delete(`/sts/v1/personal-access-tokens/${created.body.id}`).expect(200);
    await untilStatus(() => b.as(token).get('/sts/v1/personal-access-tokens'), 401, 10_000);
    const refused = await b.as(token).get('/sts/v1/personal-access-tokens');
    expect(refused.status).toBe(401);
    expect(refused.body.message).toMatch(/revoked/);
    expect(await invalidations(b, 'token')).toBeGreaterThanOrEqual(1);
  });

  it('a removed member is refused on the other replica when it hears the NOTIFY', async () => {
    await b.as(leaving.token).get('/api/v1/organisations/acme').expect(200);
    const hits = await counter(b, 'principalCacheHits');
    await b.as(leaving.token).get('/api/v1/organisations/acme').expect(200);
    expect(await counter(b, 'principalCacheHits')).toBe(hits + 1);

    await a.as(owner.token).delete(`/api/v1/organisations/acme/members/${org.memberIdentities[3]}`).expect(204);
    await untilStatus(() => b.as(leaving.token).get('/api/v1/organisations/acme'), 403, 10_000);
    expect(b.get(PrincipalCache).isListening).toBe(true);
    const refused = await b.as(leaving.token).get('/api/v1/organisations/acme');
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/not a member/);
  });

  it('an ADMIN lowered to VIEWER gets 403 on an ADMIN write on the other replica when it hears the NOTIFY', async () => {
    // An ADMIN write that changes nothing (the body is invalid: 400 after the role check), so B's own writes
    // cannot be what empties its cache.
    const adminWrite = () => b.as(admin.token).post('/api/v1/organisations/acme/members').send({});
    expect((await adminWrite()).status).toBe(400);
    const hits = await counter(b, 'principalCacheHits');
    expect((await adminWrite()).status).toBe(400);
    expect(await counter(b, 'principalCacheHits')).toBe(hits + 1);

    await a.as(owner.token).patch(`/api/v1/organisations/acme/members/${org.memberIdentities[1]}`).send({ role: 'VIEWER' }).expect(200);
    await untilStatus(adminWrite, 403, 10_000);
    const refused = await adminWrite();
    expect(refused.body.message).toMatch(/needs the ADMIN role .* you are VIEWER/);
    // Reads still work with the lower role.
    await b.as(admin.token).get('/api/v1/organisations/acme').expect(200);
  });

  it('checks the IP restriction against each request, also on a hit', async () => {
    const created = await a
      .as(owner.token)
      .post('/sts/v1/personal-access-tokens')
      .send({ name: 'office', ipRestriction: '10.0.0.0/8' })
      .expect(200);
    const token: string = created.body.token;
    await a.as(token).get(quotas('acme')).set('X-Forwarded-For', '10.1.2.3').expect(200);
    const hits = await counter(a, 'principalCacheHits');
    const rec = recordQueries(a);
    try {
      const outside = await a.as(token).get(quotas('acme')).set('X-Forwarded-For', '192.0.2.10');
      expect(outside.status).toBe(401);
      expect(outside.body.message).toMatch(/address/);
    } finally {
      rec.stop();
    }
    expect(rec.queries).toEqual([]);
    expect(await counter(a, 'principalCacheHits')).toBe(hits + 1);
    await a.as(token).get(quotas('acme')).set('X-Forwarded-For', '10.9.9.9').expect(200);
  });

  it('checks expiry against the clock on a hit', async () => {
    const created = await a
      .as(owner.token)
      .post('/sts/v1/personal-access-tokens')
      .send({ name: 'hour', expireAt: new Date(Date.now() + 3600_000).toISOString() })
      .expect(200);
    const token: string = created.body.token;
    await a.as(token).get(quotas('acme')).expect(200);
    const hits = await counter(a, 'principalCacheHits');
    try {
      a.clock.advance(2 * 3600_000);
      const expired = await a.as(token).get(quotas('acme'));
      expect(expired.status).toBe(401);
      expect(expired.body.message).toMatch(/expired/);
    } finally {
      a.clock.set(null);
    }
    expect(await counter(a, 'principalCacheHits')).toBe(hits + 1);
    await a.as(token).get(quotas('acme')).expect(200);
  });

  it("this replica's own writes take effect at once, also raw SQL in a transaction once it commits", async () => {
    const user = await a.createUser('promoted');
    await a.as(user.token).get('/admin/v1/organisations').expect(403);
    await a.db.transaction(async (em) => {
      await em.query(`UPDATE users SET platform_admin = true WHERE id = $1`, [user.id]);
      // Not committed yet: the cache still holds, and the database still says, the old user.
      await a.as(user.token).get('/admin/v1/organisations').expect(403);
    });
    await a.as(user.token).get('/admin/v1/organisations').expect(200);
  });
});

describe('principal cache without its LISTEN connection', () => {
  const TTL_MS = 1500;
  let writer: TestApp;
  let b: TestApp;
  let member: TestUser;
  let other: TestUser;
  let org: { id: number; slug: string; memberIdentities: string[] };

  /**
   * Ends B's LISTEN connection and keeps it from being made again (a login event trigger refuses its
   * application_name) until `allowListener`: the listener tries again at once and then with backoff.
   */
  const killListener = async () => {
    await writer.db.query(`UPDATE refuse_listener SET refused = true`);
    const rows = await writer.db.query(
      `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
      [PRINCIPAL_CACHE_LISTENER_APPLICATION_NAME],
    );
    expect(rows).toEqual([{ killed: true }]);
    await waitFor(() => !b.get(PrincipalCache).isListening, 5000);
  };

  const allowListener = () => writer.db.query(`UPDATE refuse_listener SET refused = false`);

  beforeAll(async () => {
    const url = await createTestDatabase();
    // The writer does not cache (and so has no listener): the one listener in the database is B's.
    writer = await startTestApp({ PRINCIPAL_CACHE_TTL_MS: '0' }, url);
    await writer.db.query(`CREATE TABLE refuse_listener (refused boolean NOT NULL)`);
    await writer.db.query(`INSERT INTO refuse_listener VALUES (false)`);
    await writer.db.query(`
      CREATE FUNCTION refuse_listener() RETURNS event_trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF current_setting('application_name') = '${PRINCIPAL_CACHE_LISTENER_APPLICATION_NAME}'
           AND (SELECT refused FROM refuse_listener) THEN
          RAISE EXCEPTION 'the test refuses the principal cache listener';
        END IF;
      END $$`);
    await writer.db.query(`CREATE EVENT TRIGGER refuse_listener ON login EXECUTE FUNCTION refuse_listener()`);
    b = await startTestApp({ PRINCIPAL_CACHE_TTL_MS: String(TTL_MS) }, url);
    member = await writer.createUser('member');
    other = await writer.createUser('other');
    org = await writer.insertOrganisation('beta', [
      { user: member, role: 'MEMBER' },
      { user: other, role: 'MEMBER' },
    ]);
    await waitFor(() => b.get(PrincipalCache).isListening, 10_000);
  });
  afterAll(async () => {
    await b?.close();
    await writer?.close();
  });

  it('a change still takes effect within the TTL while the connection is down; reconnecting empties the cache', async () => {
    const cache = b.get(PrincipalCache);
    const listenerInvalidations = await invalidations(b, 'listener');
    await killListener();
    // Losing the connection emptied the cache.
    expect(await invalidations(b, 'listener')).toBe(listenerInvalidations + 1);
    expect(cache.size).toBe(0);

    await b.as(member.token).get('/api/v1/organisations/beta').expect(200);
    await b.as(other.token).get('/api/v1/organisations/beta').expect(200);
    const hits = await counter(b, 'principalCacheHits');
    await b.as(member.token).get('/api/v1/organisations/beta').expect(200);
    expect(await counter(b, 'principalCacheHits')).toBe(hits + 1);

    // Removed by another replica: B hears nothing, and stops serving the stale membership when it expires.
    await writer.db.query(`DELETE FROM organisation_members WHERE id = (SELECT id FROM organisation_members WHERE identity = $1)`, [
      org.memberIdentities[0],
    ]);
    expect((await b.as(member.token).get('/api/v1/organisations/beta')).status).toBe(200); // stale, from the cache
    await untilStatus(() => b.as(member.token).get('/api/v1/organisations/beta'), 403, TTL_MS + 10_000);
    expect(cache.isListening).toBe(false); // the TTL did it, not a notification

    // Cached while the connection is down, then changed where B cannot hear it.
    await b.as(other.token).get('/api/v1/organisations/beta').expect(200);
    expect(cache.size).toBeGreaterThan(0);
    await writer.db.query(`UPDATE organisation_members SET role = 'VIEWER' WHERE identity = $1`, [org.memberIdentities[1]]);
    await allowListener();
    // The next attempt comes after the backoff reached meanwhile (at most LISTEN_RETRY_MAX_MS).
    await waitFor(() => cache.isListening, LISTEN_RETRY_MAX_MS + 5000);
    // The connection is back: everything cached before it was made is gone.
    expect(cache.size).toBe(0);
    expect(await invalidations(b, 'listener')).toBe(listenerInvalidations + 2);
    const me = await b.as(other.token).get('/api/v1/organisations/beta/me');
    expect(me.status).toBe(200);
    expect(me.body.role).toBe('VIEWER');

    // And notifications arrive again.
    await b.as(other.token).get('/api/v1/organisations/beta').expect(200);
    await writer.db.query(`DELETE FROM organisation_members WHERE identity = $1`, [org.memberIdentities[1]]);
    expect(await untilStatus(() => b.as(other.token).get('/api/v1/organisations/beta'), 403, 1000)).toBeLessThan(1000);
  }, 60_000);
});

describe('principal cache bounds', () => {
  let t: TestApp;
  const users: TestUser[] = [];

  beforeAll(async () => {
    t = await startTestApp({ PRINCIPAL_CACHE_MAX_ENTRIES: '3', PRINCIPAL_CACHE_TTL_MS: '60000' });
    for (let i = 0; i < 5; i++) users.push(await t.createUser(`bounded${i}`));
    await waitFor(() => t.get(PrincipalCache).isListening, 10_000);
  });
  afterAll(() => t.close());

  it('holds at most PRINCIPAL_CACHE_MAX_ENTRIES tokens, the least recently used leaving first', async () => {
    const cache = t.get(PrincipalCache);
    for (const u of users) await t.as(u.token).get('/sts/v1/personal-access-tokens').expect(200);
    expect(cache.size).toBe(3);
    const misses = await counter(t, 'principalCacheMisses');
    const hits = await counter(t, 'principalCacheHits');
    await t.as(users[4].token).get('/sts/v1/personal-access-tokens').expect(200); // recent: a hit
    expect(await counter(t, 'principalCacheHits')).toBe(hits + 1);
    await t.as(users[0].token).get('/sts/v1/personal-access-tokens').expect(200); // evicted: read again
    expect(await counter(t, 'principalCacheMisses')).toBe(misses + 1);
    expect(cache.size).toBe(3);
  });

  it('with PRINCIPAL_CACHE_TTL_MS=0 nothing is cached and nothing listens', async () => {
    const off = await startTestApp({ PRINCIPAL_CACHE_TTL_MS: '0' }, t.databaseUrl);
    try {
      const u = users[1];
      await off.as(u.token).get('/sts/v1/personal-access-tokens').expect(200);
      const rec = recordQueries(off);
      try {
        await off.as(u.token).get('/sts/v1/personal-access-tokens').expect(200);
      } finally {
        rec.stop();
      }
      expect(rec.queries.filter((q) => /WHERE t\.token_hash = \$1/.test(q))).toHaveLength(1);
      expect(off.get(PrincipalCache).enabled).toBe(false);
      expect(off.get(PrincipalCache).size).toBe(0);
      expect(await counter(off, 'principalCacheHits')).toBe(0);
      const client = new Client({ connectionString: t.databaseUrl });
      await client.connect();
      try {
        const { rows } = await client.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, [
          PRINCIPAL_CACHE_LISTENER_APPLICATION_NAME,
        ]);
        expect(rows[0].n).toBe(1); // t's listener only
      } finally {
        await client.end();
      }
    } finally {
      await off.close();
    }
  });
});
