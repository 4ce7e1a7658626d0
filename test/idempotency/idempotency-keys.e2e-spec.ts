import { Client } from 'pg';
import { APPLICATION_NAME } from '../../src/database/data-source-options';
import { TcpProxy } from '../support/tcp-proxy';
import { createTestDatabase, expectErrorBody, startTestApp, TestApp, TestUser } from '../support/test-app';

/** Idempotency-Key on POST and PATCH (issue 42, item 3; docs/api.md, "Retrying writes"). */

const base = '/api/v1/orgs/keys/environments';

async function count(t: TestApp, sql: string, params: unknown[] = []): Promise<number> {
  return Number((await t.db.query(sql, params))[0].n);
}

describe('Idempotency-Key', () => {
  jest.setTimeout(90_000);
  let t: TestApp;
  let url: string;
  let owner: TestUser;
  let other: TestUser;

  beforeAll(async () => {
    url = await createTestDatabase();
    t = await startTestApp({}, url);
    owner = await t.createUser('key-owner');
    other = await t.createUser('key-other');
    await t.insertOrganisation('keys', [
      { user: owner, role: 'OWNER' },
      { user: other, role: 'ADMIN' },
    ]);
  });
  afterAll(() => t.close());

  it('a repeat with the same key and body answers the stored answer, marked as a replay, and changes nothing again', async () => {
    const first = await t.as(owner.token).post(base).set('Idempotency-Key', 'create-staging-1').send({ name: 'staging', description: 'one' });
    expect(first.status).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    // The same body with its properties in another order is the same request.
    const again = await t.as(owner.token).post(base).set('Idempotency-Key', 'create-staging-1').send({ description: 'one', name: 'staging' });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await count(t, `SELECT count(*) AS n FROM environments WHERE slug = 'staging'`)).toBe(1);
    expect(await count(t, `SELECT count(*) AS n FROM audit_events WHERE type = 'ENVIRONMENT_CREATED' AND environment_slug = 'staging'`)).toBe(1);
    // Without the key the same request runs again (and meets the existing environment), as for clients that send none.
    const unkeyed = await t.as(owner.token).post(base).send({ name: 'staging', description: 'one' });
    expect(unkeyed.status).toBe(409);
  });

  it('the same key with another request is 422, naming the request it was used for; nothing is written', async () => {
    await t.as(owner.token).post(base).set('Idempotency-Key', 'k-422').send({ name: 'qa-env' }).expect(200);
    const res = await t.as(owner.token).post(base).set('Idempotency-Key', 'k-422').send({ name: 'qa-env-2' });
    expect(res.status).toBe(422);
    expectErrorBody(res.body, 422);
    expect(res.body.message).toContain(`POST ${base}`);
    const patch = await t.as(owner.token).patch(`${base}/qa-env`).set('Idempotency-Key', 'k-422').send({ name: 'qa-env' });
    expect(patch.status).toBe(422);
    expect(await count(t, `SELECT count(*) AS n FROM environments WHERE slug = 'qa-env-2'`)).toBe(0);
  });

  it('keys are scoped per caller: another caller with the same key runs its own request', async () => {
    const mine = await t.as(owner.token).patch(`${base}/qa-env`).set('Idempotency-Key', 'shared-key').send({ description: 'owner' });
    expect(mine.status).toBe(200);
    const theirs = await t.as(other.token).patch(`${base}/qa-env`).set('Idempotency-Key', 'shared-key').send({ description: 'other' });
    expect(theirs.status).toBe(200);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.body.description).toBe('other');
  });

  it('an error is not stored: after a 409 the same key runs again', async () => {
    const conflict = await t.as(owner.token).post(base).set('Idempotency-Key', 'after-409').send({ name: 'staging' });
    expect(conflict.status).toBe(409);
    expect(await count(t, `SELECT count(*) AS n FROM idempotency_keys WHERE idempotency_key = 'after-409'`)).toBe(0);
  });

  it('a key that is not 1 to 255 visible ASCII characters is 400; the draft\'s quoted form is the same key', async () => {
    for (const bad of ['', 'x'.repeat(256), 'with space', '""', 'ünïcode']) {
      const res = await t.as(owner.token).post(base).set('Idempotency-Key', bad).send({ name: 'bad-key' });
      expect({ bad, status: res.status }).toEqual({ bad, status: 400 });
    }
    const quoted = await t.as(owner.token).post(base).set('Idempotency-Key', '"quoted-1"').send({ name: 'quoted' });
    expect(quoted.status).toBe(200);
    const bare = await t.as(owner.token).post(base).set('Idempotency-Key', 'quoted-1').send({ name: 'quoted' });
    expect(bare.headers['idempotent-replayed']).toBe('true');
  });

  it('a secret shown once is shown again to the same caller on a replay, and is stored sealed', async () => {
    const first = await t.as(owner.token).post('/sts/v1/personal-access-tokens').set('Idempotency-Key', 'pat-1').send({ name: 'ci' });
    expect(first.status).toBe(200);
    const again = await t.as(owner.token).post('/sts/v1/personal-access-tokens').set('Idempotency-Key', 'pat-1').send({ name: 'ci' });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await count(t, `SELECT count(*) AS n FROM personal_access_tokens WHERE name = 'ci'`)).toBe(1);
    const secret = JSON.stringify(first.body).match(/cms_[A-Za-z0-9_-]{20,}/)?.[0];
    expect(secret).toBeDefined();
    expect(await count(t, `SELECT count(*) AS n FROM idempotency_keys WHERE idempotency_key = 'pat-1' AND answer LIKE '%' || $1 || '%'`, [secret])).toBe(0);
  });

  it('a repeat while the first is in flight is 409, in this process and on another replica; the first then completes once', async () => {
    const replica = await startTestApp({}, url);
    const admin = new Client({ connectionString: url });
    await admin.connect();
    const locker = new Client({ connectionString: url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE environments IN SHARE MODE');
      const first = t.as(owner.token).post(base).set('Idempotency-Key', 'in-flight').send({ name: 'slow' }).then((r) => r);
      for (let i = 0; i < 200; i++) {
        const { rows } = await admin.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock'`, [
          APPLICATION_NAME,
        ]);
        if (rows.length) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      const here = await t.as(owner.token).post(base).set('Idempotency-Key', 'in-flight').send({ name: 'slow' });
      expect(here.status).toBe(409);
      expect(here.headers['retry-after']).toBe('1');
      const there = await replica.as(owner.token).post(base).set('Idempotency-Key', 'in-flight').send({ name: 'slow' });
      expect(there.status).toBe(409);
      expect(there.body.message).toMatch(/still being processed/);
      await locker.query('ROLLBACK');
      expect((await first).status).toBe(200);
      const later = await replica.as(owner.token).post(base).set('Idempotency-Key', 'in-flight').send({ name: 'slow' });
      expect(later.headers['idempotent-replayed']).toBe('true');
      expect(await count(t, `SELECT count(*) AS n FROM environments WHERE slug = 'slow'`)).toBe(1);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
      await admin.end();
      await replica.close();
    }
  });
});

