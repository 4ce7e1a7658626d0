import * as fs from 'fs';
import * as path from 'path';
import { startTestApp, TestApp } from '../support/test-app';
import { syncResponseOverrides } from './spectral-ruleset';

/**
 * The OpenAPI document is the user's manual: every operation documents its summary, success answer,
 * errors and parameters. The generated document is committed (docs/openapi.json) and must match the
 * code; `npm run openapi:generate` rewrites it after an intended API change.
 */
const COMMITTED = path.resolve(__dirname, '../../docs/openapi.json');

type Operation = {
  summary?: string;
  responses: Record<string, unknown>;
  parameters?: { in: string; name: string; required?: boolean }[];
  security?: unknown[];
  requestBody?: unknown;
};

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };

  beforeAll(async () => {
    t = await startTestApp();
    doc = (await t.http().get('/v3/api-docs').expect(200)).body;
  });
  afterAll(() => t.close());

  it('documents every operation: summary, a success answer, errors and every path parameter', () => {
    const problems: string[] = [];
    for (const [p, methods] of Object.entries(doc.paths)) {
      const pathParams = [...p.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      for (const [method, op] of Object.entries(methods)) {
        const id = `${method.toUpperCase()} ${p}`;
        if (!op.summary) problems.push(`${id}: no summary`);
        const codes = Object.keys(op.responses ?? {});
        if (!codes.some((c) => /^2\d\d$/.test(c))) problems.push(`${id}: no 2xx response`);
        if (!codes.some((c) => /^4\d\d$/.test(c)) && !p.startsWith('/health')) problems.push(`${id}: no 4xx response`);
        for (const name of pathParams) {
          if (!(op.parameters ?? []).some((x) => x.in === 'path' && x.name === name)) problems.push(`${id}: path parameter ${name} undocumented`);
        }
        if (['post', 'patch', 'put'].includes(method) && op.responses['200'] === undefined && op.responses['204'] === undefined) {
          problems.push(`${id}: POST/PATCH/PUT answers neither 200 nor 204`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('covers the interface paths of the spec', () => {
    const required = [
      'get /api/v1/compute-information/organisation/{organisationSlug}',
      'post /api/v1/organisations',
      'delete /api/v1/organisations/{organisationIdentity}',
      'get /api/v1/organisations/{organisationSlug}/activity',
      'get /api/v1/memberships',
      'get /api/v1/orgs/{organisationSlug}/cloud-accounts',
      'post /api/v1/orgs/{organisationSlug}/cloud-accounts/{cloudAccountIdentity}/credentials/platform_1',
      'get /api/v1/environments/types',
      'post /api/v1/orgs/{organisationSlug}/environments/{environmentSlug}/members/{memberIdentity}',
      'get /api/v1/cloud-providers/{cloudProviderSlug}/nodetypes',
      'patch /api/v1/organisations/{organisationSlug}/maintenance-schedule/{maintenanceScheduleIdentity}',
      'post /api/v1/orgs/{organisationSlug}/environments/{environmentSlug}/metrics/alerting/default-rules',
      'get /api/v1/orgs/{organisationSlug}/observability/{tenantSlug}',
      'patch /api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}',
      'get /api/v1/cluster-versions/{version}/available-upgrades',
      'delete /api/v1/orgs/{organisationSlug}/scheduled-cluster-upgrades/{scheduledClusterUpgradeIdentity}',
      'get /api/v1/orgs/{organisationSlug}/audit-events/{environmentSlug}/{cluster}',
      'delete /sts/v1/personal-access-tokens/{token_id}',
      'post /api/v1/user/add',
      'get /api/v1/users/search',
    ];
    const present = new Set(Object.entries(doc.paths).flatMap(([p, m]) => Object.keys(m).map((k) => `${k} ${p}`)));
    expect(required.filter((r) => !present.has(r))).toEqual([]);
  });

  it('matches the committed document (docs/openapi.json); run `npm run openapi:generate` after an API change', () => {
    const generated = JSON.stringify(doc, null, 2) + '\n';
    if (process.env.UPDATE_OPENAPI === '1') {
      fs.writeFileSync(COMMITTED, generated);
      // The lint ruleset's overrides for answers follow the document (.spectral.yaml, openapi-lint.spec.ts).
      syncResponseOverrides(doc as never, true);
    }
    expect(fs.existsSync(COMMITTED)).toBe(true);
    expect(JSON.parse(fs.readFileSync(COMMITTED, 'utf8'))).toEqual(doc);
  });
});
