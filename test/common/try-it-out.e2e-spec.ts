import { DEMO_IDENTITIES } from '../../src/demo/demo-identities';
import { startTestApp, TestApp } from '../support/test-app';

type CreateOp = { requestBody: { content: Record<string, { examples: Record<string, { value: Record<string, unknown> }> }> } };

/**
 * Swagger UI's request examples on a fresh install (with the demo organisation). Every GET with its pre-filled
 * values is covered by test/demo/demo-data.e2e-spec.ts (and in a browser by `npm run test:browser`).
 */
describe('Try it out with the document examples', () => {
  let t: TestApp;
  let doc: { paths: Record<string, Record<string, unknown>> };

  beforeAll(async () => {
    t = await startTestApp({ DEMO_DATA: 'true' });
    doc = (await t.http().get('/v3/api-docs').expect(200)).body;
  });
  afterAll(() => t.close());

  it("the complete create-cluster example names the demo organisation's cloud account and works with another name", async () => {
    const op = doc.paths['/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}'].post as CreateOp;
    const example = op.requestBody.content['application/json'].examples.complete.value;
    expect(example.cloudAccountIdentity).toBe(DEMO_IDENTITIES.cloudAccount);
    // As it stands it works (the demo has `web`; the example is `api`); a second time the answer says the name is taken.
    const res = await t.admin().post('/api/v1/orgs/acme/clusters/production').send(example);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'api', region: example.region, version: example.version, status: 'new' });
    const taken = await t.admin().post('/api/v1/orgs/acme/clusters/production').send(example);
    expect(taken.status).toBe(409);
    expect(taken.body.message).toContain("'api' already exists");
  });

  it("Swagger UI's times are relative to when it is opened; the document keeps them as written", async () => {
    const silence = '/api/v1/orgs/{organisationSlug}/observability/{tenantSlug}/silences';
    const schemaOf = (d: { components: { schemas: Record<string, { properties: Record<string, { example?: string }> }> } }) => d.components.schemas.CreateSilenceRequest.properties;
    const written = schemaOf(doc as never);
    expect(written.endsAt.example).toBe('2026-11-23T12:00:00Z');
    const before = Date.now();
    const init = (await t.http().get('/swagger-ui/swagger-ui-init.js').expect(200)).text;
    // The document was written with 10:00 as now: the silence ends two hours after the page is opened (to the minute).
    const base = Date.parse('2026-11-23T10:00:00Z');
    const candidates = (ms: number) =>
      [0, 1].map((m) => new Date(base + (Math.floor((before - base) / 60_000) + m) * 60_000 + ms).toISOString().replace(/\.000Z$/, 'Z'));
    expect(init).not.toContain('"2026-11-23T12:00:00Z"');
    expect(candidates(2 * 3_600_000).some((c) => init.includes(`"${c}"`))).toBe(true);
    // The token example expires a month after the page was opened, so its Try it out works as it is.
    const expireAt = candidates(30 * 24 * 3_600_000).find((c) => init.includes(`"${c}"`));
    expect(expireAt).toBeDefined();
    expect(Object.keys(doc.paths)).toContain(silence);
    const made = await t.admin().post('/sts/v1/personal-access-tokens').send({ name: 'try', expireAt });
    expect(made.status).toBe(200);
  });
});
