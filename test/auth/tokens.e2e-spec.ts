import { hashToken } from '../../src/tokens/tokens.service';
import { ADMIN_TOKEN, expectErrorBody, startTestApp, TestApp, TestUser } from '../support/test-app';

describe('personal access tokens (/sts/v1)', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;

  beforeAll(async () => {
    t = await startTestApp({ TRUST_PROXY: '1' });
    alice = await t.createUser('alice');
    bob = await t.createUser('bob');
  });
  afterAll(() => t.close());

  it('provisions a token shown once, stores only its hash, and accepts both header schemes', async () => {
    const res = await t.as(alice.token).post('/sts/v1/personal-access-tokens').send({ name: 'ci', type: { name: 'FULL_ACCESS' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'ci', active: true, type: { name: 'FULL_ACCESS' }, subject: alice.identity, ipRestriction: null, lastUsedAt: null });
    const token: string = res.body.token;
    expect(token).toMatch(/^cms_[A-Za-z0-9_-]{43}$/);
    const expireAt = new Date(res.body.expireAt).getTime();
    expect(Math.round((expireAt - Date.now()) / 86400000)).toBe(90);

    const [row] = await t.db.query('SELECT token_hash FROM personal_access_tokens WHERE identity = $1', [res.body.id]);
    expect(row.token_hash).toBe(hashToken(token));
    const raw = await t.db.query(`SELECT count(*)::int AS n FROM personal_access_tokens WHERE token_hash = $1 OR name = $1`, [token]);
    expect(raw[0].n).toBe(0);

    const viaToken = await t.http().get('/sts/v1/personal-access-tokens').set('Authorization', `Token ${token}`);
    expect(viaToken.status).toBe(200);
    const listed = viaToken.body.find((x: { id: string }) => x.id === res.body.id);
    expect(listed.token).toBeNull();
    expect(listed.lastUsedAt).not.toBeNull();
    const viaBearer = await t.http().get('/sts/v1/personal-access-tokens').set('Authorization', `Bearer ${token}`);
    expect(viaBearer.status).toBe(200);

    const audit = await t.db.query(`SELECT type, details FROM audit_events WHERE referenced_entity_identity = $1`, [res.body.id]);
    expect(audit).toHaveLength(1);
    expect(audit[0].type).toBe('PERSONAL_ACCESS_TOKEN_PROVISIONED');
    expect(JSON.stringify(audit[0].details)).not.toContain(token);
  });

  it('updates lastUsedAt at most once a minute', async () => {
    const res = await t.as(alice.token).post('/sts/v1/personal-access-tokens').send({ name: 'throttle' });
    const token = res.body.token;
    await t.as(token).get('/sts/v1/personal-access-tokens').expect(200);
    const [first] = await t.db.query('SELECT last_used_at FROM personal_access_tokens WHERE identity = $1', [res.body.id]);
    await t.as(token).get('/sts/v1/personal-access-tokens').expect(200);
    const [second] = await t.db.query('SELECT last_used_at FROM personal_access_tokens WHERE identity = $1', [res.body.id]);
    expect(second.last_used_at.getTime()).toBe(first.last_used_at.getTime());
    t.clock.advance(61_000);
    await t.as(token).get('/sts/v1/personal-access-tokens').expect(200);
    const [third] = await t.db.query('SELECT last_used_at FROM personal_access_tokens WHERE identity = $1', [res.body.id]);
    expect(third.last_used_at.getTime()).toBeGreaterThan(first.last_used_at.getTime());
    t.clock.set(null);
  });

  it('READ_ONLY tokens may GET but not POST', async () => {
    const res = await t.as(alice.token).post('/sts/v1/personal-access-tokens').send({ name: 'ro', type: { name: 'READ_ONLY' } });
    expect(res.body.type).toEqual({ name: 'READ_ONLY' });
    await t.as(res.body.token).get('/sts/v1/personal-access-tokens').expect(200);
    const post = await t.as(res.body.token).post('/sts/v1/personal-access-tokens').send({ name: 'x' });
    expect(post.status).toBe(403);
    expectErrorBody(post.body, 403);
    expect(post.body.message).toMatch(/READ_ONLY/);
  });

  it('revocation is immediate, and a token is 401 afterwards', async () => {
    const res = await t.as(alice.token).post('/sts/v1/personal-access-tokens').send({ name: 'temp' });
    await t.as(res.body.token).get('/sts/v1/personal-access-tokens').expect(200);
    const del = await t.as(alice.token).delete(`/sts/v1/personal-access-tokens/${res.body.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ message: 'Personal access token revoked', status: 200 });
    const after = await t.as(res.body.token).get('/sts/v1/personal-access-tokens');
    expect(after.status).toBe(401);
    expect(after.body.message).toMatch(/revoked/);
    const listed = (await t.as(alice.token).get('/sts/v1/personal-access-tokens')).body.find((x: { id: string }) => x.id === res.body.id);
    expect(listed.active).toBe(false);
    const audit = await t.db.query(`SELECT type FROM audit_events WHERE referenced_entity_identity = $1 ORDER BY id`, [res.body.id]);
    expect(audit.map((a: { type: string }) => a.type)).toEqual(['PERSONAL_ACCESS_TOKEN_PROVISIONED', 'PERSONAL_ACCESS_TOKEN_REVOKED']);
  });

  it("someone else's token is 404 and stays active", async () => {
    const res = await t.as(alice.token).post('/sts/v1/personal-access-tokens').send({ name: 'mine' });
    const del = await t.as(bob.token).delete(`/sts/v1/personal-access-tokens/${res.body.id}`);
    expect(del.status).toBe(404);
    expectErrorBody(del.body, 404);
    await t.as(res.body.token).get('/sts/v1/personal-access-tokens').expect(200);
    const bobs = await t.as(bob.token).get('/sts/v1/personal-access-tokens');
    expect(bobs.body.map((x: { id: string }) => x.id)).not.toContain(res.body.id);
  });

  it('expired tokens are 401', async () => {
    const res = await t.as(alice.token).post('/sts/v1/personal-access-tokens').send({
      name: 'short',
      expireAt: new Date(Date.now() + 3600_000).toISOString(),
    });
    expect(res.status).toBe(200);
    await t.as(res.body.token).get('/sts/v1/personal-access-tokens').expect(200);
    t.clock.advance(2 * 3600_000);
    const after = await t.as(res.body.token).get('/sts/v1/personal-access-tokens');
    t.clock.set(null);
    expect(after.status).toBe(401);
    expect(after.body.message).toMatch(/expired/);
  });

  it('enforces the IP restriction against the client address', async () => {
    const res = await t.as(alice.token).post('/sts/v1/personal-access-tokens').send({ name: 'ip', ipRestriction: '10.0.0.0/8, 192.0.2.1' });
    expect(res.body.ipRestriction).toBe('10.0.0.0/8, 192.0.2.1');
    const outside = await t.as(res.body.token).get('/sts/v1/personal-access-tokens');
    expect(outside.status).toBe(401);
    expect(outside.body.message).toMatch(/address/);
    const inside = await t.as(res.body.token).get('/sts/v1/personal-access-tokens').set('X-Forwarded-For', '10.20.30.40');
    expect(inside.status).toBe(200);
    // A forged first hop does not count: with one trusted proxy only the address it added (the last) does.
    const forged = await t
      .as(res.body.token)
      .get('/sts/v1/personal-access-tokens')
      .set('X-Forwarded-For', '10.9.9.9, 203.0.113.7');
    expect(forged.status).toBe(401);
  });

  it.each([
    [{ ipRestriction: 'not-an-ip' }, 'ipRestriction'],
    [{ type: { name: 'ROOT' } }, 'type.name'],
    [{ expireAt: new Date(Date.now() - 1000).toISOString() }, 'expireAt'],
    [{ expireAt: new Date(Date.now() + 400 * 86400000).toISOString() }, 'expireAt'],
    [{ name: '' }, 'name'],
    [{ unknown: 1 }, 'unknown'],
  ])('refuses %j with 400 naming %s', async (body, field) => {
    const countAudit = async () => (await t.db.query('SELECT count(*)::int AS n FROM audit_events'))[0].n;
    const before = await countAudit();
    const res = await t.as(alice.token).post('/sts/v1/personal-access-tokens?fieldValidation=Strict').send(body);
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 400);
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    expect(await countAudit()).toBe(before);
  });

  it('answers 401 with the error body for missing, malformed and unknown credentials', async () => {
    for (const header of [undefined, 'Basic abc', 'Token nope', 'Bearer nope']) {
      const r = t.http().get('/sts/v1/personal-access-tokens');
      const res = await (header ? r.set('Authorization', header) : r);
      expect(res.status).toBe(401);
      expectErrorBody(res.body, 401);
      expect(res.body.path).toBe('/sts/v1/personal-access-tokens');
    }
  });

  it('the bootstrap admin token works', async () => {
    await t.as(ADMIN_TOKEN).get('/sts/v1/personal-access-tokens').expect(200);
  });
});
