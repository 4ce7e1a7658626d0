import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import type {
  CreateClusterVersionRequest,
  CreateUpdateChannelRequest,
  UpdateClusterVersionRequest,
  UpdateUpdateChannelRequest,
} from './dto/catalog-admin.dto';
import { auditDiff, snapshot } from '../audit/audit-diff';
import { AuditRecorder } from '../audit/audit-recorder';
import { Clock } from '../common/clock';
import { ValidationFailedException } from '../common/errors';
import { CatalogService, toUpdateChannelResponse, toVersionResponse } from './catalog.service';
import { ClusterVersionEntity } from './cluster-version.entity';
import { AdminClusterVersionResponse, PlatformKubernetesVersionResponse, UpdateChannelResponse } from './dto/catalog.dto';
import { pageInMemory } from './catalog-paging';
import type { Page, PageQueryDto } from '../common/paging';
import { isCatalogVersion } from './semver-targets';
import { UpdateChannelEntity } from './update-channel.entity';

/** Upgrades still waiting for their window or running: they block deleting their target version. */
const OPEN_UPGRADE_STATUSES = ['SCHEDULED', 'SCHEDULED_NOTIFIED', 'UPDATED'];

/**
 * Platform administrators' changes to cluster versions and update channels (/admin/v1). Each change
 * is audited (CLUSTER_VERSION_*, UPDATE_CHANNEL_*); these rows belong to no organisation.
 */
