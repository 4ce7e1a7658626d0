import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, NotFoundException } from '@nestjs/common';
import { AuditRecorder } from '../audit/audit-recorder';
import { Clock } from '../common/clock';
import { ValidationFailedException } from '../common/errors';
import type { OrganisationEntity } from '../organisations/organisation.entity';
import {
  ClusterUsingIntegration,
  INTEGRATION_CONFIG_MAX_KEY,
  INTEGRATION_CONFIG_MAX_KEYS,
  INTEGRATION_CONFIG_MAX_VALUE,
  OrganisationIntegrationResponse,
  UpdateOrganisationIntegrationRequest,
} from './dto/organisation-integration.dto';
import { OrganisationIntegrationEntity, OrganisationIntegrationType } from './organisation-integration.entity';

export const DEFAULT_INTEGRATION_DISPLAY_NAME = 'Alerting';

@Injectable()
export class OrganisationIntegrationsService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
  ) {}

  private get repo() {
    return this.txHost.tx.getRepository(OrganisationIntegrationEntity);
  }

  /**
   * Clusters (non-deleted) of the organisation whose add-ons enable an add-on feeding this
   * integration type (catalog `addons.integration`); an add-on absent from a cluster's map counts
   * with its catalog default.
   */
  async clustersUsing(organisationId: number | string, type: OrganisationIntegrationType): Promise<ClusterUsingIntegration[]> {
    const rows: { identity: string; enabled: boolean; env_slug: string; slug: string; name: string }[] = await this.txHost.tx.query(
      `SELECT DISTINCT ON (c.id) c.id, c.identity, c.slug, c.name, e.slug AS env_slug, true AS enabled
         FROM clusters c
         JOIN environments e ON e.id = c.environment_id
         JOIN addons a ON a.integration = $2
        WHERE c.organisation_id = $1 AND c.deleted_at IS NULL
          AND COALESCE((c.addons -> a.name ->> 'enabled')::boolean, a.default_enabled)
        ORDER BY c.id`,
      [organisationId, type],
    );
    return rows
      .map((r) => ({ clusterIdentity: r.identity, enabled: r.enabled, environmentSlug: r.env_slug, clusterSlug: r.slug, clusterName: r.name }))
      .sort((a, b) => a.environmentSlug.localeCompare(b.environmentSlug) || a.clusterSlug.localeCompare(b.clusterSlug));
  }

  private async toResponse(i: OrganisationIntegrationEntity): Promise<OrganisationIntegrationResponse> {
    return {
      identity: i.identity,
      type: i.type,
      displayName: i.displayName,
      enabled: i.enabled,
      config: i.config ?? {},
      createdAt: i.createdAt.toISOString(),
      modifiedAt: i.modifiedAt.toISOString(),
      clustersUsingIntegration: await this.clustersUsing(i.organisationId, i.type),
    };
  }

  /** The organisation's integrations (one, of type `alerting`); created disabled if it is missing. */
  async list(org: OrganisationEntity): Promise<OrganisationIntegrationResponse[]> {
    const now = this.clock.now();
    await this.txHost.tx.query(
      `INSERT INTO organisation_integrations (organisation_id, type, display_name, enabled, config, created_at, modified_at)
       VALUES ($1, 'alerting', $2, false, '{}'::jsonb, $3, $3) ON CONFLICT (organisation_id, type) DO NOTHING`,
      [org.id, DEFAULT_INTEGRATION_DISPLAY_NAME, now],
    );
    const rows = await this.repo.find({ where: { organisationId: org.id }, order: { id: 'ASC' } });
    return Promise.all(rows.map((r) => this.toResponse(r)));
  }

  async update(org: OrganisationEntity, identity: string, body: UpdateOrganisationIntegrationRequest): Promise<OrganisationIntegrationResponse> {
    if (body.organisationIntegrationIdentity.toLowerCase() !== identity.toLowerCase())
      throw ValidationFailedException.forField(
        'organisationIntegrationIdentity',
        'organisationIntegrationIdentity must equal the integration identity in the path',
      );
    if (body.config !== undefined) this.checkConfig(body.config);
    const current = await this.repo
      .createQueryBuilder('i')
      .setLock('pessimistic_write')
      .where('i.organisation_id = :org AND i.identity = :identity', { org: org.id, identity })
      .getOne();
    if (!current) throw new NotFoundException(`Integration ${identity} not found in organisation '${org.slug}'.`);
    const next = {
      displayName: body.displayName !== undefined ? body.displayName.trim() || body.displayName : current.displayName,
      enabled: body.enabled ?? current.enabled,
      config: body.config !== undefined ? { ...body.config } : current.config,
    };
    const details: Record<string, { old: unknown; new: unknown }> = {};
    if (next.displayName !== current.displayName) details.displayName = { old: current.displayName, new: next.displayName };
    if (next.enabled !== current.enabled) details.enabled = { old: current.enabled, new: next.enabled };
    if (JSON.stringify(sorted(next.config)) !== JSON.stringify(sorted(current.config))) {
      // Values may hold credentials of the alerting product: the audit names the keys only.
      details.config = { old: redactedMap(current.config), new: redactedMap(next.config) };
    }
    if (Object.keys(details).length > 0) {
      current.displayName = next.displayName;
      current.enabled = next.enabled;
      current.config = next.config;
      current.modifiedAt = this.clock.now();
      await this.repo.save(current);
    }
    this.audit.record({
      type: 'ORGANISATION_INTEGRATION_UPDATED',
      organisation: { id: Number(org.id), slug: org.slug },
      referencedEntityIdentity: current.identity,
      subject: current.displayName,
      details,
    });
    return this.toResponse(current);
  }

  private checkConfig(config: Record<string, unknown>): void {
    const entries = Object.entries(config);
    if (entries.length > INTEGRATION_CONFIG_MAX_KEYS)
      throw ValidationFailedException.forField('config', `config may hold at most ${INTEGRATION_CONFIG_MAX_KEYS} keys`);
    const errors: { field: string; message: string }[] = [];
    for (const [k, v] of entries) {
      if (k.length === 0 || k.length > INTEGRATION_CONFIG_MAX_KEY)
        errors.push({ field: `config.${k}`, message: `config keys must be 1 to ${INTEGRATION_CONFIG_MAX_KEY} characters` });
      if (typeof v !== 'string') errors.push({ field: `config.${k}`, message: `config.${k} must be a string` });
      else if (v.length > INTEGRATION_CONFIG_MAX_VALUE)
        errors.push({ field: `config.${k}`, message: `config.${k} must be at most ${INTEGRATION_CONFIG_MAX_VALUE} characters` });
    }
    if (errors.length) throw new ValidationFailedException(errors);
  }
}

function sorted(m: Record<string, string>): [string, string][] {
  return Object.entries(m ?? {}).sort(([a], [b]) => a.localeCompare(b));
}
function redactedMap(m: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.keys(m ?? {}).sort().map((k) => [k, '[redacted]']));
}
