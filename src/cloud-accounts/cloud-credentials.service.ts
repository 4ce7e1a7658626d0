import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { newIdentity } from '../common/pinned-identities';
import { AuditRecorder } from '../audit/audit-recorder';
import { REDACTED } from '../audit/audit-diff';
import { CLOUD_PROVIDER_TYPES, CloudProviderType } from '../catalog/cloud-provider.entity';
import { Clock } from '../common/clock';
import { clusterHolds } from '../common/cluster-holds';
import { ValidationFailedException } from '../common/errors';
import { applyOrder, orderByEntries, Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import { SecretBox } from '../common/secret-box';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { CloudAccountEntity } from './cloud-account.entity';
import { CloudAccountsService } from './cloud-accounts.service';
import { CloudCredentialsEntity } from './cloud-credentials.entity';
import { CloudCredentialsResponse, CreateCredentialsRequest } from './dto/credentials.dto';

const SORTABLE: Record<string, string> = {
  displayName: 'c.displayName',
  createdAt: 'c.createdAt',
};

/** Platforms whose credentials carry no secret (no cloud API to call). */
export const SECRETLESS_PLATFORMS: readonly CloudProviderType[] = ['byon', 'none', 'empty'];

@Injectable()
export class CloudCredentialsService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
    private readonly secrets: SecretBox,
    private readonly accounts: CloudAccountsService,
  ) {}

  private get repo() {
    return this.txHost.tx.getRepository(CloudCredentialsEntity);
  }

  toResponse(c: CloudCredentialsEntity, account: CloudAccountEntity): CloudCredentialsResponse {
    return {
      cloudAccountIdentity: account.identity,
      cloudType: c.cloudType,
      createdAt: c.createdAt.toISOString(),
      displayName: c.displayName,
      identity: c.identity,
      isPrimary: account.primaryCredentialsId != null && Number(account.primaryCredentialsId) === Number(c.id),
      metadata: c.metadata ?? {},
    };
  }

  async list(org: OrganisationEntity, accountIdentity: string, query: PageQueryDto): Promise<Page<CloudCredentialsResponse>> {
    const account = await this.accounts.find(org, accountIdentity);
    const req = toPageRequest(query, SORTABLE);
    const qb = this.repo.createQueryBuilder('c').where('c.cloudAccountId = :id', { id: account.id });
    applyOrder(qb, orderByEntries(req, SORTABLE, 'c.id'));
    qb.skip(req.offset).take(req.size);
    const [rows, total] = await qb.getManyAndCount();
    return toPage(
      rows.map((c) => this.toResponse(c, account)),
      total,
      req,
      'B',
    );
  }

  /**
   * Stores a credential for the account. The path platform must be the account's platform. The
   * platform fields are sealed with AES-256-GCM, bound to the credential's identity. The first
   * credential of an account becomes its primary one.
   */
  async create(
    org: OrganisationEntity,
    accountIdentity: string,
    platform: CloudProviderType,
    body: CreateCredentialsRequest,
  ): Promise<CloudCredentialsResponse> {
    const account = await this.accounts.find(org, accountIdentity, true);
    if (platform !== account.cloudProviderType)
      throw ValidationFailedException.forField(
        'platform',
        `platform '${platform}' in the path does not match the cloud account's platform '${account.cloudProviderType}'; use POST .../credentials/${account.cloudProviderType}`,
      );
    const identity = newIdentity('cloud_credentials');
    const secretJson = JSON.stringify(SECRETLESS_PLATFORMS.includes(platform) ? {} : (body.credentials ?? {}));
    const now = this.clock.now();
    const cred = this.repo.create({
      identity,
      cloudAccountId: account.id,
      displayName: body.displayName ?? `${platform} credentials`,
      cloudType: platform,
      metadata: body.metadata ?? {},
      secretCiphertext: this.secrets.seal(secretJson, identity),
      createdAt: now,
      modifiedAt: now,
    });
    await this.repo.insert(cred);
    const becomesPrimary = account.primaryCredentialsId == null;
    if (becomesPrimary) {
      account.primaryCredentialsId = Number(cred.id);
      account.modifiedAt = now;
      await this.txHost.tx.getRepository(CloudAccountEntity).save(account);
    }
    this.audit.record({
      type: 'CLOUD_CREDENTIALS_CREATED',
      organisation: { id: org.id, slug: org.slug },
      cloudAccountName: account.displayName,
      referencedEntityIdentity: cred.identity,
      subject: `${cred.displayName} of cloud account ${account.displayName}`,
      details: {
        displayName: { old: null, new: cred.displayName },
        cloudType: { old: null, new: cred.cloudType },
        metadata: { old: null, new: cred.metadata },
        credentials: { old: null, new: REDACTED },
        isPrimary: { old: null, new: becomesPrimary },
      },
    });
    return this.toResponse(cred, account);
  }

  /**
   * Removes a credential. Refused while it is the primary credential and the account has clusters
   * that are not deleted, or while a cluster that is not deleted uses it directly. Deleting the
   * primary credential promotes the newest remaining one (or leaves the account without a primary).
   */
  async delete(org: OrganisationEntity, accountIdentity: string, credentialsIdentity: string): Promise<void> {
    const account = await this.accounts.find(org, accountIdentity, true);
    const cred = await this.repo.findOne({ where: { identity: credentialsIdentity.toLowerCase(), cloudAccountId: account.id } });
    if (!cred) throw new NotFoundException(`Credentials ${credentialsIdentity} not found in cloud account ${account.identity}.`);
    const isPrimary = account.primaryCredentialsId != null && Number(account.primaryCredentialsId) === Number(cred.id);
    const [usage] = await this.txHost.tx.query(
      `SELECT count(*)::int AS active, count(*) FILTER (WHERE cloud_credentials_id = $2)::int AS direct,
              count(*) FILTER (WHERE NOT ${clusterHolds()})::int AS deleting, (array_agg(name ORDER BY name))[1:3] AS names
         FROM clusters WHERE cloud_account_id = $1 AND deleted_at IS NULL`,
      [account.id, cred.id],
    );
    if (isPrimary && usage.active > 0) {
      const clusters = `${usage.active} cluster${usage.active === 1 ? '' : 's'} (${(usage.names as string[]).map((n) => `'${n}'`).join(', ')}${usage.active > 3 ? ', ...' : ''})`;
      // Met at `terraform destroy` right after the cluster's delete: say that the deletion itself needs them, and when to retry.
      const next =
        usage.deleting === usage.active
          ? `, which ${usage.active === 1 ? 'is' : 'are'} being deleted: the deletion uses these credentials to remove the cloud resources; retry once it has completed.`
          : '; make other credentials primary or delete the clusters first.';
      throw new ConflictException(`Credentials '${cred.displayName}' are the primary credentials of cloud account '${account.displayName}', which has ${clusters}${next}`);
    }
    if (usage.direct > 0)
      throw new ConflictException(
        `Credentials '${cred.displayName}' are used by ${usage.direct} cluster${usage.direct === 1 ? '' : 's'}; delete ${usage.direct === 1 ? 'it' : 'them'} first.`,
      );
    await this.repo.delete({ id: cred.id });
    const details: Record<string, { old: unknown; new: unknown }> = {
      displayName: { old: cred.displayName, new: null },
      cloudType: { old: cred.cloudType, new: null },
      metadata: { old: cred.metadata, new: null },
      credentials: { old: REDACTED, new: null },
      isPrimary: { old: isPrimary, new: null },
    };
    if (isPrimary) {
      const next = await this.repo.findOne({ where: { cloudAccountId: account.id }, order: { createdAt: 'DESC', id: 'DESC' } });
      account.primaryCredentialsId = next ? Number(next.id) : null;
      account.modifiedAt = this.clock.now();
      await this.txHost.tx.getRepository(CloudAccountEntity).save(account);
      details.primaryCloudCredentialsIdentity = { old: cred.identity, new: next?.identity ?? null };
    }
    this.audit.record({
      type: 'CLOUD_CREDENTIALS_DELETED',
      organisation: { id: org.id, slug: org.slug },
      cloudAccountName: account.displayName,
      referencedEntityIdentity: cred.identity,
      subject: `${cred.displayName} of cloud account ${account.displayName}`,
      details,
    });
  }

  /** Opens a credential's secret for a driver; never put the result in a response, log or audit detail. */
  async openSecret(cred: CloudCredentialsEntity): Promise<Record<string, unknown>> {
    return JSON.parse(this.secrets.open(cred.secretCiphertext, cred.identity)) as Record<string, unknown>;
  }
}

export const isPlatform = (v: string): v is CloudProviderType => (CLOUD_PROVIDER_TYPES as readonly string[]).includes(v);
