import * as fs from 'fs';
import createClient from 'openapi-fetch';
import { settle } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';
import type { paths } from './api-types';
import { CLIENT_TYPES, generateClientTypes } from './generate-types';

/**
 * A client generated from the OpenAPI document works: types by openapi-typescript, calls by openapi-fetch,
 * type-checked by `npm run typecheck` (this file is part of the project). Drives environment -> cloud
 * account -> credentials -> cluster -> started -> node pool -> delete against the running service.
 */
describe('a client generated from the OpenAPI document', () => {
  let t: TestApp;
  let client: ReturnType<typeof createClient<paths>>;
  let orgSlug: string;

  beforeAll(async () => {
    t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const owner = await t.createUser('generated-client-owner');
    orgSlug = (await t.insertOrganisation('generated', [{ user: owner, role: 'OWNER' }])).slug;
    client = createClient<paths>({ baseUrl: await t.app.getUrl(), headers: { Authorization: `Token ${owner.token}` } });
  });
  afterAll(() => t.close());

  it('uses types generated from the committed document (regenerate with npm run openapi:generate)', async () => {
    const generated = await generateClientTypes();
    if (process.env.UPDATE_OPENAPI) fs.writeFileSync(CLIENT_TYPES, generated);
    expect(fs.readFileSync(CLIENT_TYPES, 'utf8')).toBe(generated);
  });

  it('drives the whole workflow, type-checked', async () => {
    const org = { organisationSlug: orgSlug };
    const env = await client.POST('/api/v1/orgs/{organisationSlug}/environments', {
      params: { path: org },
      body: { name: 'production', type: 'production' },
    });
    expect(env.response.status).toBe(200);
    const environmentSlug = env.data!.slug.slugValue;

    const profiles = await client.GET('/api/v1/orgs/{organisationSlug}/cloud-profiles', { params: { path: org, query: {} } });
    expect(profiles.response.status).toBe(200);
    const profile = profiles.data!.content!.find((p) => p.type === 'platform_1')!;

    const account = await client.POST('/api/v1/orgs/{organisationSlug}/cloud-accounts', {
      params: { path: org },
      body: { cloudProfile: profile.identity, displayName: 'Main account' },
    });
    expect(account.response.status).toBe(200);
    const cloudAccountIdentity = account.data!.identity;

    const credentials = await client.POST('/api/v1/orgs/{organisationSlug}/cloud-accounts/{cloudAccountIdentity}/credentials/platform_1', {
      params: { path: { ...org, cloudAccountIdentity } },
      body: { displayName: 'deployer', credentials: { accessKeyId: 'AKIAEXAMPLE', accessKeySecret: 'example-secret' } },
    });
    expect(credentials.response.status).toBe(200);

    const regions = await client.GET('/api/v1/orgs/{organisationSlug}/cloud-providers/{provider}/regions', {
      params: { path: { ...org, provider: 'platform_1' }, query: {} },
    });
    const region = regions.data!.content!.find((r) => r.available && !r.restricted)!.slug;
    const nodeTypes = await client.GET('/api/v1/cloud-providers/{cloudProviderSlug}/nodetypes', {
      params: { path: { cloudProviderSlug: 'platform_1' }, query: { sort: ['cpu,asc'] } },
    });
    const nodeSize = nodeTypes.data!.content![0].type;
    const versions = await client.GET('/api/v1/cluster-versions');
    const version = versions.data!.filter((v) => v.available).pop()!.version;

    const created = await client.POST('/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}', {
      params: { path: { ...org, environmentSlug } },
      body: { name: 'web', cloudAccountIdentity, region, version, nodePools: [{ name: 'default', nodeSize, minSize: 2, maxSize: 4 }] },
    });
    expect(created.response.status).toBe(200);
    const clusterSlug = created.data!.slug.slugValue;
    const clusterPath = { ...org, environmentSlug, clusterSlug };

    await settle(t);
    const started = await client.GET('/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}', { params: { path: clusterPath, query: {} } });
    expect(started.data!.status).toBe('started');

    const pool = await client.POST('/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}/pools', {
      params: { path: clusterPath },
      body: { name: 'batch', nodeSize, minSize: 1, maxSize: 3 },
    });
    expect(pool.response.status).toBe(200);
    expect(pool.data!.name).toBe('batch');

    const deleting = await client.PATCH('/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}', {
      params: { path: clusterPath },
      body: { status: 'deleting' },
    });
    expect(deleting.response.status).toBe(200);
    await settle(t);
    const gone = await client.GET('/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}', { params: { path: clusterPath, query: {} } });
    expect([404, 200]).toContain(gone.response.status);
    if (gone.response.status === 200) expect(gone.data!.status).toBe('deleted');

    // Errors come back typed as the error body.
    const missing = await client.GET('/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}', {
      params: { path: { ...clusterPath, clusterSlug: 'no-such-cluster' }, query: {} },
    });
    expect(missing.response.status).toBe(404);
    expect(missing.error!.status).toBe(404);
  });
});
