import { ModulesContainer } from '@nestjs/core';
import { seedCluster, seedEnvironment, seedOrg, SeededOrg } from '../observability/fixtures';
import { startTestApp, TestApp } from '../support/test-app';
import { contradictions, declaredRoutes, DeclaredRoute, DocumentedOperation } from './operation-claims';

type RequestBodyDoc = { content?: Record<string, { examples?: Record<string, { value: unknown }>; example?: unknown }> };
type Parameter = { name: string; in: string; required?: boolean; example?: unknown; schema?: { example?: unknown } };

/**
 * Each operation is documented on its handler, and the facts its code declares are generated into the document
 * (src/common/route-docs.ts). This walks every operation of the running service's document against its route:
 * the text may not contradict the guards or the paging declaration (operation-claims.ts). Then it calls every
 * list that declares paging and checks the declaration against what the list does: the page form it answers
 * and the sort allow-list its 400 names.
 */
describe('operation documentation against the code', () => {
  let t: TestApp;
  let org: SeededOrg;
  let routes: Map<string, DeclaredRoute>;
  let doc: { paths: Record<string, Record<string, DocumentedOperation & { parameters?: Parameter[]; requestBody?: RequestBodyDoc }>> };
  const identities: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp();
    org = await seedOrg(t, 'acme');
    const env = await seedEnvironment(t, org.id, 'production');
    await seedCluster(t, org.id, env, 'web');
    const [account] = await t.db.query(`SELECT identity FROM cloud_accounts WHERE organisation_id = $1`, [org.id]);
    identities.cloudAccountIdentity = account.identity;
    const hook = await t
      .as(org.users.OWNER.token)
      .post('/api/v1/orgs/acme/webhooks')
      .send({ url: 'http://127.0.0.1:9/hook', eventTypes: ['CLUSTER_CREATED'] })
      .expect(200);
    identities.webhookIdentity = hook.body.identity;
    const policy = await t
      .as(org.users.OWNER.token)
      .post('/api/v1/orgs/acme/cluster-policies')
      .send({ name: 'ha', expression: 'object.highlyAvailable', message: 'highly available', action: 'Audit' })
      .expect(200);
    identities.policyIdentity = policy.body.identity;
    routes = declaredRoutes(t.app.get(ModulesContainer));
    doc = (await t.http().get('/v3/api-docs').expect(200)).body;
  });
  afterAll(() => t.close());

  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ key: `${method} ${path}`, op })));

  it('every operation says only what its guards, paging declaration and answers say too', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const { key, op } of operations()) {
      const route = routes.get(key);
      if (!route) {
        problems.push(`${key}: no route declares it`);
        continue;
      }
      checked++;
      for (const p of contradictions(op, route)) problems.push(`${key} (${op.operationId}): ${p}`);
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(130);
  });

  it('every paging declaration is what its list does: the page form, and the sort properties its 400 names', async () => {
    const paged = [...routes.values()].filter((r) => r.paging);
    expect(paged.length).toBeGreaterThan(25);
    const problems: string[] = [];
    for (const route of paged) {
      const op = doc.paths[route.path][route.method];
      let url = route.path;
      for (const p of (op.parameters ?? []).filter((x) => x.in === 'path')) {
        const value = identities[p.name] ?? p.example ?? p.schema?.example;
        url = url.replace(`{${p.name}}`, encodeURIComponent(String(value)));
      }
      const required = (op.parameters ?? []).filter((p) => p.in === 'query' && p.required).map((p) => `${p.name}=acme`);
      // Organisation routes as the organisation's owner, the rest as the platform administrator.
      const as = route.orgRole ? t.as(org.users.OWNER.token) : t.admin();
      // A paged POST (a query that needs a body, e.g. trying a policy) is sent with its first documented example.
      const json = op.requestBody?.content?.['application/json'];
      const body = json?.example ?? Object.values(json?.examples ?? {})[0]?.value;
      const call = (query: string[]) => (route.method === 'post' ? as.post(`${url}?${query.join('&')}`).send(body as object) : as.get(`${url}?${query.join('&')}`));
      const page = await call(required);
      const refused = await call([...required, 'sort=noSuchProperty']);
      const form = Array.isArray(page.body?.sort) ? 'B' : page.body?.sort && 'sorted' in page.body.sort ? 'A' : '?';
      const names = /use one of: (.*)$/.exec(refused.body?.errors?.[0]?.message ?? '')?.[1];
      const { form: declaredForm, sortable } = route.paging!;
      if (page.status !== 200) problems.push(`${route.operationId}: ${route.method.toUpperCase()} ${url} answered ${page.status}`);
      else if (form !== declaredForm) problems.push(`${route.operationId}: declares form ${declaredForm}, answers form ${form}`);
      if (refused.status !== 400 || names !== sortable.join(', ')) {
        problems.push(`${route.operationId}: declares sortable ${sortable.join(', ')}, the list accepts ${names ?? `(answered ${refused.status})`}`);
      }
    }
    expect(problems).toEqual([]);
  });
});
