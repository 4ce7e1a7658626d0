import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import * as fs from 'fs';
import * as path from 'path';
import { DataSource, EntityManager } from 'typeorm';
import { parse } from 'yaml';
import { Clock } from '../common/clock';
import { CLOUD_PROVIDER_TYPES, PRIVATE_CLUSTER_SETTINGS } from './cloud-provider.entity';
import { isCatalogVersion } from './semver-targets';

/** Shape of data/catalog.yaml. */
export interface CatalogFile {
  version: number;
  cloudProviders: {
    type: string;
    slug: string;
    name: string;
    available: boolean;
    byon: boolean;
    logo: string;
    privateClusterSetting: string;
    metadata: Record<string, string>;
    regions: { slug: string; name: string; available: boolean; restricted: boolean; availabilityZones: { slug: string; name: string }[] }[];
    nodeTypes: { type: string; cpu: number; memory: number }[];
  }[];
  cloudProfiles: {
    identity: string;
    slug: string;
    displayName: string;
    type: string;
    enabled: boolean;
    public: boolean;
    metadata: Record<string, string>;
    regions: string[];
  }[];
  clusterVersions: { version: string; kubernetesVersion: string; available: boolean; note: string }[];
  updateChannels: { name: string; kubernetesClusterVersion: string; available: boolean }[];
  addons: { name: string; displayName: string; description: string; defaultEnabled: boolean; integration: string | null }[];
}

export const CATALOG_FILE = path.resolve(__dirname, '..', '..', '..', 'data', 'catalog.yaml'); // from dist/src/catalog

function catalogPath(): string {
  // From src/ (ts) or dist/src/ (js) the data folder sits at the project root.
  const candidates = [path.resolve(__dirname, '..', '..', 'data', 'catalog.yaml'), CATALOG_FILE, path.resolve('data', 'catalog.yaml')];
  const found = candidates.find((p) => fs.existsSync(p));
  if (!found) throw new Error(`Catalog data file not found (looked in ${candidates.join(', ')})`);
  return found;
}

export function readCatalogFile(file = catalogPath()): CatalogFile {
  const catalog = parse(fs.readFileSync(file, 'utf8')) as CatalogFile;
  const problems = validateCatalogFile(catalog);
  if (problems.length) throw new Error(`Catalog data file ${file} is inconsistent:\n- ${problems.join('\n- ')}`);
  return catalog;
}

/** Consistency rules of data/catalog.yaml; an empty list means the file is loadable. */
export function validateCatalogFile(c: CatalogFile): string[] {
  const problems: string[] = [];
  const dup = (values: string[], what: string) => {
    const seen = new Set<string>();
    for (const v of values) {
      if (seen.has(v)) problems.push(`duplicate ${what} '${v}'`);
      seen.add(v);
    }
  };
  const providers = c.cloudProviders ?? [];
  const types = providers.map((p) => p.type);
  dup(types, 'provider type');
  dup(providers.map((p) => p.slug), 'provider slug');
  for (const t of CLOUD_PROVIDER_TYPES) if (!types.includes(t)) problems.push(`provider type '${t}' is missing`);
  for (const p of providers) {
    if (!(CLOUD_PROVIDER_TYPES as readonly string[]).includes(p.type)) problems.push(`provider type '${p.type}' is unknown`);
    if (!(PRIVATE_CLUSTER_SETTINGS as readonly string[]).includes(p.privateClusterSetting))
      problems.push(`provider '${p.type}': privateClusterSetting '${p.privateClusterSetting}' is unknown`);
    dup(p.regions.map((r) => r.slug), `region of ${p.type}`);
    dup(p.nodeTypes.map((n) => n.type), `node type of ${p.type}`);
    for (const r of p.regions) dup(r.availabilityZones.map((z) => z.slug), `zone of ${p.type}/${r.slug}`);
    for (const n of p.nodeTypes)
      if (!(Number.isInteger(n.cpu) && n.cpu > 0 && Number.isInteger(n.memory) && n.memory > 0))
        problems.push(`node type ${p.type}/${n.type}: cpu and memory must be positive integers`);
  }
  dup(c.cloudProfiles.map((p) => p.identity), 'cloud profile identity');
  dup(c.cloudProfiles.map((p) => p.slug), 'cloud profile slug');
  for (const pr of c.cloudProfiles) {
    const p = providers.find((x) => x.type === pr.type);
    if (!p) problems.push(`cloud profile '${pr.slug}' names unknown provider '${pr.type}'`);
    else for (const r of pr.regions) if (!p.regions.some((x) => x.slug === r)) problems.push(`cloud profile '${pr.slug}' names unknown region '${r}'`);
  }
  dup(c.clusterVersions.map((v) => v.version), 'cluster version');
  for (const v of c.clusterVersions) if (!isCatalogVersion(v.version)) problems.push(`cluster version '${v.version}' is not semver`);
  dup(c.updateChannels.map((u) => u.name), 'update channel');
  for (const u of c.updateChannels) {
    const v = c.clusterVersions.find((x) => x.version === u.kubernetesClusterVersion);
    if (!v) problems.push(`update channel '${u.name}' names unknown version '${u.kubernetesClusterVersion}'`);
    else if (!v.available) problems.push(`update channel '${u.name}' names unavailable version '${u.kubernetesClusterVersion}'`);
  }
  dup(c.addons.map((a) => a.name), 'add-on');
  return problems;
}

