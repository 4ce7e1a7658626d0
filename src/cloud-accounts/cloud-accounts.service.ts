import { clusterHolds } from '../common/cluster-holds';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { In } from 'typeorm';
import { AuditRecorder } from '../audit/audit-recorder';
import { auditDiff } from '../audit/audit-diff';
import { CatalogService, providerVisibleTo } from '../catalog/catalog.service';
import { CloudProfileEntity } from '../catalog/cloud-profile.entity';
import type { CloudProfileResponse } from '../catalog/dto/catalog.dto';
import { Clock } from '../common/clock';
import { ValidationFailedException } from '../common/errors';
import { applyOrder, orderByEntries, Page, toPage, toPageRequest } from '../common/paging';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { CloudAccountEntity } from './cloud-account.entity';
import { CloudCredentialsEntity } from './cloud-credentials.entity';
import {
  CloudAccountListQuery,
  CloudAccountResponse,
  CreateCloudAccountRequest,
  UpdateCloudAccountRequest,
} from './dto/cloud-account.dto';

export const DELETE_GUARD_MS = 24 * 60 * 60 * 1000;

const SORTABLE: Record<string, string> = {
  displayName: 'a.displayName',
  enabled: 'a.enabled',
  createdAt: 'a.createdAt',
  modifiedAt: 'a.modifiedAt',
};

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

