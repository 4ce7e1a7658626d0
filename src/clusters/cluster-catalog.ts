import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';

export interface RegionRow {
  id: number;
  slug: string;
  available: boolean;
  restricted: boolean;
  providerAvailable: boolean;
}

export interface NodeTypeRow {
  type: string;
  cpu: number;
  memory: number;
}

/**
 * The catalog lookups cluster rules need. The catalog context had no query service exported when
 * this was written, so these are small private reads of the catalog tables (read-only).
 */
@Injectable()
export class ClusterCatalog {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async region(providerType: string, regionSlug: string): Promise<RegionRow | null> {
    const [row] = await this.txHost.tx.query(
      `SELECT r.id, r.slug, r.available, r.restricted, p.available AS provider_available
         FROM cloud_provider_regions r JOIN cloud_providers p ON p.id = r.provider_id
        WHERE p.type = $1 AND r.slug = $2`,
      [providerType, regionSlug],
    );
    return row
      ? { id: Number(row.id), slug: row.slug, available: row.available, restricted: row.restricted, providerAvailable: row.provider_available }
      : null;
  }

  async zones(regionId: number): Promise<Set<string>> {
    const rows: { slug: string }[] = await this.txHost.tx.query(`SELECT slug FROM cloud_provider_availability_zones WHERE region_id = $1`, [regionId]);
    return new Set(rows.map((r) => r.slug));
  }

  async regionIdOf(providerType: string, regionSlug: string): Promise<number | null> {
    return (await this.region(providerType, regionSlug))?.id ?? null;
  }

  async nodeTypes(providerType: string): Promise<Map<string, NodeTypeRow>> {
    const rows: { type: string; cpu: string; memory: string }[] = await this.txHost.tx.query(
      `SELECT nt.type, nt.cpu, nt.memory FROM cloud_provider_node_types nt JOIN cloud_providers p ON p.id = nt.provider_id WHERE p.type = $1`,
      [providerType],
    );
    return new Map(rows.map((r) => [r.type, { type: r.type, cpu: Number(r.cpu), memory: Number(r.memory) }]));
  }

  async version(version: string): Promise<{ version: string; available: boolean } | null> {
    const [row] = await this.txHost.tx.query(`SELECT version, available FROM cluster_versions WHERE version = $1`, [version]);
    return row ?? null;
  }

  async availableVersions(): Promise<string[]> {
    const rows: { version: string }[] = await this.txHost.tx.query(`SELECT version FROM cluster_versions WHERE available`);
    return rows.map((r) => r.version);
  }

  async updateChannel(name: string): Promise<{ name: string; available: boolean; kubernetesClusterVersion: string } | null> {
    const [row] = await this.txHost.tx.query(
      `SELECT name, available, kubernetes_cluster_version AS "kubernetesClusterVersion" FROM update_channels WHERE name = $1`,
      [name],
    );
    return row ?? null;
  }

  async addonNames(): Promise<Set<string>> {
    const rows: { name: string }[] = await this.txHost.tx.query(`SELECT name FROM addons`);
    return new Set(rows.map((r) => r.name));
  }

  /** Add-ons enabled by default, as the map a new cluster starts from. */
  async defaultAddons(): Promise<Record<string, { enabled: boolean; customValues: Record<string, string> }>> {
    const rows: { name: string; default_enabled: boolean }[] = await this.txHost.tx.query(`SELECT name, default_enabled FROM addons ORDER BY name`);
    const out: Record<string, { enabled: boolean; customValues: Record<string, string> }> = {};
    for (const r of rows) if (r.default_enabled) out[r.name] = { enabled: true, customValues: {} };
    return out;
  }
}