/**
 * Loads data/catalog.yaml at start-up by an idempotent upsert (under an advisory lock, so replicas
 * starting together do it once each without clashing). Rows missing from the file (regions, zones,
 * node types, cloud profiles, add-ons) are deleted only when nothing references them; referenced
 * ones are kept (regions marked unavailable, profiles disabled). Providers are never deleted.
 * Cluster versions and update channels are only inserted when new: platform admins manage them
 * afterwards through /admin/v1, and a restart must not undo their changes. A version an admin
 * deleted is remembered in catalog_deletions and not inserted again; a channel whose version does
 * not exist is skipped (never a start-up failure). modified_at moves only when a row's content changes.
 */
@Injectable()
export class CatalogLoader implements OnApplicationBootstrap {
  private readonly logger = new Logger('Catalog');

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const catalog = readCatalogFile();
    await this.dataSource.transaction((em) => this.load(em, catalog));
    this.logger.log(`Catalog version ${catalog.version} loaded`);
  }

  async load(em: EntityManager, c: CatalogFile): Promise<void> {
    await em.query('SELECT pg_advisory_xact_lock(724003)');
    const now = this.clock.now();
    const json = (v: unknown) => JSON.stringify(v);

    await em.query(
      `INSERT INTO cloud_providers (slug, type, name, logo, available, byon, private_cluster_setting, metadata, created_at, modified_at)
       SELECT slug, type, name, logo, available, byon, "privateClusterSetting", metadata, $2, $2
         FROM jsonb_to_recordset($1::jsonb) AS x(slug text, type text, name text, logo text, available boolean, byon boolean, "privateClusterSetting" text, metadata jsonb)
       ON CONFLICT (type) DO UPDATE SET slug = EXCLUDED.slug, name = EXCLUDED.name, logo = EXCLUDED.logo, available = EXCLUDED.available,
         byon = EXCLUDED.byon, private_cluster_setting = EXCLUDED.private_cluster_setting, metadata = EXCLUDED.metadata,
         modified_at = CASE WHEN (cloud_providers.name, cloud_providers.logo, cloud_providers.available, cloud_providers.byon, cloud_providers.private_cluster_setting, cloud_providers.metadata)
                              IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.logo, EXCLUDED.available, EXCLUDED.byon, EXCLUDED.private_cluster_setting, EXCLUDED.metadata)
                            THEN EXCLUDED.modified_at ELSE cloud_providers.modified_at END`,
      [json(c.cloudProviders.map(({ regions: _r, nodeTypes: _n, ...p }) => p)), now],
    );

    const regions = c.cloudProviders.flatMap((p) => p.regions.map((r) => ({ provider: p.type, slug: r.slug, name: r.name, available: r.available, restricted: r.restricted })));
    await em.query(
      `INSERT INTO cloud_provider_regions (provider_id, slug, name, available, restricted, created_at, modified_at)
       SELECT cp.id, x.slug, x.name, x.available, x.restricted, $2, $2
         FROM jsonb_to_recordset($1::jsonb) AS x(provider text, slug text, name text, available boolean, restricted boolean)
         JOIN cloud_providers cp ON cp.type = x.provider
       ON CONFLICT (provider_id, slug) DO UPDATE SET name = EXCLUDED.name, available = EXCLUDED.available, restricted = EXCLUDED.restricted,
         modified_at = CASE WHEN (cloud_provider_regions.name, cloud_provider_regions.available, cloud_provider_regions.restricted)
                              IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.available, EXCLUDED.restricted)
                            THEN EXCLUDED.modified_at ELSE cloud_provider_regions.modified_at END`,
      [json(regions), now],
    );

    const zones = c.cloudProviders.flatMap((p) =>
      p.regions.flatMap((r) => r.availabilityZones.map((z) => ({ provider: p.type, region: r.slug, slug: z.slug, name: z.name }))),
    );
    await em.query(
      `INSERT INTO cloud_provider_availability_zones (region_id, slug, name, created_at, modified_at)
       SELECT r.id, x.slug, x.name, $2, $2
         FROM jsonb_to_recordset($1::jsonb) AS x(provider text, region text, slug text, name text)
         JOIN cloud_providers cp ON cp.type = x.provider
         JOIN cloud_provider_regions r ON r.provider_id = cp.id AND r.slug = x.region
       ON CONFLICT (region_id, slug) DO UPDATE SET name = EXCLUDED.name,
         modified_at = CASE WHEN cloud_provider_availability_zones.name IS DISTINCT FROM EXCLUDED.name
                            THEN EXCLUDED.modified_at ELSE cloud_provider_availability_zones.modified_at END`,
      [json(zones), now],
    );

    const nodeTypes = c.cloudProviders.flatMap((p) => p.nodeTypes.map((n) => ({ provider: p.type, ...n })));
    await em.query(
      `INSERT INTO cloud_provider_node_types (provider_id, type, cpu, memory, created_at, modified_at)
       SELECT cp.id, x.type, x.cpu, x.memory, $2, $2
         FROM jsonb_to_recordset($1::jsonb) AS x(provider text, type text, cpu bigint, memory bigint)
         JOIN cloud_providers cp ON cp.type = x.provider
       ON CONFLICT (provider_id, type) DO UPDATE SET cpu = EXCLUDED.cpu, memory = EXCLUDED.memory,
         modified_at = CASE WHEN (cloud_provider_node_types.cpu, cloud_provider_node_types.memory) IS DISTINCT FROM (EXCLUDED.cpu, EXCLUDED.memory)
                            THEN EXCLUDED.modified_at ELSE cloud_provider_node_types.modified_at END`,
      [json(nodeTypes), now],
    );

    await em.query(
      `INSERT INTO cloud_profiles (identity, slug, display_name, type, enabled, public, metadata, regions, created_at, modified_at)
       SELECT x.identity, x.slug, x."displayName", x.type, x.enabled, x.public, x.metadata, ARRAY(SELECT jsonb_array_elements_text(x.regions)), $2, $2
         FROM jsonb_to_recordset($1::jsonb) AS x(identity uuid, slug text, "displayName" text, type text, enabled boolean, public boolean, metadata jsonb, regions jsonb)
       ON CONFLICT (identity) DO UPDATE SET slug = EXCLUDED.slug, display_name = EXCLUDED.display_name, type = EXCLUDED.type,
         enabled = EXCLUDED.enabled, public = EXCLUDED.public, metadata = EXCLUDED.metadata, regions = EXCLUDED.regions,
         modified_at = CASE WHEN (cloud_profiles.slug, cloud_profiles.display_name, cloud_profiles.type, cloud_profiles.enabled, cloud_profiles.public, cloud_profiles.metadata, cloud_profiles.regions)
                              IS DISTINCT FROM (EXCLUDED.slug, EXCLUDED.display_name, EXCLUDED.type, EXCLUDED.enabled, EXCLUDED.public, EXCLUDED.metadata, EXCLUDED.regions)
                            THEN EXCLUDED.modified_at ELSE cloud_profiles.modified_at END`,
      [json(c.cloudProfiles), now],
    );

    await em.query(
      `INSERT INTO cluster_versions (version, kubernetes_version, available, note, created_at, modified_at)
       SELECT x.version, x."kubernetesVersion", x.available, COALESCE(x.note, ''), $2, $2
         FROM jsonb_to_recordset($1::jsonb) AS x(version text, "kubernetesVersion" text, available boolean, note text)
        WHERE NOT EXISTS (SELECT 1 FROM catalog_deletions d WHERE d.kind = 'cluster_version' AND d.key = x.version)
       ON CONFLICT (version) DO NOTHING`,
      [json(c.clusterVersions), now],
    );
    await em.query(
      `INSERT INTO update_channels (name, kubernetes_cluster_version, available, created_at, modified_at)
       SELECT x.name, x."kubernetesClusterVersion", x.available, $2, $2
         FROM jsonb_to_recordset($1::jsonb) AS x(name text, "kubernetesClusterVersion" text, available boolean)
        WHERE EXISTS (SELECT 1 FROM cluster_versions v WHERE v.version = x."kubernetesClusterVersion")
          AND NOT EXISTS (SELECT 1 FROM catalog_deletions d WHERE d.kind = 'update_channel' AND d.key = x.name)
       ON CONFLICT (name) DO NOTHING`,
      [json(c.updateChannels), now],
    );
    await em.query(
      `INSERT INTO addons (name, display_name, description, default_enabled, integration, created_at, modified_at)
       SELECT x.name, x."displayName", x.description, x."defaultEnabled", x.integration, $2, $2
         FROM jsonb_to_recordset($1::jsonb) AS x(name text, "displayName" text, description text, "defaultEnabled" boolean, integration text)
       ON CONFLICT (name) DO UPDATE SET display_name = EXCLUDED.display_name, description = EXCLUDED.description,
         default_enabled = EXCLUDED.default_enabled, integration = EXCLUDED.integration`,
      [json(c.addons), now],
    );

    // Rows no longer in the file: delete when unreferenced, otherwise keep them but unavailable.
    const regionKeys = regions.map((r) => `${r.provider}/${r.slug}`);
    await em.query(
      `UPDATE cloud_provider_regions r SET available = false, modified_at = $2
         FROM cloud_providers cp WHERE cp.id = r.provider_id AND NOT (cp.type || '/' || r.slug = ANY($1)) AND r.available`,
      [regionKeys, now],
    );
    await em.query(
      `DELETE FROM cloud_provider_regions r USING cloud_providers cp
        WHERE cp.id = r.provider_id AND NOT (cp.type || '/' || r.slug = ANY($1))
          AND NOT EXISTS (SELECT 1 FROM clusters c WHERE c.cloud_provider = cp.type AND c.region = r.slug)`,
      [regionKeys],
    );
    await em.query(
      `DELETE FROM cloud_provider_node_types n USING cloud_providers cp
        WHERE cp.id = n.provider_id AND NOT (cp.type || '/' || n.type = ANY($1))
          AND NOT EXISTS (SELECT 1 FROM cluster_node_pools p JOIN clusters c ON c.id = p.cluster_id WHERE c.cloud_provider = cp.type AND p.node_size = n.type)`,
      [nodeTypes.map((n) => `${n.provider}/${n.type}`)],
    );
    await em.query(
      `UPDATE cloud_profiles SET enabled = false WHERE NOT (identity = ANY($1::uuid[])) AND enabled`,
      [c.cloudProfiles.map((p) => p.identity)],
    );
    await em.query(
      `DELETE FROM cloud_profiles p WHERE NOT (identity = ANY($1::uuid[]))
          AND NOT EXISTS (SELECT 1 FROM cloud_accounts a WHERE a.cloud_profile_id = p.id)`,
      [c.cloudProfiles.map((p) => p.identity)],
    );
    await em.query(
      `DELETE FROM cloud_provider_availability_zones z USING cloud_provider_regions r, cloud_providers cp
        WHERE r.id = z.region_id AND cp.id = r.provider_id AND NOT (cp.type || '/' || r.slug || '/' || z.slug = ANY($1))
          AND NOT EXISTS (SELECT 1 FROM cluster_node_pools p JOIN clusters c ON c.id = p.cluster_id
                           WHERE c.cloud_provider = cp.type AND c.region = r.slug AND p.availability_zone = z.slug)`,
      [zones.map((z) => `${z.provider}/${z.region}/${z.slug}`)],
    );
    // Add-ons still enabled or configured on a live cluster stay, so its `addons` map keeps meaning.
    await em.query(
      `DELETE FROM addons a WHERE NOT (a.name = ANY($1))
          AND NOT EXISTS (SELECT 1 FROM clusters c WHERE c.deleted_at IS NULL AND c.addons ? a.name)`,
      [c.addons.map((a) => a.name)],
    );
  }
}
