import { CatalogFile, CatalogLoader, readCatalogFile } from '../../src/catalog/catalog-loader.service';
import { ADMIN_TOKEN, startTestApp, TestApp } from '../support/test-app';
import { createOrg } from './org-helper';

const TABLES = [
  'cloud_providers',
  'cloud_provider_regions',
  'cloud_provider_availability_zones',
  'cloud_provider_node_types',
  'cloud_profiles',
  'cluster_versions',
  'update_channels',
  'addons',
];

/** Row count and the latest modified_at of every catalog table. */
async function fingerprint(t: TestApp): Promise<Record<string, { n: number; latest: string | null }>> {
  const out: Record<string, { n: number; latest: string | null }> = {};
  for (const table of TABLES) {
    const [row] = await t.db.query(`SELECT count(*)::int AS n, max(modified_at) AS latest, sum(hashtext(id::text || modified_at::text))::text AS h FROM ${table}`);
    out[table] = { n: row.n, latest: `${row.latest?.toISOString() ?? null}|${row.h}` };
  }
  return out;
}

describe('catalog load at start-up', () => {
  it('is idempotent across restarts and keeps what platform admins changed', async () => {
    const first = await startTestApp();
    const url = first.databaseUrl;
    const file = readCatalogFile();
    const before = await fingerprint(first);
    expect(before.cloud_providers.n).toBe(10);
    expect(before.cluster_versions.n).toBe(file.clusterVersions.length);
    expect(before.update_channels.n).toBe(file.updateChannels.length);
    expect(before.addons.n).toBe(file.addons.length);
    expect(before.cloud_profiles.n).toBe(file.cloudProfiles.length);
    expect(before.cloud_provider_regions.n).toBe(file.cloudProviders.reduce((s, p) => s + p.regions.length, 0));
    expect(before.cloud_provider_node_types.n).toBe(file.cloudProviders.reduce((s, p) => s + p.nodeTypes.length, 0));

    // admin changes that a restart must not undo
    await first.as(ADMIN_TOKEN).patch('/admin/v1/update-channels/stable').send({ kubernetesClusterVersion: '1.31.4' }).expect(200);
    await first.as(ADMIN_TOKEN).patch('/admin/v1/cluster-versions/1.31.3').send({ note: 'Pinned by ops', available: false }).expect(200);
    await first.as(ADMIN_TOKEN).post('/admin/v1/cluster-versions').send({ version: '1.33.0' }).expect(200);
    await first.as(ADMIN_TOKEN).delete('/admin/v1/cluster-versions/1.29.10').expect(204);
    const afterAdmin = await fingerprint(first);
    await first.close();

    const second = await startTestApp({}, url);
    try {
      expect(await fingerprint(second)).toEqual(afterAdmin);
      const [stable] = await second.db.query(`SELECT kubernetes_cluster_version FROM update_channels WHERE name = 'stable'`);
      expect(stable.kubernetes_cluster_version).toBe('1.31.4');
      const [v] = await second.db.query(`SELECT available, note FROM cluster_versions WHERE version = '1.31.3'`);
      expect(v).toEqual({ available: false, note: 'Pinned by ops' });
      expect(await second.db.query(`SELECT 1 FROM cluster_versions WHERE version = '1.29.10'`)).toHaveLength(0);
      expect(await second.db.query(`SELECT 1 FROM cluster_versions WHERE version = '1.33.0'`)).toHaveLength(1);
      const dups = await second.db.query(
        `SELECT 'p' FROM cloud_providers GROUP BY type HAVING count(*) > 1
         UNION ALL SELECT 'r' FROM cloud_provider_regions GROUP BY provider_id, slug HAVING count(*) > 1
         UNION ALL SELECT 'v' FROM cluster_versions GROUP BY version HAVING count(*) > 1`,
      );
      expect(dups).toHaveLength(0);
      // the API answers the same after the restart
      const channels = await second.as(ADMIN_TOKEN).get('/admin/v1/update-channels');
      expect(channels.body.content.find((c: { name: string }) => c.name === 'stable').kubernetesClusterVersion).toBe('1.31.4');
    } finally {
      await second.close();
    }

    // two replicas starting together load once each without clashing
    const [a, b] = await Promise.all([startTestApp({}, url), startTestApp({}, url)]);
    try {
      expect(await fingerprint(a)).toEqual(afterAdmin);
    } finally {
      await a.close();
      await b.close();
    }
    // Four app starts on one database: under a loaded 2-core machine (seen: load 11) they took over 60 s.
  }, 240_000);

  describe('with a changed data file', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp();
    });
    afterAll(() => t.close());

    const reload = (c: CatalogFile) => t.db.transaction((em) => t.get(CatalogLoader).load(em, c));
    const clone = (): CatalogFile => JSON.parse(JSON.stringify(readCatalogFile()));

    it('updates changed rows (moving modified_at), removes unreferenced rows and keeps referenced ones unavailable', async () => {
      const org = await createOrg(t, 'acme', []);
      const [env] = await t.db.query(`INSERT INTO environments (organisation_id, slug, name) VALUES ($1, 'prod', 'prod') RETURNING id`, [org.id]);
      const [profile] = await t.db.query(`SELECT id FROM cloud_profiles WHERE slug = 'platform-3-default'`);
      const [account] = await t.db.query(
        `INSERT INTO cloud_accounts (organisation_id, cloud_profile_id, cloud_provider_type, display_name) VALUES ($1, $2, 'platform_3', 'a') RETURNING id`,
        [org.id, profile.id],
      );
      await t.db.query(
        `INSERT INTO clusters (organisation_id, environment_id, cloud_account_id, slug, name, region, cloud_provider, version, addons)
         VALUES ($1, $2, $3, 'web', 'web', 'ams3', 'platform_3', '1.31.6', '{"cert-manager": {"enabled": true}}')`,
        [org.id, env.id, account.id],
      );
      const [nt0] = await t.db.query(`SELECT n.modified_at FROM cloud_provider_node_types n JOIN cloud_providers p ON p.id = n.provider_id WHERE p.type = 'platform_1' AND n.type = 't3.medium'`);
      const [untouched0] = await t.db.query(`SELECT n.modified_at FROM cloud_provider_node_types n JOIN cloud_providers p ON p.id = n.provider_id WHERE p.type = 'platform_1' AND n.type = 'm5.large'`);

      const c = clone();
      const p3 = c.cloudProviders.find((p) => p.type === 'platform_3')!;
      p3.regions = p3.regions.filter((r) => r.slug !== 'ams3' && r.slug !== 'lon1'); // ams3 used by a cluster, lon1 not
      c.cloudProviders.find((p) => p.type === 'platform_1')!.nodeTypes.find((n) => n.type === 't3.medium')!.memory = 4000;
      c.updateChannels.push({ name: 'ghost', kubernetesClusterVersion: '9.9.9', available: true }); // unknown version: skipped
      c.addons = c.addons.filter((a) => a.name !== 'cert-manager' && a.name !== 'external-dns'); // cert-manager used by a cluster
      const p1 = c.cloudProviders.find((p) => p.type === 'platform_1')!;
      p1.regions.find((r) => r.slug === 'eu-west-1')!.availabilityZones.pop(); // eu-west-1c, unused
      t.clock.advance(60_000);
      await reload(c);

      const regions = await t.db.query(
        `SELECT r.slug, r.available FROM cloud_provider_regions r JOIN cloud_providers p ON p.id = r.provider_id WHERE p.type = 'platform_3' ORDER BY r.slug`,
      );
      expect(regions.find((r: { slug: string }) => r.slug === 'ams3')).toEqual({ slug: 'ams3', available: false });
      expect(regions.find((r: { slug: string }) => r.slug === 'lon1')).toBeUndefined();
      const [nt1] = await t.db.query(`SELECT n.memory, n.modified_at FROM cloud_provider_node_types n JOIN cloud_providers p ON p.id = n.provider_id WHERE p.type = 'platform_1' AND n.type = 't3.medium'`);
      expect(nt1.memory).toBe(4000);
      expect(nt1.modified_at.getTime()).toBeGreaterThan(nt0.modified_at.getTime());
      const [untouched1] = await t.db.query(`SELECT n.modified_at FROM cloud_provider_node_types n JOIN cloud_providers p ON p.id = n.provider_id WHERE p.type = 'platform_1' AND n.type = 'm5.large'`);
      expect(untouched1.modified_at.getTime()).toBe(untouched0.modified_at.getTime());
      expect(await t.db.query(`SELECT 1 FROM update_channels WHERE name = 'ghost'`)).toHaveLength(0);
      const addons = (await t.db.query(`SELECT name FROM addons`)).map((a: { name: string }) => a.name);
      expect(addons).toContain('cert-manager');
      expect(addons).not.toContain('external-dns');
      expect(await t.db.query(`SELECT 1 FROM cloud_provider_availability_zones WHERE slug = 'eu-west-1c'`)).toHaveLength(0);

      // the original file again: the region comes back available, nothing duplicated
      await reload(clone());
      const [ams3] = await t.db.query(`SELECT count(*)::int AS n, bool_and(available) AS available FROM cloud_provider_regions WHERE slug = 'ams3'`);
      expect(ams3).toEqual({ n: 1, available: true });
      expect(await t.db.query(`SELECT 1 FROM cloud_provider_availability_zones WHERE slug = 'eu-west-1c'`)).toHaveLength(1);
      expect(await t.db.query(`SELECT 1 FROM addons WHERE name IN ('cert-manager', 'external-dns')`)).toHaveLength(2);
    });
  });
});