describe('Idempotency-Key after a 503 whose change committed', () => {
  jest.setTimeout(60_000);
  let t: TestApp;
  let proxy: TcpProxy;
  let owner: TestUser;

  beforeAll(async () => {
    const url = await createTestDatabase();
    const u = new URL(url);
    proxy = new TcpProxy(u.hostname, Number(u.port));
    await proxy.start();
    t = await startTestApp({}, proxy.wrap(url));
    owner = await t.createUser('commit-owner');
    await t.insertOrganisation('keys', [{ user: owner, role: 'OWNER' }]);
  });
  afterAll(async () => {
    await t.close();
    await proxy.stop();
  });

  it('the connection dies after COMMIT: 503, and the retry with the key gets the original answer; one row changed once, one audit row', async () => {
    await t.as(owner.token).post(base).send({ name: 'staging' }).expect(200);
    await t.as(owner.token).get(base).expect(200); // the token's last use is recorded before the trap is armed

    proxy.dropAtNextCommit();
    const lost = await t.as(owner.token).patch(`${base}/staging`).set('Idempotency-Key', 'after-commit').send({ description: 'committed' });
    expect(lost.status).toBe(503);
    expect(lost.headers['retry-after']).toBe('2');
    // It did commit, with its key.
    expect((await t.db.query(`SELECT description FROM environments WHERE slug = 'staging'`))[0].description).toBe('committed');

    const retry = await t.as(owner.token).patch(`${base}/staging`).set('Idempotency-Key', 'after-commit').send({ description: 'committed' });
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toEqual(expect.objectContaining({ name: 'staging', description: 'committed' }));
    expect(await count(t, `SELECT count(*) AS n FROM audit_events WHERE type = 'ENVIRONMENT_UPDATED' AND environment_slug = 'staging'`)).toBe(1);

    // The same with a create: one environment, one audit row, the original identity.
    proxy.dropAtNextCommit();
    const lostCreate = await t.as(owner.token).post(base).set('Idempotency-Key', 'create-after-commit').send({ name: 'prod' });
    expect(lostCreate.status).toBe(503);
    const retryCreate = await t.as(owner.token).post(base).set('Idempotency-Key', 'create-after-commit').send({ name: 'prod' });
    expect(retryCreate.status).toBe(200);
    expect(retryCreate.headers['idempotent-replayed']).toBe('true');
    const [row] = await t.db.query(`SELECT identity FROM environments WHERE slug = 'prod'`);
    expect(retryCreate.body.identity).toBe(row.identity);
    expect(await count(t, `SELECT count(*) AS n FROM environments WHERE slug = 'prod'`)).toBe(1);
    expect(await count(t, `SELECT count(*) AS n FROM audit_events WHERE type = 'ENVIRONMENT_CREATED' AND environment_slug = 'prod'`)).toBe(1);
  });
});

