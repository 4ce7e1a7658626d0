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
    // As it stands it names the demo cluster `web`, which exists: the answer says so.
    const taken = await t.admin().post('/api/v1/orgs/acme/clusters/production').send(example);
    expect(taken.status).toBe(409);
    expect(taken.body.message).toContain("'web' already exists");
    const res = await t.admin().post('/api/v1/orgs/acme/clusters/production').send({ ...example, name: 'example' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'example', region: example.region, version: example.version, status: 'new' });
  });
});
