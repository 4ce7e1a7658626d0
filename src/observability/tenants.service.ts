import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, NotFoundException } from '@nestjs/common';
import { createHash, randomBytes } from 'crypto';
import { AuditRecorder } from '../audit/audit-recorder';
import { Clock } from '../common/clock';
import { orderBySql, Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import { AppConfig } from '../config/app-config';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { AlertWebhookTokenResponse, ObservabilityTenant, ObservabilityTenantWithPushUrls } from './dto/tenant.dto';

/** A tenant row with its cluster and environment references, as read by TENANT_SELECT. */
export interface TenantRow {
  id: string;
  identity: string;
  organisation_id: string;
  cluster_id: string | null;
  environment_id: string | null;
  slug: string;
  name: string;
  available: boolean;
  ip_white_list: string | null;
  webhook_token_hash: string | null;
  created_at: Date;
  modified_at: Date;
  deleted_at: Date | null;
  c_id: string | null;
  c_identity: string | null;
  c_name: string | null;
  c_slug: string | null;
  c_version: string | null;
  c_deleted_at: Date | null;
  c_environment_slug: string | null;
  e_id: string | null;
  e_name: string | null;
  e_slug: string | null;
  org_slug: string;
}

export const TENANT_SELECT = `
  SELECT t.id, t.identity, t.organisation_id, t.cluster_id, t.environment_id, t.slug, t.name, t.available,
         t.ip_white_list, t.webhook_token_hash, t.created_at, t.modified_at, t.deleted_at,
         c.id AS c_id, c.identity AS c_identity, c.name AS c_name, c.slug AS c_slug, c.version AS c_version,
         c.deleted_at AS c_deleted_at, ce.slug AS c_environment_slug,
         e.id AS e_id, e.name AS e_name, e.slug AS e_slug, o.slug AS org_slug
    FROM observability_tenants t
    JOIN organisations o ON o.id = t.organisation_id
    LEFT JOIN clusters c ON c.id = t.cluster_id
    LEFT JOIN environments ce ON ce.id = c.environment_id
    LEFT JOIN environments e ON e.id = COALESCE(t.environment_id, c.environment_id)`;

const TENANT_SORTABLE: Record<string, string> = {
  id: 't.id',
  name: 't.name',
  slug: 't.slug',
  createdAt: 't.created_at',
  modifiedAt: 't.modified_at',
  available: 't.available',
};

export const hashWebhookToken = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');
export const WEBHOOK_TOKEN_PREFIX = 'cmsw_';

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

export function webhookPath(tenantSlug: string): string {
  return `/api/v1/observability/${encodeURIComponent(tenantSlug)}/alerts/webhook`;
}

@Injectable()
export class TenantsService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
  ) {}

  toResponse(r: TenantRow): ObservabilityTenant {
    return {
      available: r.available,
      cluster: r.c_id
        ? {
            environmentSlug: r.c_environment_slug ?? '',
            id: Number(r.c_id),
            identity: r.c_identity!,
            name: r.c_name!,
            slug: r.c_slug!,
            version: r.c_version!,
            deletedAt: iso(r.c_deleted_at),
          }
        : null,
      createdAt: iso(r.created_at)!,
      modifiedAt: iso(r.modified_at)!,
      deletedAt: iso(r.deleted_at),
      customer: r.org_slug,
      environment: r.e_id ? { id: Number(r.e_id), name: r.e_name!, slug: r.e_slug! } : null,
      id: Number(r.id),
      identity: r.identity,
      ipWhiteList: r.ip_white_list,
      name: r.name,
      slug: r.slug,
    };
  }

  async list(org: OrganisationEntity, query: PageQueryDto): Promise<Page<ObservabilityTenant>> {
    const req = toPageRequest(query, TENANT_SORTABLE, []);
    const order = orderBySql(req, TENANT_SORTABLE, 't.id');
    const rows: TenantRow[] = await this.txHost.tx.query(
      `${TENANT_SELECT} WHERE t.organisation_id = $1 AND t.deleted_at IS NULL ORDER BY ${order} LIMIT $2 OFFSET $3`,
      [org.id, req.size, req.offset],
    );
    const total = await this.count(org);
    return toPage(rows.map((r) => this.toResponse(r)), total.count, req, 'B');
  }

  async count(org: OrganisationEntity): Promise<{ count: number }> {
    const [row] = await this.txHost.tx.query(
      `SELECT count(*)::bigint AS n FROM observability_tenants WHERE organisation_id = $1 AND deleted_at IS NULL`,
      [org.id],
    );
    return { count: Number(row.n) };
  }

  /** The non-deleted tenant `slug` of the organisation, or 404. */
  async findRow(org: OrganisationEntity, slug: string, options: { lock?: boolean } = {}): Promise<TenantRow> {
    const rows: TenantRow[] = await this.txHost.tx.query(
      `${TENANT_SELECT} WHERE t.organisation_id = $1 AND t.slug = $2 AND t.deleted_at IS NULL${options.lock ? ' FOR UPDATE OF t' : ''}`,
      [org.id, slug],
    );
    if (!rows[0]) throw new NotFoundException(`Monitoring tenant '${slug}' not found in organisation '${org.slug}'.`);
    return rows[0];
  }

  async get(org: OrganisationEntity, slug: string): Promise<ObservabilityTenant> {
    return this.toResponse(await this.findRow(org, slug));
  }

  async getWithPushUrls(org: OrganisationEntity, slug: string): Promise<ObservabilityTenantWithPushUrls> {
    const tenant = await this.get(org, slug);
    const base = this.config.OBSERVABILITY_PUSH_BASE_URL.replace(/\/+$/, '');
    const path = `${encodeURIComponent(org.slug)}/${encodeURIComponent(tenant.slug)}/push`;
    return { ...tenant, monitoringPushUrl: `${base}/metrics/v1/${path}`, loggingPushUrl: `${base}/logs/v1/${path}` };
  }

  /** Issues a new webhook token for the tenant (replacing any earlier one); the value is shown once. */
  async rotateWebhookToken(org: OrganisationEntity, slug: string): Promise<AlertWebhookTokenResponse> {
    const row = await this.findRow(org, slug, { lock: true });
    const token = WEBHOOK_TOKEN_PREFIX + randomBytes(32).toString('base64url');
    await this.txHost.tx.query(`UPDATE observability_tenants SET webhook_token_hash = $2, modified_at = $3 WHERE id = $1`, [
      row.id,
      hashWebhookToken(token),
      this.clock.now(),
    ]);
    this.audit.record({
      type: 'ALERT_WEBHOOK_TOKEN_ROTATED',
      organisation: { id: Number(org.id), slug: org.slug },
      environment: row.e_id ? { id: Number(row.e_id), slug: row.e_slug! } : null,
      cluster: row.c_id ? { id: Number(row.c_id), slug: row.c_slug! } : null,
      referencedEntityIdentity: row.identity,
      subject: `for monitoring tenant ${row.slug}`,
      details: { webhookToken: { old: row.webhook_token_hash ? '[redacted]' : null, new: '[redacted]' } },
    });
    return { token, url: webhookPath(row.slug) };
  }
}
