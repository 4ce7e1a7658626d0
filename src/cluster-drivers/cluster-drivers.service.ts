import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { auditDiff, snapshot } from '../audit/audit-diff';
import { AuditRecorder } from '../audit/audit-recorder';
import { CatalogService } from '../catalog/catalog.service';
import { CloudProfileEntity } from '../catalog/cloud-profile.entity';
import { Clock } from '../common/clock';
import { ValidationFailedException } from '../common/errors';
import { OutboundPolicy } from '../common/outbound-policy';
import { orderBySql, type Page, type PageQueryDto, toPage, toPageRequest } from '../common/paging';
import { SecretBox } from '../common/secret-box';
import { REDACTED } from '../common/secret-fields';
import { isUuid } from '../common/uuid';
import { ClusterDriverEntity, clusterDriverSecretContext } from './cluster-driver.entity';
import { driverErrorOf } from './driver-call-error';
import type { ClusterDriverResponse, CreateClusterDriverRequest, UpdateClusterDriverRequest } from './dto/cluster-driver.dto';
import { RegisteredDriverResolver } from './registered-driver-resolver';

export const CLUSTER_DRIVER_SORTABLE = { name: 'd.name', createdAt: 'd.created_at', enabled: 'd.enabled' };
const AUDITED: (keyof ClusterDriverEntity)[] = ['name', 'url', 'cloudProviders', 'cloudProfiles', 'enabled', 'timeoutMs', 'maxInFlight'];

/**
 * The registry of out-of-process cluster drivers (platform administrators, /admin/v1/cluster-drivers): create, read,
 * change, delete and health-check, each change audited (CLUSTER_DRIVER_*). Rules: names are unique; a cloud profile
 * and a cloud provider are served by at most one enabled driver; a driver that serves clusters that are not deleted
 * can be neither deleted nor disabled (they would fall to the default driver, which knows nothing of them).
 */
