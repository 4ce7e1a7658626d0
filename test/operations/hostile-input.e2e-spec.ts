import fc from 'fast-check';
import { ADMIN_TOKEN, startTestApp, TestApp } from '../support/test-app';

/**
 * Property-based hostile input: every operation of the OpenAPI document receives generated malformed
 * bodies, query strings and path values. The service must never answer 5xx, never crash, and always
 * answer errors with the error body.
 */

interface Operation {
  method: string;
  path: string;
  pathParams: string[];
  queryParams: string[];
}

const SQLI = ["' OR '1'='1", "'; DROP TABLE clusters; --", '1; SELECT pg_sleep(5)', "\\' UNION SELECT * FROM users --", '%27%20OR%201=1'];
const NASTY = ['', ' ', '..', '../../etc/passwd', '%00', '\u0000', '😀'.repeat(50), 'a'.repeat(5000), '-1', '1e309', 'NaN', 'null', 'true', '{}', '[]', '00000000-0000-0000-0000-000000000000'];

const pathValue = (validSlug: string) =>
  fc.oneof(
    fc.constantFrom(...SQLI, ...NASTY.filter((v) => v !== '' && v !== '..' && !v.includes('/'))),
    fc.uuid(),
    fc.string({ minLength: 1, maxLength: 80 }),
    fc.constant(validSlug),
  );

const queryValue = fc.oneof(
  fc.constantFrom(...SQLI, ...NASTY),
  fc.string({ maxLength: 200 }),
  fc.integer().map(String),
  fc.double().map(String),
);

const jsonBody = fc.oneof(
  fc.anything({ maxDepth: 3 }),
  fc.object({ maxDepth: 3 }),
  fc.dictionary(fc.constantFrom('name', 'displayName', 'version', 'nodePools', 'windows', 'type', 'email', 'cidr', 'status', 'kubernetesRole', 'role', 'day', 'url', 'apiToken', 'credentials', 'metadata', 'addons', 'ipWhitelist'), fc.anything({ maxDepth: 2 })),
  fc.constantFrom(...SQLI).map((s) => ({ name: s, displayName: s, organisationName: s, username: s })),
);

function encodeSegment(v: string): string {
  return encodeURIComponent(v);
}

describe('hostile input against every operation', () => {
  let t: TestApp;
  let operations: Operation[] = [];
  const orgSlug = 'fuzz-org';
  const failures: string[] = [];

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '0' });
    const [admin] = await t.db.query(`SELECT id FROM users WHERE username = 'admin'`);
    await t.insertOrganisation(orgSlug, [{ user: { ...admin, identity: '', username: 'admin', email: '', token: '' }, role: 'OWNER', kubernetesRole: 'CLUSTER_ADMIN' }], {
      name: 'Fuzz Org',
    });
    const doc = (await t.http().get('/v3/api-docs')).body as { paths: Record<string, Record<string, { parameters?: { in: string; name: string }[] }>> };
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const params = op.parameters ?? [];
        operations.push({
          method: method.toUpperCase(),
          path,
          pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
          queryParams: params.filter((p) => p.in === 'query').map((p) => p.name),
        });
      }
    }
    // Leave deletions of the seeded organisation out, so the rest keeps a valid target.
    operations = operations.filter((o) => !(o.method === 'DELETE' && o.path === '/api/v1/organisations/{organisationIdentity}'));
  });
  afterAll(async () => {
    await t.close();
  });

  function check(op: Operation, res: { status: number; body: unknown; text: string }, sent: string): void {
    const body = res.body as Record<string, unknown>;
    if (res.status >= 500) {
      failures.push(`${op.method} ${sent.slice(0, 160)} -> ${res.status} ${res.text.slice(0, 300)}`);
      return;
    }
    if (res.status >= 400) {
      const ok =
        body &&
        typeof body.timestamp === 'string' &&
        body.status === res.status &&
        typeof body.error === 'string' &&
        typeof body.message === 'string' &&
        typeof body.path === 'string';
      if (!ok) failures.push(`${op.method} ${sent.slice(0, 160)} -> ${res.status} without the error body: ${res.text.slice(0, 200)}`);
    }
  }

  it('answers no 5xx and well-formed errors to generated input on every operation', async () => {
    expect(operations.length).toBeGreaterThan(10);
    const runsPerOperation = Math.max(15, Math.ceil(3000 / operations.length));
    for (const op of operations) {
      await fc.assert(
        fc.asyncProperty(
          fc.array(pathValue(orgSlug), { minLength: op.pathParams.length, maxLength: op.pathParams.length }),
          fc.dictionary(fc.constantFrom(...(op.queryParams.length ? op.queryParams : ['page']), 'size', 'sort', 'page'), queryValue, { maxKeys: 4 }),
          jsonBody,
          fc.constantFrom('json', 'raw', 'none'),
          async (values, query, body, mode) => {
            let url = op.path;
            op.pathParams.forEach((name, i) => (url = url.replace(`{${name}}`, encodeSegment(values[i]))));
            const qs = new URLSearchParams(query as Record<string, string>).toString();
            const sent = qs ? `${url}?${qs}` : url;
            const agent = t.http();
            const method = op.method.toLowerCase() as 'get' | 'post' | 'patch' | 'put' | 'delete';
            let req = agent[method](sent).set('Authorization', `Token ${ADMIN_TOKEN}`);
            if (['POST', 'PATCH', 'PUT'].includes(op.method)) {
              if (mode === 'json') req = req.set('content-type', 'application/json').send(JSON.stringify(body) ?? 'null');
              else if (mode === 'raw') req = req.set('content-type', 'application/json').send('{"broken": ' + String(JSON.stringify(body)).slice(0, 40));
            }
            const res = await req;
            check(op, res, sent);
            return true;
          },
        ),
        { numRuns: runsPerOperation, seed: 42 },
      );
    }
    // Targeted: injection in well-formed requests, and oversized payloads.
    for (const s of SQLI) {
      const res = await t.admin().get(`/api/v1/users/search?username=${encodeURIComponent(s)}`);
      check({ method: 'GET', path: '/api/v1/users/search', pathParams: [], queryParams: [] }, res, 'search ' + s);
    }
    const huge = await t.admin().post('/sts/v1/personal-access-tokens').send({ name: 'x'.repeat(3 * 1024 * 1024) });
    expect(huge.status).toBe(413);
    const deep = await t.admin().post('/sts/v1/personal-access-tokens').set('content-type', 'application/json').send('['.repeat(100000) + ']'.repeat(100000));
    expect(deep.status).toBeLessThan(500);
    await t.http().get('/health').expect(200);
    const users = await t.db.query(`SELECT count(*)::int AS n FROM users`);
    expect(users[0].n).toBeGreaterThan(0);
    expect(failures.slice(0, 20)).toEqual([]);
  }, 600000);
});
