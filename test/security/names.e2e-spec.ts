import { hiddenCharacter } from '../../src/common/names';
import { expectErrorBody, startTestApp, TestApp, TestUser } from '../support/test-app';

const RLO = '\u202E';

type Schema = { properties?: Record<string, Record<string, unknown>>; [k: string]: unknown };

/** Component schemas reachable from request bodies. */
function requestSchemas(doc: { paths: Record<string, Record<string, { requestBody?: unknown }>>; components: { schemas: Record<string, Schema> } }): Set<string> {
  const out = new Set<string>();
  const walk = (n: unknown): void => {
    if (Array.isArray(n)) return n.forEach(walk);
    if (!n || typeof n !== 'object') return;
    for (const [k, v] of Object.entries(n)) {
      if (k === '$ref' && typeof v === 'string') {
        const name = v.split('/').pop()!;
        if (!out.has(name)) {
          out.add(name);
          walk(doc.components.schemas[name]);
        }
      } else walk(v);
    }
  };
  for (const item of Object.values(doc.paths)) for (const op of Object.values(item)) if (op && typeof op === 'object') walk(op.requestBody);
  return out;
}

describe('names refuse control and bidirectional formatting characters', () => {
  let t: TestApp;
  let owner: TestUser;
  const org = 'names-org';

  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.createUser('names-owner');
    await t.insertOrganisation(org, [{ user: owner, role: 'OWNER' }]);
  });
  afterAll(() => t.close());

  it('finds the first hidden character and where it is; joiners (scripts, emoji) are fine', () => {
    expect(hiddenCharacter(`invoice${RLO}fdp.exe`)).toEqual({ codePoint: 'U+202E', index: 7 });
    for (const c of ['\u202A', '\u202B', '\u202C', '\u202D', '\u2066', '\u2067', '\u2068', '\u2069', '\u200E', '\u200F', '\u061C', '\u200B', '\u2060', '\uFEFF', '\u0000', '\n', '\u007F', '\u0085'])
      expect(hiddenCharacter(`a${c}b`)).toEqual({ codePoint: `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`, index: 1 });
    for (const ok of ['Équipe Zürich', 'פרודקשן', 'مصنع', 'نامه\u200Cها', '👩\u200D💻 team', 'a-b_c.d (e)']) expect(hiddenCharacter(ok)).toBeNull();
  });

  it('every name or display name a request carries is declared plain text (or bounded to a pattern that refuses them)', async () => {
    const doc = (await t.http().get('/v3/api-docs')).body;
    const unchecked: string[] = [];
    for (const name of requestSchemas(doc)) {
      for (const [prop, schema] of Object.entries((doc.components.schemas[name] as Schema).properties ?? {})) {
        if (!/name$/i.test(prop)) continue;
        const pattern = typeof schema.pattern === 'string' ? new RegExp(schema.pattern, 'u') : null;
        const refused = schema['x-plain-text'] === true || Array.isArray(schema.enum) || (pattern !== null && !pattern.test(`a${RLO}b`));
        if (!refused) unchecked.push(`${name}.${prop}`);
        if (schema['x-plain-text']) expect(schema.description).toContain('U+202E');
      }
    }
    expect(unchecked).toEqual([]);
  });

  it.each<[string, string, (v: string) => Record<string, unknown>, string, string?]>([
    ['an organisation', '/api/v1/organisations', (v) => ({ organisationName: v }), 'organisationName'],
    ['an organisation rename', `/api/v1/organisations/${org}`, (v) => ({ organisationName: v }), 'organisationName', 'patch'],
    ['an environment', `/api/v1/orgs/${org}/environments`, (v) => ({ name: v }), 'name'],
    ['a cloud account', `/api/v1/orgs/${org}/cloud-accounts`, (v) => ({ cloudProfile: 'platform-1-default', displayName: v }), 'displayName'],
    ['a dashboard integration', `/api/v1/orgs/${org}/integrations/dashboard`, (v) => ({ name: v, url: 'https://dash.example.com', apiToken: 'x' }), 'name'],
    ['a maintenance schedule', `/api/v1/organisations/${org}/maintenance-schedule`, (v) => ({ name: v }), 'name'],
    ['a personal access token', '/sts/v1/personal-access-tokens', (v) => ({ name: v }), 'name'],
  ])('%s: 400 naming the field, the character and its position; nothing written', async (_what, path, body, field, method = 'post') => {
    const [{ n: before }] = await t.db.query('SELECT count(*)::int AS n FROM audit_events');
    for (const hidden of [RLO, '\u2066', '\u200B']) {
      const as = t.as(owner.token);
      const res = await (method === 'patch' ? as.patch(path) : as.post(path)).send(body(`prod${hidden}uction`));
      expect(res.status).toBe(400);
      expectErrorBody(res.body, 400);
      const error = (res.body.errors as { field: string; message: string }[]).find((e) => e.field === field);
      expect(error?.message).toMatch(new RegExp(`must not contain control or invisible formatting characters \\(U\\+${hidden.codePointAt(0)!.toString(16).toUpperCase()} at position 5\\)`));
    }
    const [{ n: after }] = await t.db.query('SELECT count(*)::int AS n FROM audit_events');
    expect(after).toBe(before);
  });

  it('accepts names in any script, with joiners', async () => {
    const res = await t.as(owner.token).post(`/api/v1/orgs/${org}/environments`).send({ name: 'Équipe 👩\u200D💻' });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe('Équipe 👩\u200D💻');
  });
});