@Injectable()
export class CatalogAdminService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
    private readonly catalog: CatalogService,
  ) {}

  private get em() {
    return this.txHost.tx;
  }

  // ---------------------------------------------------------------- cluster versions

  async listVersions(): Promise<PlatformKubernetesVersionResponse[]> {
    return (await this.catalog.listVersions()).map(toVersionResponse);
  }

  /** A page (form A) of versions passing `filter`, each with its cluster count. */
  async pageVersions(query: PageQueryDto, filter: (v: ClusterVersionEntity) => boolean): Promise<Page<AdminClusterVersionResponse>> {
    const rows = (await this.catalog.listVersions()).filter(filter);
    const counts: { version: string; n: number }[] = await this.em.query(
      `SELECT version, count(*)::int AS n FROM clusters WHERE deleted_at IS NULL GROUP BY version`,
    );
    const byVersion = new Map(counts.map((c) => [c.version, c.n]));
    const order = new Map(rows.map((r, i) => [r.version, i]));
    return pageInMemory(
      rows,
      query,
      { version: (r) => order.get(r.version)!, available: (r) => r.available, createdAt: (r) => r.createdAt.getTime() },
      [],
      'A',
      (r) => ({ ...toVersionResponse(r), clusterCount: byVersion.get(r.version) ?? 0 }),
    );
  }

  async getVersion(version: string): Promise<PlatformKubernetesVersionResponse> {
    return toVersionResponse(await this.requireVersion(version, false));
  }

  async createVersion(req: CreateClusterVersionRequest): Promise<PlatformKubernetesVersionResponse> {
    if (!isCatalogVersion(req.version)) {
      throw ValidationFailedException.forField('version', `version '${req.version}' is not a valid semantic version (e.g. 1.33.0)`);
    }
    if (await this.catalog.findVersion(req.version)) {
      throw new ConflictException(`Cluster version '${req.version}' already exists; PATCH it instead.`);
    }
    const now = this.clock.now();
    const repo = this.em.getRepository(ClusterVersionEntity);
    const row = await repo.save(
      repo.create({
        version: req.version,
        kubernetesVersion: req.kubernetesVersion ?? `v${req.version}`,
        available: req.available ?? true,
        note: req.note ?? '',
        createdAt: now,
        modifiedAt: now,
      }),
    );
    await this.em.query(`DELETE FROM catalog_deletions WHERE kind = 'cluster_version' AND key = $1`, [row.version]);
    this.audit.record({
      type: 'CLUSTER_VERSION_CREATED',
      referencedEntityIdentity: row.version,
      subject: row.version,
      details: auditDiff(null, snapshot(row, ['version', 'kubernetesVersion', 'available', 'note'])),
    });
    return toVersionResponse(row);
  }

  async updateVersion(version: string, req: UpdateClusterVersionRequest): Promise<PlatformKubernetesVersionResponse> {
    const row = await this.requireVersion(version, true);
    const keys: (keyof ClusterVersionEntity)[] = ['available', 'note'];
    const before = snapshot(row, keys);
    if (req.available === false && row.available) {
      const channels = await this.channelsOn(row.version);
      if (channels.length) {
        throw new ConflictException(
          `Cluster version '${row.version}' is the version of update channel(s) ${channels.map((c) => `'${c}'`).join(', ')}; move them to another version first.`,
        );
      }
    }
    if (req.available !== undefined) row.available = req.available;
    if (req.note !== undefined) row.note = req.note;
    const details = auditDiff(before, snapshot(row, keys));
    if (Object.keys(details).length) {
      row.modifiedAt = this.clock.now();
      await this.em.getRepository(ClusterVersionEntity).save(row);
    }
    this.audit.record({ type: 'CLUSTER_VERSION_UPDATED', referencedEntityIdentity: row.version, subject: row.version, details });
    return toVersionResponse(row);
  }

  async deleteVersion(version: string): Promise<void> {
    const row = await this.requireVersion(version, true);
    const [{ n: clusters }] = await this.em.query(
      `SELECT count(*)::int AS n FROM clusters
        WHERE deleted_at IS NULL AND status <> 'deleted' AND (version = $1 OR observed_version = $1)`,
      [row.version],
    );
    if (clusters > 0) {
      throw new ConflictException(`Cluster version '${row.version}' is still run or wanted by ${clusters} cluster(s); upgrade or delete them first.`);
    }
    const channels = await this.channelsOn(row.version);
    if (channels.length) {
      throw new ConflictException(
        `Cluster version '${row.version}' is the version of update channel(s) ${channels.map((c) => `'${c}'`).join(', ')}; move them to another version first.`,
      );
    }
    const [{ n: upgrades }] = await this.em.query(
      `SELECT count(*)::int AS n FROM scheduled_cluster_upgrades WHERE to_cluster_version = $1 AND status = ANY($2)`,
      [row.version, OPEN_UPGRADE_STATUSES],
    );
    if (upgrades > 0) {
      throw new ConflictException(`Cluster version '${row.version}' is the target of ${upgrades} open scheduled upgrade(s); cancel them first.`);
    }
    await this.em.getRepository(ClusterVersionEntity).delete({ id: row.id });
    await this.em.query(
      `INSERT INTO catalog_deletions (kind, key, deleted_at) VALUES ('cluster_version', $1, $2)
       ON CONFLICT (kind, key) DO UPDATE SET deleted_at = EXCLUDED.deleted_at`,
      [row.version, this.clock.now()],
    );
    this.audit.record({
      type: 'CLUSTER_VERSION_DELETED',
      referencedEntityIdentity: row.version,
      subject: row.version,
      details: auditDiff(snapshot(row, ['version', 'kubernetesVersion', 'available', 'note']), null),
    });
  }

  // ---------------------------------------------------------------- update channels

  async listChannels(query: PageQueryDto): Promise<Page<UpdateChannelResponse>> {
    const rows = await this.em.getRepository(UpdateChannelEntity).find({ order: { name: 'ASC' } });
    return pageInMemory(rows, query, { name: (r) => r.name, available: (r) => r.available }, [], 'A', toUpdateChannelResponse);
  }

  async createChannel(req: CreateUpdateChannelRequest): Promise<UpdateChannelResponse> {
    if (await this.catalog.findUpdateChannel(req.name)) {
      throw new ConflictException(`Update channel '${req.name}' already exists; PATCH it instead.`);
    }
    await this.requireAvailableVersion(req.kubernetesClusterVersion);
    const now = this.clock.now();
    const repo = this.em.getRepository(UpdateChannelEntity);
    const row = await repo.save(
      repo.create({
        name: req.name,
        kubernetesClusterVersion: req.kubernetesClusterVersion,
        available: req.available ?? true,
        createdAt: now,
        modifiedAt: now,
      }),
    );
    await this.em.query(`DELETE FROM catalog_deletions WHERE kind = 'update_channel' AND key = $1`, [row.name]);
    this.audit.record({
      type: 'UPDATE_CHANNEL_CREATED',
      referencedEntityIdentity: row.name,
      subject: row.name,
      details: auditDiff(null, snapshot(row, ['name', 'kubernetesClusterVersion', 'available'])),
    });
    return toUpdateChannelResponse(row);
  }

  async updateChannel(name: string, req: UpdateUpdateChannelRequest): Promise<UpdateChannelResponse> {
    const row = await this.em
      .getRepository(UpdateChannelEntity)
      .createQueryBuilder('c')
      .setLock('pessimistic_write')
      .where('c.name = :name', { name })
      .getOne();
    if (!row) throw new NotFoundException(`There is no update channel '${name}'.`);
    const keys: (keyof UpdateChannelEntity)[] = ['kubernetesClusterVersion', 'available'];
    const before = snapshot(row, keys);
    if (req.kubernetesClusterVersion !== undefined && req.kubernetesClusterVersion !== row.kubernetesClusterVersion) {
      await this.requireAvailableVersion(req.kubernetesClusterVersion);
      row.kubernetesClusterVersion = req.kubernetesClusterVersion;
    }
    if (req.available !== undefined) row.available = req.available;
    const details = auditDiff(before, snapshot(row, keys));
    if (Object.keys(details).length) {
      row.modifiedAt = this.clock.now();
      await this.em.getRepository(UpdateChannelEntity).save(row);
    }
    this.audit.record({ type: 'UPDATE_CHANNEL_UPDATED', referencedEntityIdentity: row.name, subject: row.name, details });
    return toUpdateChannelResponse(row);
  }

  // ---------------------------------------------------------------- helpers

  private async requireVersion(version: string, lock: boolean): Promise<ClusterVersionEntity> {
    const qb = this.em.getRepository(ClusterVersionEntity).createQueryBuilder('v').where('v.version = :version', { version });
    if (lock) qb.setLock('pessimistic_write');
    const row = await qb.getOne();
    if (!row) throw this.catalog.unknownVersion(version);
    return row;
  }

  /** Locks the version (so it cannot be withdrawn or deleted meanwhile); 400 naming the field when unusable. */
  private async requireAvailableVersion(version: string): Promise<void> {
    const row = await this.em
      .getRepository(ClusterVersionEntity)
      .createQueryBuilder('v')
      .setLock('pessimistic_read')
      .where('v.version = :version', { version })
      .getOne();
    if (!row) throw ValidationFailedException.forField('kubernetesClusterVersion', `kubernetesClusterVersion '${version}' is not a known cluster version`);
    if (!row.available) {
      throw ValidationFailedException.forField('kubernetesClusterVersion', `kubernetesClusterVersion '${version}' is not available`);
    }
  }

  private async channelsOn(version: string): Promise<string[]> {
    const rows = await this.em.getRepository(UpdateChannelEntity).find({ where: { kubernetesClusterVersion: version }, order: { name: 'ASC' } });
    return rows.map((c) => c.name);
  }
}
