import { generateKeyPair } from 'jose';
import { TestIssuer } from '../support/jwks-server';
import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';

describe('OIDC bearer tokens', () => {
  const issuer = new TestIssuer();
  let t: TestApp;

  beforeAll(async () => {
    await issuer.start();
    t = await startTestApp({ OIDC_ISSUER_URL: issuer.url, OIDC_AUDIENCE: 'cms-api' });
  });
  afterAll(async () => {
    await t.close();
    await issuer.stop();
  });

  const call = (jwt: string) => t.http().get('/sts/v1/personal-access-tokens').set('Authorization', `Bearer ${jwt}`);
  const refused = async (jwt: string, message: RegExp) => {
    const res = await call(jwt);
    expect(res.status).toBe(401);
    expectErrorBody(res.body, 401);
    expect(res.body.message).toMatch(message);
  };

  it('accepts a valid token and creates the unknown subject as a user, once', async () => {
    // An unverified address is not taken (anyone may claim any address at some issuers).
    const unverified = await issuer.sign({ sub: 'subject-unverified', email: 'ceo@example.com', email_verified: false });
    await call(unverified).expect(200);
    const [u] = await t.db.query(`SELECT email FROM users WHERE oidc_id = 'subject-unverified'`);
    expect(u.email).toBe('subject-unverified@oidc.invalid');

    const jwt = await issuer.sign({ sub: 'subject-123', email: 'carol@example.com', email_verified: true, preferred_username: 'carol' });
    await call(jwt).expect(200);
    await call(jwt).expect(200);
    const users = await t.db.query(`SELECT username, email, oidc_id FROM users WHERE oidc_id = 'subject-123'`);
    expect(users).toEqual([{ username: 'carol', email: 'carol@example.com', oidc_id: 'subject-123' }]);
    // The OIDC user can provision a PAT for itself.
    const pat = await t.http().post('/sts/v1/personal-access-tokens').set('Authorization', `Bearer ${jwt}`).send({ name: 'from-oidc' });
    expect(pat.status).toBe(200);
    await t.as(pat.body.token).get('/sts/v1/personal-access-tokens').expect(200);
  });

  it('refuses an expired token', async () => {
    const jwt = await issuer.sign({ sub: 'subject-123' }, { expiresIn: Math.floor(Date.now() / 1000) - 120 });
    const res = await call(jwt);
    expect(res.status).toBe(401);
    expectErrorBody(res.body, 401);
    expect(res.body.message).toMatch(/expired/);
  });

  it('refuses a token signed with another key', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const res = await call(await issuer.sign({ sub: 'subject-123' }, { key: privateKey }));
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/signature/);
  });

  it('refuses a token for another audience or issuer', async () => {
    const aud = await call(await issuer.sign({ sub: 'subject-123' }, { audience: 'someone-else' }));
    expect(aud.status).toBe(401);
    expect(aud.body.message).toMatch(/aud/);
    const iss = await call(await issuer.sign({ sub: 'subject-123' }, { issuer: 'https://evil.example.com' }));
    expect(iss.status).toBe(401);
  });

  it('refuses a token without exp, or issued or valid only more than 60 s ahead, naming the claim', async () => {
    const now = Math.floor(Date.now() / 1000);
    await refused(await issuer.sign({ sub: 'subject-123' }, { expiresIn: null }), /has no claim 'exp' \(expiry\)/);
    await refused(await issuer.sign({ sub: 'subject-123' }, { issuedAt: now + 3600, expiresIn: now + 7200 }), /claim 'iat' \(issued at\) is more than 60 s in the future/);
    await refused(await issuer.sign({ sub: 'subject-123' }, { notBefore: now + 3600 }), /claim 'nbf' \(not before\) is more than 60 s in the future/);
    await refused(await issuer.sign({ sub: 'subject-123' }, { expiresIn: now - 90 }), /expired/);
    // Within the 60 s skew: accepted (an issuer's clock a little ahead, a token just expired).
    await call(await issuer.sign({ sub: 'subject-123' }, { issuedAt: now + 30, notBefore: now + 30 })).expect(200);
    await call(await issuer.sign({ sub: 'subject-123' }, { expiresIn: now - 20 })).expect(200);
  });

  it('refuses a token valid for longer than OIDC_MAX_TOKEN_LIFETIME_SECONDS (default 24 h): exp - iat, or exp - now without iat', async () => {
    const now = Math.floor(Date.now() / 1000);
    // The audit's token: valid for ten years.
    await refused(await issuer.sign({ sub: 'subject-123' }, { expiresIn: '3650d' }), /valid for 315360000 s \('exp' - 'iat'\), longer than the 86400 s this service accepts \(OIDC_MAX_TOKEN_LIFETIME_SECONDS\)/);
    await refused(await issuer.sign({ sub: 'subject-123' }, { issuedAt: now - 3600, expiresIn: now + 86400 }), /valid for 90000 s \('exp' - 'iat'\)/);
    await refused(await issuer.sign({ sub: 'subject-123' }, { issuedAt: null, expiresIn: now + 86400 + 600 }), /valid for 8\d{4} s \('exp' - now, as it has no 'iat'\)/);
    // At the bound, and without iat within it: accepted.
    await call(await issuer.sign({ sub: 'subject-123' }, { issuedAt: now, expiresIn: now + 86400 })).expect(200);
    await call(await issuer.sign({ sub: 'subject-123' }, { issuedAt: null, expiresIn: now + 3600 })).expect(200);
  });

  it('applies a configured maximum lifetime', async () => {
    const short = await startTestApp({ OIDC_ISSUER_URL: issuer.url, OIDC_AUDIENCE: 'cms-api', OIDC_MAX_TOKEN_LIFETIME_SECONDS: '600' });
    try {
      const get = (jwt: string) => short.http().get('/sts/v1/personal-access-tokens').set('Authorization', `Bearer ${jwt}`);
      const res = await get(await issuer.sign({ sub: 'subject-123' }, { expiresIn: '15m' }));
      expect(res.status).toBe(401);
      expect(res.body.message).toMatch(/valid for 900 s .*longer than the 600 s/);
      await get(await issuer.sign({ sub: 'subject-123' }, { expiresIn: '5m' })).expect(200);
    } finally {
      await short.close();
    }
  });

  it('refuses a token without subject', async () => {
    const res = await call(await issuer.sign({}));
    expect(res.status).toBe(401);
  });
});
