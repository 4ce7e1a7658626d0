import { expectErrorBody, startTestApp, TestApp, TestUser } from '../support/test-app';

describe('users', () => {
  let t: TestApp;
  let plain: TestUser;

  beforeAll(async () => {
    t = await startTestApp();
    plain = await t.createUser('plainuser', { canCreateOrganisations: false });
  });
  afterAll(() => t.close());

  it('a platform admin adds a user and it is audited', async () => {
    const res = await t.admin().post('/api/v1/user/add').send({ email: 'dave@example.com', username: 'dave', canCreateOrganisations: true });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      canCreateOrganisations: true,
      createdAt: expect.any(String),
      email: 'dave@example.com',
      identity: expect.stringMatching(/^[0-9a-f-]{36}$/),
      oidcId: null,
      username: 'dave',
    });
    const audit = await t.db.query(`SELECT type, actor_username, details FROM audit_events WHERE referenced_entity_identity = $1`, [res.body.identity]);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ type: 'USER_ADDED', actor_username: 'admin' });
    expect(audit[0].details.username).toEqual({ old: null, new: 'dave' });
  });

  it('duplicate email or username is 409, case-insensitively', async () => {
    await t.admin().post('/api/v1/user/add').send({ email: 'erin@example.com', username: 'erin' }).expect(200);
    const dupName = await t.admin().post('/api/v1/user/add').send({ email: 'other@example.com', username: 'ERIN' });
    expect(dupName.status).toBe(409);
    expectErrorBody(dupName.body, 409);
    expect(dupName.body.message).toMatch(/username/);
    const dupMail = await t.admin().post('/api/v1/user/add').send({ email: 'Erin@Example.com', username: 'erin2' });
    expect(dupMail.status).toBe(409);
    expect(dupMail.body.message).toMatch(/email/);
  });

  it('only platform admins may add users', async () => {
    const res = await t.as(plain.token).post('/api/v1/user/add').send({ email: 'x@example.com', username: 'xxx' });
    expect(res.status).toBe(403);
    expectErrorBody(res.body, 403);
    await t.http().post('/api/v1/user/add').send({ email: 'x@example.com', username: 'xxx' }).expect(401);
    const rows = await t.db.query(`SELECT count(*)::int AS n FROM users WHERE username = 'xxx'`);
    expect(rows[0].n).toBe(0);
  });

  it.each([
    [{ email: 'not-an-email', username: 'valid' }, 'email'],
    [{ email: 'v@example.com', username: 'ab' }, 'username'],
    [{ email: 'v@example.com', username: 'has space' }, 'username'],
    [{ email: 'v@example.com', username: 'valid', platformAdmin: 'yes' }, 'platformAdmin'],
    [{ username: 'valid' }, 'email'],
  ])('refuses %j naming %s', async (body, field) => {
    const res = await t.admin().post('/api/v1/user/add').send(body);
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
  });

  describe('search', () => {
    beforeAll(async () => {
      // The searching user shares an organisation with the seven users it finds by prefix.
      const found: TestUser[] = [];
      for (let i = 0; i < 7; i++) found.push(await t.createUser(`searchme${i}`, { email: `s${i}@example.com` }));
      await t.insertOrganisation('search-org', [plain, ...found].map((user) => ({ user, role: 'MEMBER' as const })));
    });

    it('is not a public directory: prefixes match only co-members; exact username or email finds anyone', async () => {
      const loner = await t.createUser('lonely-searcher');
      const stranger = await t.createUser('stranger-danger', { email: 'Stranger@Example.com' });
      const prefix = await t.as(loner.token).get('/api/v1/users/search?username=searchme');
      expect(prefix.status).toBe(200);
      expect(prefix.body.totalElements).toBe(0);
      const own = await t.as(plain.token).get('/api/v1/users/search?username=stranger');
      expect(own.body.totalElements).toBe(0);
      const exact = await t.as(loner.token).get('/api/v1/users/search?username=Stranger-Danger');
      expect(exact.body.content).toEqual([{ username: stranger.username, email: stranger.email }]);
      const byEmail = await t.as(loner.token).get('/api/v1/users/search?username=stranger%40example.com');
      expect(byEmail.body.content).toEqual([{ username: stranger.username, email: stranger.email }]);
      const admin = await t.createUser('directory-admin', { platformAdmin: true });
      const all = await t.as(admin.token).get('/api/v1/users/search?username=stran');
      expect(all.body.totalElements).toBe(1);
    });

    it('matches by prefix and answers a form A page', async () => {
      const res = await t.as(plain.token).get('/api/v1/users/search?username=SEARCH&size=3&page=1');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        content: [
          { email: 's3@example.com', username: 'searchme3' },
          { email: 's4@example.com', username: 'searchme4' },
          { email: 's5@example.com', username: 'searchme5' },
        ],
        empty: false,
        first: false,
        last: false,
        number: 1,
        numberOfElements: 3,
        pageable: { offset: 3, pageNumber: 1, pageSize: 3, paged: true, sort: { empty: false, sorted: true, unsorted: false }, unpaged: false },
        size: 3,
        sort: { empty: false, sorted: true, unsorted: false },
        totalElements: 7,
        totalPages: 3,
      });
    });

    it('sorts, clamps the size to 500 and refuses unknown sort properties', async () => {
      const desc = await t.as(plain.token).get('/api/v1/users/search?username=searchme&sort=username,desc');
      expect(desc.body.content[0].username).toBe('searchme6');
      const big = await t.as(plain.token).get('/api/v1/users/search?username=searchme&size=100000');
      expect(big.body.size).toBe(500);
      expect(big.body.pageable.pageSize).toBe(500);
      const bad = await t.as(plain.token).get('/api/v1/users/search?username=searchme&sort=password,asc');
      expect(bad.status).toBe(400);
      expectErrorBody(bad.body, 400);
      expect(bad.body.errors[0].field).toBe('sort');
    });

    it('needs at least 3 characters and treats LIKE wildcards literally', async () => {
      const short = await t.as(plain.token).get('/api/v1/users/search?username=se');
      expect(short.status).toBe(400);
      expect(short.body.errors[0].field).toBe('username');
      const wild = await t.as(plain.token).get('/api/v1/users/search?username=%25%25%25');
      expect(wild.status).toBe(200);
      expect(wild.body.totalElements).toBe(0);
    });

    it('treats bad page parameters as Spring Data does (page 0, default size)', async () => {
      const res = await t.as(plain.token).get('/api/v1/users/search?username=searchme&page=-1&size=abc');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ number: 0, size: 50 });
    });
  });
});
