import { CLOUD_PROVIDER_TYPES } from '../../src/catalog/cloud-provider.entity';
import { ENVIRONMENT_TYPES } from '../../src/catalog/environment-types';
import { expectErrorBody, startTestApp, TestApp, TestUser } from '../support/test-app';
import { createOrg, expectPage, Role, TestOrg } from './org-helper';

const PROVIDER_KEYS = ['available', 'byon', 'createdAt', 'id', 'logo', 'metadata', 'modifiedAt', 'name', 'privateClusterSetting', 'slug', 'type'];
const REGION_KEYS = ['available', 'createdAt', 'id', 'modifiedAt', 'name', 'provider', 'restricted', 'slug'];
const ZONE_KEYS = ['cloudProviderValue', 'createdAt', 'id', 'modifiedAt', 'name', 'slug'];
const PROFILE_KEYS = [
  'cloudProvider', 'cloudProviderRegionResponses', 'cloudProviderResponse', 'displayName', 'enabled', 'identity', 'metadata', 'public', 'regions', 'type',
];
const VERSION_KEYS = ['available', 'createdAt', 'kubernetesVersion', 'modifiedAt', 'note', 'version'];
const keys = (o: object) => Object.keys(o).sort();

describe('catalog endpoints', () => {
  let t: TestApp;
  let users: Record<Role | 'outsider', TestUser>;
  let org: TestOrg;
  let restricted: TestOrg;

  beforeAll(async () => {
    t = await startTestApp();
    users = {
      OWNER: await t.createUser('owner'),
      ADMIN: await t.createUser('admin1'),
      MEMBER: await t.createUser('member'),
      VIEWER: await t.createUser('viewer'),
      outsider: await t.createUser('outsider'),
    };
    org = await createOrg(t, 'acme', [
      [users.OWNER, 'OWNER'],
      [users.ADMIN, 'ADMIN'],
      [users.MEMBER, 'MEMBER'],
      [users.VIEWER, 'VIEWER'],
    ]);
    restricted = await createOrg(t, 'gov', [[users.VIEWER, 'VIEWER']], { restricted: true });
  });
  afterAll(() => t.close());

  const viewer = () => t.as(users.VIEWER.token);

  describe('GET /api/v1/cloud-providers/{slug}', () => {
    it('answers the CloudProviderResponse with exactly the spec fields', async () => {
      const res = await viewer().get('/api/v1/cloud-providers/platform_1');
      expect(res.status).toBe(200);
      expect(keys(res.body)).toEqual(PROVIDER_KEYS);
      expect(res.body).toMatchObject({
        slug: 'platform_1', type: 'platform_1', available: true, byon: false, privateClusterSetting: 'SELECTABLE', metadata: { tier: 'hyperscaler' },
      });
      expect(typeof res.body.id).toBe('number');
      expect(new Date(res.body.createdAt).toISOString()).toBe(res.body.createdAt);
    });

    it('shows an unavailable provider too (no organisation filter here)', async () => {
      const res = await viewer().get('/api/v1/cloud-providers/empty');
      expect(res.status).toBe(200);
      expect(res.body.available).toBe(false);
    });

    it('is 404 for an unknown provider and 401 without a credential', async () => {
      const res = await viewer().get('/api/v1/cloud-providers/platform_9');
      expect(res.status).toBe(404);
      expectErrorBody(res.body, 404);
      expect(res.body.message).toMatch(/platform_9/);
      expect((await t.http().get('/api/v1/cloud-providers/platform_1')).status).toBe(401);
    });
  });

  describe('GET /api/v1/cloud-providers/{slug}/nodetypes', () => {
    it('answers a form A page of {cpu, memory, type}', async () => {
      const res = await viewer().get('/api/v1/cloud-providers/platform_1/nodetypes');
      expect(res.status).toBe(200);
      expectPage(res.body, 'A');
      expect(res.body.totalElements).toBe(9);
      for (const n of res.body.content) expect(keys(n)).toEqual(['cpu', 'memory', 'type']);
      expect(res.body.content).toContainEqual({ type: 'm5.xlarge', cpu: 4, memory: 16384 });
    });

    it('pages and sorts; unknown sort properties are 400', async () => {
      const res = await viewer().get('/api/v1/cloud-providers/platform_1/nodetypes?size=2&page=1&sort=memory,desc&sort=type,asc');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ number: 1, size: 2, numberOfElements: 2, totalElements: 9, totalPages: 5, first: false, last: false });
      expect(res.body.sort).toEqual({ empty: false, sorted: true, unsorted: false });
      expect(res.body.content.map((n: { type: string }) => n.type)).toEqual(['c5.2xlarge', 'm5.xlarge']);
      const bad = await viewer().get('/api/v1/cloud-providers/platform_1/nodetypes?sort=price,asc');
      expect(bad.status).toBe(400);
      expect(bad.body.errors[0].field).toBe('sort');
      // Spring Data: a size below 1 or not a number is the default, a bad page is 0; own properties only.
      const lenient = await viewer().get('/api/v1/cloud-providers/platform_1/nodetypes?size=0&page=-3');
      expect(lenient.status).toBe(200);
      expect(lenient.body).toMatchObject({ number: 0, size: 50 });
      expect((await viewer().get('/api/v1/cloud-providers/platform_1/nodetypes?size=abc&page=x')).body).toMatchObject({ number: 0, size: 50 });
      const proto = await viewer().get('/api/v1/cloud-providers/platform_1/nodetypes?sort=constructor');
      expect(proto.status).toBe(400);
      expect(proto.body.message).toContain("sort property 'constructor' is unknown");
    });

    it('byon has no node types; an unknown provider is 404', async () => {
      const byon = await viewer().get('/api/v1/cloud-providers/byon/nodetypes');
      expect(byon.body).toMatchObject({ content: [], empty: true, totalElements: 0 });
      expect((await viewer().get('/api/v1/cloud-providers/nope/nodetypes')).status).toBe(404);
    });
  });

  describe('GET /api/v1/orgs/{org}/cloud-providers', () => {
    it('lists all ten providers in the interface type order (form A)', async () => {
      const res = await viewer().get(`/api/v1/orgs/${org.slug}/cloud-providers`);
      expect(res.status).toBe(200);
      expectPage(res.body, 'A');
      expect(res.body.content.map((p: { type: string }) => p.type)).toEqual([...CLOUD_PROVIDER_TYPES]);
      expect(res.body.content.map((p: { type: string }) => p.type)).toEqual([
        'platform_1', 'platform_2', 'byon', 'platform_3', 'empty', 'platform_4', 'platform_5', 'platform_6', 'none', 'platform_7',
      ]);
      for (const p of res.body.content) expect(keys(p)).toEqual(PROVIDER_KEYS);
      expect(res.body.content.find((p: { type: string }) => p.type === 'empty').available).toBe(false);
    });

    it('sort=type,desc reverses the type order; sort=name sorts by name', async () => {
      const desc = await viewer().get(`/api/v1/orgs/${org.slug}/cloud-providers?sort=type,desc`);
      expect(desc.body.content.map((p: { type: string }) => p.type)).toEqual([...CLOUD_PROVIDER_TYPES].reverse());
      const byName = await viewer().get(`/api/v1/orgs/${org.slug}/cloud-providers?sort=name`);
      const names = byName.body.content.map((p: { name: string }) => p.name);
      expect(names).toEqual([...names].sort((a: string, b: string) => a.localeCompare(b)));
    });

    it.each([
      ['OWNER', 200],
      ['ADMIN', 200],
      ['MEMBER', 200],
      ['VIEWER', 200],
      ['outsider', 403],
    ] as const)('role %s gets %d', async (role, status) => {
      const res = await t.as(users[role].token).get(`/api/v1/orgs/${org.slug}/cloud-providers`);
      expect(res.status).toBe(status);
      if (status !== 200) expectErrorBody(res.body, status);
    });

    it('is 401 unauthenticated and 403 for an organisation that does not exist', async () => {
      expect((await t.http().get(`/api/v1/orgs/${org.slug}/cloud-providers`)).status).toBe(401);
      expect((await viewer().get('/api/v1/orgs/no-such-org/cloud-providers')).status).toBe(403);
    });
  });

  describe('regions and availability zones', () => {
    it('lists regions (form A), including unavailable and restricted ones for an unrestricted organisation', async () => {
      const res = await viewer().get(`/api/v1/orgs/${org.slug}/cloud-providers/platform_1/regions`);
      expect(res.status).toBe(200);
      expectPage(res.body, 'A');
      for (const r of res.body.content) {
        expect(keys(r)).toEqual(REGION_KEYS);
        expect(r.provider).toBe('platform_1');
      }
      expect(res.body.content.find((r: { slug: string }) => r.slug === 'us-gov-west-1')).toMatchObject({ restricted: true, available: true });
      const p3 = await viewer().get(`/api/v1/orgs/${org.slug}/cloud-providers/platform_3/regions`);
      expect(p3.body.content.find((r: { slug: string }) => r.slug === 'nyc1')).toMatchObject({ available: false });
    });

    it('lists availability zones (form A)', async () => {
      const res = await viewer().get(`/api/v1/orgs/${org.slug}/cloud-providers/platform_1/regions/eu-central-1/availability-zones`);
      expect(res.status).toBe(200);
      expectPage(res.body, 'A');
      expect(res.body.content.map((z: { slug: string }) => z.slug)).toEqual(['eu-central-1a', 'eu-central-1b', 'eu-central-1c']);
      for (const z of res.body.content) {
        expect(keys(z)).toEqual(ZONE_KEYS);
        expect(z.cloudProviderValue).toBe('platform_1');
      }
    });

    it('is 404 for an unknown provider or region', async () => {
      const p = await viewer().get(`/api/v1/orgs/${org.slug}/cloud-providers/platform_9/regions`);
      expect(p.status).toBe(404);
      expectErrorBody(p.body, 404);
      const r = await viewer().get(`/api/v1/orgs/${org.slug}/cloud-providers/platform_1/regions/mars-1/availability-zones`);
      expect(r.status).toBe(404);
      expect(r.body.message).toMatch(/mars-1/);
      // a region of another provider is unknown here
      expect((await viewer().get(`/api/v1/orgs/${org.slug}/cloud-providers/platform_1/regions/fra1/availability-zones`)).status).toBe(404);
    });

    it('is 403 for a non-member', async () => {
      const res = await t.as(users.outsider.token).get(`/api/v1/orgs/${org.slug}/cloud-providers/platform_1/regions`);
      expect(res.status).toBe(403);
    });
  });

  describe('restrictedToAvailableCloudProviders', () => {
    it('hides unavailable providers', async () => {
      const res = await viewer().get(`/api/v1/orgs/${restricted.slug}/cloud-providers`);
      expect(res.status).toBe(200);
      const types = res.body.content.map((p: { type: string }) => p.type);
      expect(types).toEqual(CLOUD_PROVIDER_TYPES.filter((x) => x !== 'empty'));
      expect(res.body.totalElements).toBe(9);
      expect((await viewer().get(`/api/v1/orgs/${restricted.slug}/cloud-providers/empty/regions`)).status).toBe(404);
    });

    it('hides restricted and unavailable regions, and their zones', async () => {
      const p1 = await viewer().get(`/api/v1/orgs/${restricted.slug}/cloud-providers/platform_1/regions`);
      const slugs = p1.body.content.map((r: { slug: string }) => r.slug);
      expect(slugs).not.toContain('us-gov-west-1');
      expect(slugs).toContain('eu-central-1');
      expect(p1.body.content.every((r: { restricted: boolean; available: boolean }) => !r.restricted && r.available)).toBe(true);
      const p3 = await viewer().get(`/api/v1/orgs/${restricted.slug}/cloud-providers/platform_3/regions`);
      expect(p3.body.content.map((r: { slug: string }) => r.slug)).not.toContain('nyc1');
      const zones = await viewer().get(`/api/v1/orgs/${restricted.slug}/cloud-providers/platform_1/regions/us-gov-west-1/availability-zones`);
      expect(zones.status).toBe(404);
    });

    it('applies to cloud profiles, and follows the flag when it changes', async () => {
      const profile = async (slug: string) =>
        (await viewer().get(`/api/v1/orgs/${slug}/cloud-profiles`)).body.content.find((p: { identity: string }) => p.identity === '2b7e1f0a-5c3d-4e8f-a1b2-6d9c4e7f8a10');
      const hidden = await profile(restricted.slug);
      expect(hidden.regions).not.toContain('us-gov-west-1');
      expect(hidden.cloudProviderRegionResponses.map((r: { slug: string }) => r.slug)).toEqual(hidden.regions);
      const shown = await profile(org.slug);
      expect(shown.regions).toContain('us-gov-west-1');

      await t.db.query('UPDATE organisations SET restricted_to_available_cloud_providers = false WHERE id = $1', [restricted.id]);
      expect((await profile(restricted.slug)).regions).toContain('us-gov-west-1');
      const all = await viewer().get(`/api/v1/orgs/${restricted.slug}/cloud-providers`);
      expect(all.body.totalElements).toBe(10);
      await t.db.query('UPDATE organisations SET restricted_to_available_cloud_providers = true WHERE id = $1', [restricted.id]);
    });
  });

  describe('GET /api/v1/orgs/{org}/cloud-profiles', () => {
    it('answers a form A page of CloudProfile (the original client decodes A) with exactly the spec fields', async () => {
      const res = await viewer().get(`/api/v1/orgs/${org.slug}/cloud-profiles`);
      expect(res.status).toBe(200);
      expectPage(res.body, 'A');
      expect(res.body.sort).toEqual({ empty: false, sorted: true, unsorted: false });
      expect(res.body.totalElements).toBe(8);
      for (const p of res.body.content) {
        expect(keys(p)).toEqual(PROFILE_KEYS);
        expect(keys(p.cloudProviderResponse)).toEqual(PROVIDER_KEYS);
        for (const r of p.cloudProviderRegionResponses) expect(keys(r)).toEqual(REGION_KEYS);
        expect(p.cloudProvider).toBe(p.type);
        expect(p.cloudProviderResponse.type).toBe(p.type);
      }
      const p1 = res.body.content.find((p: { type: string }) => p.type === 'platform_1');
      expect(p1).toMatchObject({ identity: '2b7e1f0a-5c3d-4e8f-a1b2-6d9c4e7f8a10', displayName: 'Platform 1 (public)', enabled: true, public: true, metadata: {} });
      // default order follows the provider type order
      const order = res.body.content.map((p: { type: string }) => CLOUD_PROVIDER_TYPES.indexOf(p.type as never));
      expect(order).toEqual([...order].sort((a: number, b: number) => a - b));
    });

    it('is 403 for a non-member', async () => {
      expect((await t.as(users.outsider.token).get(`/api/v1/orgs/${org.slug}/cloud-profiles`)).status).toBe(403);
    });
  });

  describe('cluster versions', () => {
    it('lists every version with its available flag, in semver order', async () => {
      const res = await viewer().get('/api/v1/cluster-versions');
      expect(res.status).toBe(200);
      expect(Array.isArray(res.body)).toBe(true);
      for (const v of res.body) expect(keys(v)).toEqual(VERSION_KEYS);
      expect(res.body.map((v: { version: string }) => v.version)).toEqual([
        '1.29.10', '1.29.11', '1.29.12', '1.29.13', '1.30.6', '1.30.7', '1.30.8', '1.30.9',
        '1.31.3', '1.31.4', '1.31.5', '1.31.6', '1.32.0', '1.32.1', '1.32.2',
      ]);
      expect(res.body.find((v: { version: string }) => v.version === '1.30.7')).toMatchObject({ available: false, kubernetesVersion: 'v1.30.7' });
    });

    it.each([
      ['1.30.6', 'available-upgrades', ['1.30.8', '1.30.9', '1.31.3', '1.31.4', '1.31.5', '1.31.6']],
      ['1.31.6', 'available-upgrades', ['1.32.0', '1.32.1']],
      ['1.32.1', 'available-upgrades', []],
      ['1.30.9', 'available-downgrades', ['1.30.6', '1.30.8']],
      ['1.31.3', 'available-downgrades', []],
    ])('%s %s', async (version, what, expected) => {
      const res = await viewer().get(`/api/v1/cluster-versions/${version}/${what}`);
      expect(res.status).toBe(200);
      expect(res.body.map((v: { version: string }) => v.version)).toEqual(expected);
      for (const v of res.body) expect(keys(v)).toEqual(VERSION_KEYS);
    });

    it('is 404 for an unknown version', async () => {
      for (const path of ['1.28.0/available-upgrades', '1.28.0/available-downgrades', 'latest/available-upgrades']) {
        const res = await viewer().get(`/api/v1/cluster-versions/${path}`);
        expect(res.status).toBe(404);
        expectErrorBody(res.body, 404);
      }
    });
  });

  describe('update channels', () => {
    it('answers a form B page of {available, kubernetesClusterVersion, name}', async () => {
      const res = await viewer().get(`/api/v1/orgs/${org.slug}/update-channels`);
      expect(res.status).toBe(200);
      expectPage(res.body, 'B');
      expect(res.body.content).toEqual([
        { available: true, kubernetesClusterVersion: '1.30.9', name: 'extended' },
        { available: true, kubernetesClusterVersion: '1.32.1', name: 'rapid' },
        { available: true, kubernetesClusterVersion: '1.31.6', name: 'stable' },
      ]);
      expect(res.body.sort[0]).toMatchObject({ property: 'name', direction: 'ASC' });
    });

    it('is 403 for a non-member', async () => {
      expect((await t.as(users.outsider.token).get(`/api/v1/orgs/${org.slug}/update-channels`)).status).toBe(403);
    });
  });

  describe('OpenAPI document', () => {
    it('documents every catalog and admin operation with its page form and enums', async () => {
      const res = await t.http().get('/v3/api-docs');
      expect(res.status).toBe(200);
      const paths = res.body.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
      for (const p of [
        '/api/v1/cloud-providers/{cloudProviderSlug}',
        '/api/v1/cloud-providers/{cloudProviderSlug}/nodetypes',
        '/api/v1/orgs/{organisationSlug}/cloud-providers',
        '/api/v1/orgs/{organisationSlug}/cloud-providers/{provider}/regions',
        '/api/v1/orgs/{organisationSlug}/cloud-providers/{provider}/regions/{region}/availability-zones',
        '/api/v1/orgs/{organisationSlug}/cloud-profiles',
        '/api/v1/cluster-versions',
        '/api/v1/cluster-versions/{version}/available-upgrades',
        '/api/v1/cluster-versions/{version}/available-downgrades',
        '/api/v1/orgs/{organisationSlug}/update-channels',
        '/api/v1/environments/types',
        '/api/v1/orgs/{organisationSlug}/environments/types',
        '/admin/v1/cluster-versions',
        '/admin/v1/cluster-versions/{version}',
        '/admin/v1/update-channels',
        '/admin/v1/update-channels/{name}',
      ]) {
        expect(paths[p]).toBeDefined();
      }
      expect(Object.keys(paths['/admin/v1/cluster-versions/{version}'].delete.responses)).toContain('204');
      expect(Object.keys(paths['/admin/v1/cluster-versions'].post.responses)).toContain('200');
      const schemas = res.body.components.schemas;
      expect(schemas.CloudProviderResponse.properties.type.enum).toEqual([...CLOUD_PROVIDER_TYPES]);
      expect(schemas.CloudProviderResponse.properties.privateClusterSetting.enum).toEqual(['UNAVAILABLE', 'ENFORCED', 'PREFERRED', 'SELECTABLE']);
      expect(schemas.CreateClusterVersionRequest.properties.note.maxLength).toBe(500);
      expect(JSON.stringify(paths['/api/v1/orgs/{organisationSlug}/cloud-profiles'].get.responses['200'])).toContain('PageFormADto');
      expect(JSON.stringify(paths['/api/v1/orgs/{organisationSlug}/cloud-providers'].get.responses['200'])).toContain('PageFormADto');
    });
  });

  describe('environment types', () => {
    it('answers the list at both paths', async () => {
      const expected = ['production', 'staging', 'development', 'demo', 'other'];
      expect([...ENVIRONMENT_TYPES]).toEqual(expected);
      const a = await viewer().get('/api/v1/environments/types');
      expect(a.status).toBe(200);
      expect(a.body).toEqual(expected);
      const b = await viewer().get(`/api/v1/orgs/${org.slug}/environments/types`);
      expect(b.status).toBe(200);
      expect(b.body).toEqual(expected);
      expect((await t.as(users.outsider.token).get(`/api/v1/orgs/${org.slug}/environments/types`)).status).toBe(403);
      expect((await t.http().get('/api/v1/environments/types')).status).toBe(401);
    });
  });
});