@Injectable()
export class ClusterDriversService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
    private readonly catalog: CatalogService,
    private readonly secrets: SecretBox,
    private readonly outbound: OutboundPolicy,
    private readonly resolver: RegisteredDriverResolver,
  ) {}

  private get repo() {
    return this.txHost.tx.getRepository(ClusterDriverEntity);
  }

  async list(query: PageQueryDto): Promise<Page<ClusterDriverResponse>> {
    const req = toPageRequest(query, CLUSTER_DRIVER_SORTABLE, [{ property: 'name', direction: 'ASC' }]);
    const [{ n }] = await this.txHost.tx.query(`SELECT count(*)::int AS n FROM cluster_drivers`);
    const ids: { id: string }[] = await this.txHost.tx.query(
      `SELECT d.id FROM cluster_drivers d ORDER BY ${orderBySql(req, CLUSTER_DRIVER_SORTABLE, 'd.id')} LIMIT $1 OFFSET $2`,
      [req.size, req.offset],
    );
    const rows = ids.length ? await this.repo.createQueryBuilder('d').where('d.id IN (:...ids)', { ids: ids.map((r) => r.id) }).getMany() : [];
    const byId = new Map(rows.map((r) => [String(r.id), r]));
    return toPage(ids.map((r) => toResponse(byId.get(String(r.id))!)), n, req, 'A');
  }

  async get(key: string): Promise<ClusterDriverResponse> {
    return toResponse(await this.find(key));
  }

  async create(req: CreateClusterDriverRequest): Promise<ClusterDriverResponse> {
    this.outbound.assertWellFormed('url', req.url);
    const cloudProviders = await this.providerTypes(req.cloudProviders ?? []);
    const cloudProfiles = await this.profileSlugs(req.cloudProfiles ?? []);
    if (!cloudProviders.length && !cloudProfiles.length) {
      throw ValidationFailedException.forField('cloudProviders', 'cloudProviders or cloudProfiles must name at least one cloud provider or cloud profile the driver serves');
    }
    await this.lockRegistry();
    if (await this.repo.findOne({ where: { name: req.name } })) throw new ConflictException(`A cluster driver named '${req.name}' exists; PATCH it instead.`);
    const enabled = req.enabled ?? true;
    if (enabled) await this.assertNoOverlap(null, cloudProviders, cloudProfiles);
    const now = this.clock.now();
    const [{ identity }] = await this.txHost.tx.query(`SELECT gen_random_uuid()::text AS identity`);
    const row = await this.repo.save(
      this.repo.create({
        identity,
        name: req.name,
        url: req.url.replace(/\/+$/, ''),
        secretCiphertext: this.secrets.seal(req.signingSecret, clusterDriverSecretContext(identity)),
        cloudProviders,
        cloudProfiles,
        enabled,
        timeoutMs: req.timeoutMs ?? 15000,
        maxInFlight: req.maxInFlight ?? 16,
        healthStatus: 'UNKNOWN',
        healthCheckedAt: null,
        healthMessage: null,
        capabilities: null,
        createdAt: now,
        modifiedAt: now,
      }),
    );
    this.audit.record({
      type: 'CLUSTER_DRIVER_CREATED',
      referencedEntityIdentity: row.identity,
      subject: row.name,
      details: auditDiff(null, snapshot(row, AUDITED)),
    });
    this.resolver.invalidate();
    return toResponse(row);
  }

  async update(key: string, req: UpdateClusterDriverRequest): Promise<ClusterDriverResponse> {
    await this.lockRegistry();
    const row = await this.find(key);
    const wasEnabled = row.enabled;
    const before = snapshot(row, AUDITED);
    if (req.url !== undefined) {
      this.outbound.assertWellFormed('url', req.url);
      row.url = req.url.replace(/\/+$/, '');
    }
    if (req.cloudProviders !== undefined) row.cloudProviders = await this.providerTypes(req.cloudProviders);
    if (req.cloudProfiles !== undefined) row.cloudProfiles = await this.profileSlugs(req.cloudProfiles);
    if (req.enabled !== undefined) row.enabled = req.enabled;
    if (req.timeoutMs !== undefined) row.timeoutMs = req.timeoutMs;
    if (req.maxInFlight !== undefined) row.maxInFlight = req.maxInFlight;
    if (!row.cloudProviders.length && !row.cloudProfiles.length) {
      throw ValidationFailedException.forField('cloudProviders', 'cloudProviders or cloudProfiles must name at least one cloud provider or cloud profile the driver serves');
    }
    let secretRotated = false;
    if (req.signingSecret !== undefined && req.signingSecret !== this.openSecret(row)) {
      row.secretCiphertext = this.secrets.seal(req.signingSecret, clusterDriverSecretContext(row.identity));
      secretRotated = true;
    }
    const details = auditDiff(before, snapshot(row, AUDITED));
    if (secretRotated) details.signingSecret = { old: REDACTED, new: REDACTED };
    if (!Object.keys(details).length) return toResponse(row);
    if (row.enabled) await this.assertNoOverlap(row.id, row.cloudProviders, row.cloudProfiles);
    // Clusters served now that would lose their driver: disabled, or no longer listed.
    const served = wasEnabled ? await this.servedClusters(row.id) : 0;
    if (served > 0) {
      const still = row.enabled ? await this.servedClusters(row.id, row.cloudProviders, row.cloudProfiles) : 0;
      if (still < served) {
        throw new ConflictException(
          `Cluster driver '${row.name}' serves ${served} cluster(s) that are not deleted; this change would hand ${served - still} of them to another driver. Delete or move those clusters first.`,
        );
      }
    }
    row.modifiedAt = this.clock.now();
    await this.repo.save(row);
    this.audit.record({ type: 'CLUSTER_DRIVER_UPDATED', referencedEntityIdentity: row.identity, subject: row.name, details });
    this.resolver.invalidate();
    return toResponse(row);
  }

  async delete(key: string): Promise<void> {
    await this.lockRegistry();
    const row = await this.find(key);
    const served = row.enabled ? await this.servedClusters(row.id) : 0;
    if (served > 0) {
      throw new ConflictException(`Cluster driver '${row.name}' serves ${served} cluster(s) that are not deleted; delete them (or register another driver for them) first.`);
    }
    await this.repo.delete({ id: row.id });
    this.audit.record({ type: 'CLUSTER_DRIVER_DELETED', referencedEntityIdentity: row.identity, subject: row.name, details: auditDiff(snapshot(row, AUDITED), null) });
    this.resolver.forget(row.id);
    this.resolver.invalidate();
  }

  /**
   * Calls the driver's `GET /v1/capabilities` (signed, within its timeout) and records the result: HEALTHY with what it
   * answered, or UNHEALTHY with why. Audited as CLUSTER_DRIVER_HEALTH_CHECKED. The call is made before the row is
   * locked, so a slow driver holds no lock.
   */
  async healthCheck(key: string): Promise<ClusterDriverResponse> {
    const found = await this.find(key);
    const client = this.resolver.clientFor({
      id: found.id,
      identity: found.identity,
      name: found.name,
      url: found.url,
      secret_ciphertext: found.secretCiphertext,
      cloud_providers: found.cloudProviders,
      cloud_profiles: found.cloudProfiles,
      timeout_ms: found.timeoutMs,
      max_in_flight: found.maxInFlight,
    });
    let status: 'HEALTHY' | 'UNHEALTHY';
    let message: string | null = null;
    let capabilities: ClusterDriverEntity['capabilities'] = null;
    try {
      capabilities = await client.capabilities();
      status = 'HEALTHY';
    } catch (e) {
      const error = driverErrorOf(e);
      status = 'UNHEALTHY';
      message = `${error.code}: ${error.message}`;
    }
    const row = await this.repo.createQueryBuilder('d').setLock('pessimistic_write').where('d.id = :id', { id: found.id }).getOne();
    if (!row) throw new NotFoundException(`There is no cluster driver '${key}'.`);
    const before = { healthStatus: row.healthStatus, healthMessage: row.healthMessage };
    row.healthStatus = status;
    row.healthMessage = message;
    row.healthCheckedAt = this.clock.now();
    if (capabilities) row.capabilities = capabilities;
    await this.repo.save(row);
    this.audit.record({
      type: 'CLUSTER_DRIVER_HEALTH_CHECKED',
      referencedEntityIdentity: row.identity,
      subject: row.name,
      details: { healthStatus: { old: before.healthStatus, new: status }, healthMessage: { old: before.healthMessage, new: message } },
    });
    return toResponse(row);
  }

  private async find(key: string): Promise<ClusterDriverEntity> {
    const row = await this.repo.findOne({ where: isUuid(key) ? { identity: key } : { name: key } });
    if (!row) throw new NotFoundException(`There is no cluster driver '${key}'.`);
    return row;
  }

  private openSecret(row: ClusterDriverEntity): string | null {
    try {
      return this.secrets.open(row.secretCiphertext, clusterDriverSecretContext(row.identity));
    } catch {
      return null;
    }
  }

  /** Registry writes one at a time, so the overlap and served-cluster checks see every committed driver. */
  private async lockRegistry(): Promise<void> {
    await this.txHost.tx.query(`LOCK TABLE cluster_drivers IN SHARE ROW EXCLUSIVE MODE`);
  }

  private async providerTypes(values: string[]): Promise<string[]> {
    const types: string[] = [];
    for (const [i, v] of values.entries()) {
      const provider = await this.catalog.findProvider(v);
      if (!provider) throw ValidationFailedException.forField(`cloudProviders.${i}`, `cloudProviders.${i}: there is no cloud provider '${v}'`);
      if (!types.includes(provider.type)) types.push(provider.type);
    }
    return types;
  }

  private async profileSlugs(values: string[]): Promise<string[]> {
    const slugs: string[] = [];
    for (const [i, v] of values.entries()) {
      const profile = await this.txHost.tx.getRepository(CloudProfileEntity).findOne({ where: isUuid(v) ? [{ slug: v }, { identity: v }] : { slug: v } });
      if (!profile) throw ValidationFailedException.forField(`cloudProfiles.${i}`, `cloudProfiles.${i}: there is no cloud profile '${v}'`);
      if (!slugs.includes(profile.slug)) slugs.push(profile.slug);
    }
    return slugs;
  }

  /** 409 when another enabled driver already serves one of these providers or profiles. */
  private async assertNoOverlap(id: number | null, providers: string[], profiles: string[]): Promise<void> {
    const others: { name: string; cloud_providers: string[]; cloud_profiles: string[] }[] = await this.txHost.tx.query(
      `SELECT name, cloud_providers, cloud_profiles FROM cluster_drivers
        WHERE enabled AND ($1::bigint IS NULL OR id <> $1) AND (cloud_providers && $2::text[] OR cloud_profiles && $3::text[])`,
      [id, providers, profiles],
    );
    for (const o of others) {
      const provider = providers.find((p) => o.cloud_providers.includes(p));
      if (provider) throw new ConflictException(`Cluster driver '${o.name}' already serves cloud provider '${provider}'; a provider is served by one enabled driver.`);
      const profile = profiles.find((p) => o.cloud_profiles.includes(p));
      if (profile) throw new ConflictException(`Cluster driver '${o.name}' already serves cloud profile '${profile}'; a profile is served by one enabled driver.`);
    }
  }

  /**
   * Clusters not deleted that the driver `id` serves (with its stored lists, or with `providers`/`profiles` instead):
   * those of its profiles, and those of its providers whose profile no other enabled driver serves.
   */
  private async servedClusters(id: number, providers?: string[], profiles?: string[]): Promise<number> {
    const [{ n }] = await this.txHost.tx.query(
      `WITH d AS (
         SELECT COALESCE($2::text[], cloud_providers) AS providers, COALESCE($3::text[], cloud_profiles) AS profiles
           FROM cluster_drivers WHERE id = $1
       )
       SELECT count(*)::int AS n
         FROM clusters c
         JOIN cloud_accounts a ON a.id = c.cloud_account_id
         JOIN cloud_profiles p ON p.id = a.cloud_profile_id
         CROSS JOIN d
        WHERE c.deleted_at IS NULL
          AND (p.slug = ANY(d.profiles)
               OR (a.cloud_provider_type = ANY(d.providers)
                   AND NOT EXISTS (SELECT 1 FROM cluster_drivers o WHERE o.enabled AND o.id <> $1 AND p.slug = ANY(o.cloud_profiles))))`,
      [id, providers ?? null, profiles ?? null],
    );
    return n;
  }
}

export function toResponse(row: ClusterDriverEntity): ClusterDriverResponse {
  const c = row.capabilities;
  return {
    identity: row.identity,
    name: row.name,
    url: row.url,
    cloudProviders: row.cloudProviders,
    cloudProfiles: row.cloudProfiles,
    enabled: row.enabled,
    timeoutMs: row.timeoutMs,
    maxInFlight: row.maxInFlight,
    health: {
      status: row.healthStatus,
      checkedAt: row.healthCheckedAt ? new Date(row.healthCheckedAt).toISOString() : null,
      message: row.healthMessage,
      protocolVersion: c?.protocolVersion ?? null,
      driver: c ? { name: c.driver.name, version: c.driver.version } : null,
      cloudProviders: c?.cloudProviders ?? [],
      features: c?.features ?? [],
    },
    createdAt: new Date(row.createdAt).toISOString(),
    modifiedAt: new Date(row.modifiedAt).toISOString(),
  };
}
