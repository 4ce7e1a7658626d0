import { ADMIN_TOKEN, expectErrorBody, startTestApp, TestApp } from '../support/test-app';

describe('error bodies', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  it('malformed JSON is 400 with the error body', async () => {
    const res = await t.admin().post('/sts/v1/personal-access-tokens').set('content-type', 'application/json').send('{"name": ');
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 400);
    expect(res.body.message).toMatch(/JSON/);
    expect(res.body.path).toBe('/sts/v1/personal-access-tokens');
  });

  it('a wrong content type is 415 with the error body', async () => {
    const res = await t.admin().post('/sts/v1/personal-access-tokens').set('content-type', 'text/plain').send('name=x');
    expect(res.status).toBe(415);
    expectErrorBody(res.body, 415);
    // Without a Content-Type, or as a form, the message names the one the service reads.
    const bare = await t.admin().post('/sts/v1/personal-access-tokens').set('content-type', '').send(Buffer.from('{"name":"x"}'));
    const form = await t.admin().post('/sts/v1/personal-access-tokens').type('form').send('name=x');
    for (const r of [res, bare, form]) {
      expect(r.status).toBe(415);
      expect(r.body.message).toBe('Unsupported content type: send the body as JSON with the header Content-Type: application/json.');
    }
  });

  it('an unknown route is 404 with the error body', async () => {
    const res = await t.admin().get('/api/v1/does-not-exist');
    expect(res.status).toBe(404);
    expectErrorBody(res.body, 404);
    expect(res.body.path).toBe('/api/v1/does-not-exist');
  });

  it('an invalid path uuid is 400', async () => {
    const res = await t.admin().delete('/sts/v1/personal-access-tokens/not-a-uuid');
    expect(res.status).toBe(400);
    expectErrorBody(res.body, 400);
  });

  it('an oversized body is 413', async () => {
    const res = await t.admin().post('/sts/v1/personal-access-tokens').send({ name: 'x'.repeat(2 * 1024 * 1024) });
    expect(res.status).toBe(413);
    expectErrorBody(res.body, 413);
  });

  it('a 500 shows no internals', async () => {
    await t.db.query(`ALTER TABLE personal_access_tokens RENAME COLUMN name TO name_broken`);
    try {
      const res = await t.as(ADMIN_TOKEN).post('/sts/v1/personal-access-tokens').send({ name: 'boom' });
      expect(res.status).toBe(500);
      expectErrorBody(res.body, 500);
      expect(JSON.stringify(res.body)).not.toMatch(/name_broken|SELECT|INSERT|at .*\.ts/);
    } finally {
      await t.db.query(`ALTER TABLE personal_access_tokens RENAME COLUMN name_broken TO name`);
    }
  });

  it('health and docs are public', async () => {
    await t.http().get('/health').expect(200, { status: 'ok' });
    const ready = await t.http().get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ok');
    const docs = await t.http().get('/v3/api-docs');
    expect(docs.status).toBe(200);
    // User credentials, the alert webhook's own tenant token (Authorization: Bearer or X-Alert-Token), and node join tokens.
    expect(Object.keys(docs.body.components.securitySchemes).sort()).toEqual(['alertWebhookToken', 'alertWebhookTokenHeader', 'bearer', 'nodeJoinToken', 'token']);
    const ui = await t.http().get('/swagger-ui/');
    expect([200, 301, 302]).toContain(ui.status);
  });
});