@Injectable()
export class CloudAccountsService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
    private readonly catalog: CatalogService,
  ) {}

  private get repo() {
    return this.txHost.tx.getRepository(CloudAccountEntity);
  }

  /** The account with this identity in the organisation, or 404. `lock` holds its row for the transaction. */
  async find(org: OrganisationEntity, identity: string, lock = false): Promise<CloudAccountEntity> {
    const qb = this.repo.createQueryBuilder('a').where('a.organisationId = :org AND a.identity = :identity', { org: org.id, identity });
    if (lock) qb.setLock('pessimistic_write');
    const account = await qb.getOne();
    if (!account) throw new NotFoundException(`Cloud account ${identity} not found in organisation '${org.slug}'.`);
    return account;
  }

  /** Responses for several accounts, loading each profile and primary credential identity once. */
  private async toResponses(org: OrganisationEntity, accounts: CloudAccountEntity[]): Promise<CloudAccountResponse[]> {
    if (!accounts.length) return [];
    const profileIds = [...new Set(accounts.map((a) => Number(a.cloudProfileId)))];
    const profiles = await this.txHost.tx.getRepository(CloudProfileEntity).find({ where: { id: In(profileIds) } });
    const profileViews = new Map<number, CloudProfileResponse>();
    for (const p of profiles) profileViews.set(Number(p.id), await this.catalog.cloudProfileResponse(p, org));
    const primaryIds = accounts.map((a) => a.primaryCredentialsId).filter((id): id is number => id != null);
    const primaries = primaryIds.length
      ? await this.txHost.tx.getRepository(CloudCredentialsEntity).find({ where: { id: In(primaryIds) }, select: { id: true, identity: true } })
      : [];
    const primaryIdentity = new Map(primaries.map((c) => [Number(c.id), c.identity]));
    return accounts.map((a) => ({
      cloudProfile: profileViews.get(Number(a.cloudProfileId))!,
      displayName: a.displayName,
      enabled: a.enabled,
      identity: a.identity,
      metadata: a.metadata ?? {},
      primaryCloudCredentialsIdentity: a.primaryCredentialsId != null ? (primaryIdentity.get(Number(a.primaryCredentialsId)) ?? null) : null,
    }));
  }

  async toResponse(org: OrganisationEntity, account: CloudAccountEntity): Promise<CloudAccountResponse> {
    return (await this.toResponses(org, [account]))[0];
  }

  async list(org: OrganisationEntity, query: CloudAccountListQuery): Promise<Page<CloudAccountResponse>> {
    const req = toPageRequest(query, SORTABLE);
    const qb = this.repo.createQueryBuilder('a').where('a.organisationId = :org', { org: org.id });
    const name = query['display-name'];
    if (name) qb.andWhere(`a.displayName ILIKE :name ESCAPE '\\'`, { name: `%${escapeLike(name)}%` });
    const providerSlug = query['cloud-provider-slug'];
    if (providerSlug) {
      const provider = await this.catalog.findProvider(providerSlug);
      if (!provider) return toPage([], 0, req, 'B');
      qb.andWhere('a.cloudProviderType = :type', { type: provider.type });
    }
    applyOrder(qb, orderByEntries(req, SORTABLE, 'a.id'));
    qb.skip(req.offset).take(req.size);
    const [rows, total] = await qb.getManyAndCount();
    return toPage(await this.toResponses(org, rows), total, req, 'B');
  }

  async get(org: OrganisationEntity, identity: string): Promise<CloudAccountResponse> {
    return this.toResponse(org, await this.find(org, identity));
  }

  async create(org: OrganisationEntity, req: CreateCloudAccountRequest): Promise<CloudAccountResponse> {
    const profile = await this.catalog.findCloudProfile(req.cloudProfile);
    if (!profile || !profile.enabled)
      throw ValidationFailedException.forField(
        'cloudProfile',
        `cloudProfile '${req.cloudProfile}' is not ${profile ? 'enabled' : 'a cloud profile of the catalog'}; give the identity or slug of an enabled cloud profile (GET /api/v1/orgs/${org.slug}/cloud-profiles lists them)`,
      );
    const provider = await this.catalog.findProviderByType(profile.type);
    if (!provider || !providerVisibleTo(org, provider))
      throw ValidationFailedException.forField(
        'cloudProfile',
        `cloudProfile '${req.cloudProfile}' belongs to cloud provider '${profile.type}', which is not available to organisation '${org.slug}'`,
      );
    const now = this.clock.now();
    const account = await this.repo.save(
      this.repo.create({
        organisationId: org.id,
        cloudProfileId: profile.id,
        cloudProviderType: profile.type,
        displayName: req.displayName,
        enabled: true,
        metadata: req.metadata ?? {},
        primaryCredentialsId: null,
        createdAt: now,
        modifiedAt: now,
      }),
    );
    this.audit.record({
      type: 'CLOUD_ACCOUNT_CREATED',
      organisation: { id: org.id, slug: org.slug },
      cloudAccountName: account.displayName,
      referencedEntityIdentity: account.identity,
      subject: account.displayName,
      details: auditDiff(null, {
        displayName: account.displayName,
        cloudProfile: profile.slug,
        cloudProviderType: account.cloudProviderType,
        enabled: account.enabled,
        metadata: account.metadata,
      }),
    });
    return this.toResponse(org, account);
  }

  async update(org: OrganisationEntity, identity: string, req: UpdateCloudAccountRequest): Promise<CloudAccountResponse> {
    const account = await this.find(org, identity, true);
    const credRepo = this.txHost.tx.getRepository(CloudCredentialsEntity);
    const currentPrimary =
      account.primaryCredentialsId != null ? await credRepo.findOne({ where: { id: account.primaryCredentialsId } }) : null;
    const before = {
      displayName: account.displayName,
      enabled: account.enabled,
      primaryCloudCredentialsIdentity: currentPrimary?.identity ?? null,
    };
    let primaryIdentity = before.primaryCloudCredentialsIdentity;
    // "" means "leave unchanged": the original Terraform provider sends it on every update.
    if (req.primaryCloudCredentials !== undefined && req.primaryCloudCredentials !== '') {
      const cred = await credRepo.findOne({ where: { identity: req.primaryCloudCredentials.toLowerCase(), cloudAccountId: account.id } });
      if (!cred)
        throw ValidationFailedException.forField(
          'primaryCloudCredentials',
          `primaryCloudCredentials ${req.primaryCloudCredentials} is not a credential of cloud account ${account.identity}`,
        );
      account.primaryCredentialsId = cred.id;
      primaryIdentity = cred.identity;
    }
    if (req.displayName !== undefined) account.displayName = req.displayName;
    if (req.enabled !== undefined) account.enabled = req.enabled;
    const details = auditDiff(before, {
      displayName: account.displayName,
      enabled: account.enabled,
      primaryCloudCredentialsIdentity: primaryIdentity,
    });
    if (Object.keys(details).length) {
      account.modifiedAt = this.clock.now();
      await this.repo.save(account);
    }
    this.audit.record({
      type: 'CLOUD_ACCOUNT_UPDATED',
      organisation: { id: org.id, slug: org.slug },
      cloudAccountName: account.displayName,
      referencedEntityIdentity: account.identity,
      subject: account.displayName,
      details,
    });
    return this.toResponse(org, account);
  }

  /**
   * Refused while a cluster that is not deleted uses the account, or one of its clusters was deleted
   * less than 24 hours ago (by the service clock). Deleting the account removes its credentials.
   */
  async delete(org: OrganisationEntity, identity: string): Promise<void> {
    const account = await this.find(org, identity, true);
    const now = this.clock.now();
    const [usage] = await this.txHost.tx.query(
      `SELECT count(*) FILTER (WHERE deleted_at IS NULL)::int AS active,
              count(*) FILTER (WHERE deleted_at IS NULL AND NOT ${clusterHolds()})::int AS deleting,
              (array_agg(name ORDER BY name) FILTER (WHERE deleted_at IS NULL))[1:3] AS names,
              max(deleted_at) FILTER (WHERE deleted_at > $2) AS "lastDeletedAt"
         FROM clusters WHERE cloud_account_id = $1`,
      [account.id, new Date(now.getTime() - DELETE_GUARD_MS)],
    );
    // Why, in the message: a Terraform user meets this at `terraform destroy`, right after the cluster's delete.
    const why =
      'A cloud account can be deleted 24 hours after the last cluster that used it is deleted: deleting a cluster uses the ' +
      "account to remove the cluster's cloud resources, and the 24 hours leave time for the provider's clean-up to finish.";
    if (usage.active > 0) {
      const names = (usage.names as string[]).map((n) => `'${n}'`).join(', ') + (usage.active > 3 ? ', ...' : '');
      const state =
        usage.deleting === usage.active
          ? `${usage.active === 1 ? 'is' : 'are'} being deleted; retry 24 hours after ${usage.active === 1 ? 'its' : 'their'} deletion completes`
          : `${usage.active === 1 ? 'is' : 'are'} not deleted; delete ${usage.active === 1 ? 'it' : 'them'} first, then retry 24 hours after the deletion completes`;
      throw new ConflictException(
        `Cloud account '${account.displayName}' is used by ${usage.active} cluster${usage.active === 1 ? '' : 's'} (${names}), which ${state}. ${why}`,
      );
    }
    if (usage.lastDeletedAt) {
      const possibleAt = new Date(new Date(usage.lastDeletedAt).getTime() + DELETE_GUARD_MS);
      throw new ConflictException(
        `Cloud account '${account.displayName}' was used by a cluster deleted at ${new Date(usage.lastDeletedAt).toISOString()}; it can be deleted from ${possibleAt.toISOString()}. ${why}`,
      );
    }
    const [{ n: credentials }] = await this.txHost.tx.query(
      'SELECT count(*)::int AS n FROM cloud_credentials WHERE cloud_account_id = $1',
      [account.id],
    );
    await this.repo.delete({ id: account.id });
    this.audit.record({
      type: 'CLOUD_ACCOUNT_DELETED',
      organisation: { id: org.id, slug: org.slug },
      cloudAccountName: account.displayName,
      referencedEntityIdentity: account.identity,
      subject: account.displayName,
      details: {
        ...auditDiff(
          { displayName: account.displayName, cloudProviderType: account.cloudProviderType, enabled: account.enabled, metadata: account.metadata },
          null,
        ),
        credentialsCount: { old: credentials, new: null },
      },
    });
  }
}