describe('Idempotency-Key on a change that answers after its COMMIT (the cluster PATCH, @OwnTransaction)', () => {
  jest.setTimeout(60_000);
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('stores the answer right after COMMIT and replays it; an answer lost in between makes the retry run again, changing nothing', async () => {
    const { createOrgFixture, clustersPath, clusterBody } = await import('../clusters/cluster-fixtures');
    const f = await createOrgFixture(t);
    const member = f.users.member.token;
    await t.as(member).post(clustersPath(f)).send(clusterBody(f, { name: 'keyed' })).expect(200);
    const path = `${clustersPath(f)}/keyed`;
    const updates = () =>
      count(t, `SELECT count(*) AS n FROM audit_events WHERE type = 'CLUSTER_UPDATED' AND cluster_slug = 'keyed' AND organisation_id = $1`, [f.orgId]);

    const first = await t.as(member).patch(path).set('Idempotency-Key', 'cluster-1').send({ description: 'keyed once' });
    expect(first.status).toBe(200);
    expect(await updates()).toBe(1);
    const replay = await t.as(member).patch(path).set('Idempotency-Key', 'cluster-1').send({ description: 'keyed once' });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(first.body);

    // As if the process had died between the COMMIT and storing the answer: the row holds no answer.
    await t.db.query(`UPDATE idempotency_keys SET status = NULL, answer = NULL WHERE idempotency_key = 'cluster-1'`);
    const rerun = await t.as(member).patch(path).set('Idempotency-Key', 'cluster-1').send({ description: 'keyed once' });
    expect(rerun.status).toBe(200);
    expect(rerun.headers['idempotent-replayed']).toBeUndefined();
    expect(rerun.body.description).toBe('keyed once');
    expect(await updates()).toBe(1); // the change was made once
    const again = await t.as(member).patch(path).set('Idempotency-Key', 'cluster-1').send({ description: 'keyed once' });
    expect(again.headers['idempotent-replayed']).toBe('true');
  });
});
