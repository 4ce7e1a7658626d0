import { seedCluster, seedEnvironment, seedOrg, SeededOrg } from '../observability/fixtures';
import { startTestApp, TestApp } from '../support/test-app';

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  example?: unknown;
  schema?: { example?: unknown; default?: unknown };
}

/**
 * Swagger UI's "Try it out" on every list operation, with nothing but the values the document pre-fills
 * (parameter examples and defaults), against an organisation that matches those examples
 * (acme / production / web). Lists addressed by a resource's UUID need a real one and are listed apart.
 */
describe('Try it out with the pre-filled values', () => {
  let t: TestApp;
  let org: SeededOrg;
  let doc: { paths: Record<string, Record<string, { parameters?: Parameter[]; responses: Record<string, unknown> }>> };

  beforeAll(async () => {
    t = await startTestApp();
    org = await seedOrg(t, 'acme');
    const env = await seedEnvironment(t, org.id, 'production');
    await seedCluster(t, org.id, env, 'web');
    doc = (await t.http().get('/v3/api-docs').expect(200)).body;
  });
  afterAll(() => t.close());

  it('answers 200 on every list operation whose parameters the document pre-fills', async () => {
    const tried: string[] = [];
    const needIdentity: string[] = [];
    const failures: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      const op = ops.get;
      if (!op || !/PageForm|"type":"array"/.test(JSON.stringify(op.responses['200'] ?? {}))) continue;
      const params = op.parameters ?? [];
      const prefill = (p: Parameter) => p.example ?? p.schema?.example ?? p.schema?.default;
      const missing = params.filter((p) => p.in === 'path' && prefill(p) === undefined);
      if (missing.length) {
        if (missing.some((p) => !/Identity$/.test(p.name))) failures.push(`GET ${path}: no example for ${missing.map((p) => p.name).join(', ')}`);
        else needIdentity.push(path);
        continue;
      }
      let url = path;
      for (const p of params.filter((x) => x.in === 'path')) url = url.replace(`{${p.name}}`, encodeURIComponent(String(prefill(p))));
      const query = params
        .filter((p) => p.in === 'query' && prefill(p) !== undefined)
        .flatMap((p) => {
          const v = prefill(p);
          return (Array.isArray(v) ? v : [v]).map((x) => `${encodeURIComponent(p.name)}=${encodeURIComponent(String(x))}`);
        });
      if (query.length) url += `?${query.join('&')}`;
      // Organisation routes as the organisation's owner, the rest as the platform administrator.
      const res = /\{organisationSlug\}/.test(path) && !path.startsWith('/admin') ? await t.as(org.users.OWNER.token).get(url) : await t.admin().get(url);
      tried.push(url);
      if (res.status !== 200) failures.push(`GET ${url}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    }
    expect(failures).toEqual([]);
    expect(tried.length).toBeGreaterThan(35);
    // Only lists under a specific resource (an account's clusters, a webhook's deliveries...) need its UUID.
    expect(needIdentity.length).toBeLessThan(6);
  });

  it('the complete create-cluster example works once cloudAccountIdentity is one of your accounts', async () => {
    const op = (doc.paths['/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}'] as unknown as Record<string, { requestBody: { content: Record<string, { examples: Record<string, { value: Record<string, unknown> }> }> } }>).post;
    const example = op.requestBody.content['application/json'].examples.complete.value;
    const [profile] = await t.db.query(`SELECT id, type FROM cloud_profiles WHERE type = 'platform_1' ORDER BY id LIMIT 1`);
    const [account] = await t.db.query(
      `INSERT INTO cloud_accounts (organisation_id, cloud_profile_id, cloud_provider_type, display_name, created_at, modified_at)
       VALUES ($1, $2, $3, 'Example account', now(), now()) RETURNING id, identity`,
      [org.id, profile.id, profile.type],
    );
    const [cred] = await t.db.query(
      `INSERT INTO cloud_credentials (cloud_account_id, display_name, cloud_type, secret_ciphertext, created_at, modified_at)
       VALUES ($1, 'deploy key', $2, 'v1.x.y.z', now(), now()) RETURNING id`,
      [account.id, profile.type],
    );
    await t.db.query(`UPDATE cloud_accounts SET primary_credentials_id = $2 WHERE id = $1`, [account.id, cred.id]);
    const res = await t.as(org.users.OWNER.token).post('/api/v1/orgs/acme/clusters/production').send({ ...example, name: 'example', cloudAccountIdentity: account.identity });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'example', region: example.region, version: example.version, status: 'new' });
  });
});
