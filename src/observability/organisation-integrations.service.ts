import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger, NotFoundException, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditRecorder } from '../audit/audit-recorder';
import { Clock } from '../common/clock';
import { ValidationFailedException } from '../common/errors';
import { SecretBox } from '../common/secret-box';
import { keepStoredSecret, SECRET_PLACEHOLDER } from '../common/secret-fields';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { OrganisationEvents } from '../organisations/organisation-events';
import {
  ClusterUsingIntegration,
  INTEGRATION_CONFIG_MAX_KEY,
  INTEGRATION_CONFIG_MAX_KEYS,
  INTEGRATION_CONFIG_MAX_VALUE,
  INTEGRATION_CONFIG_PUBLIC_KEYS,
  INTEGRATION_CONFIG_SECRET,
  OrganisationIntegrationResponse,
  UpdateOrganisationIntegrationRequest,
} from './dto/organisation-integration.dto';
import { integrationConfigContext, OrganisationIntegrationConfig, OrganisationIntegrationEntity, OrganisationIntegrationType } from './organisation-integration.entity';

export const DEFAULT_INTEGRATION_DISPLAY_NAME = 'Alerting';

const isPublicKey = (k: string) => (INTEGRATION_CONFIG_PUBLIC_KEYS as readonly string[]).includes(k);

@Injectable()
export class OrganisationIntegrationsService implements OnApplicationBootstrap {
  private readonly logger = new Logger('OrganisationIntegrations');

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
    private readonly secrets: SecretBox,
    private readonly dataSource: DataSource,
    organisations: OrganisationEvents,
  ) {
    // Every organisation starts with its alerting integration, disabled.
    organisations.created.register((organisation, now) =>
      this.repo
        .insert({
          organisationId: organisation.id,
          type: 'alerting',
          displayName: DEFAULT_INTEGRATION_DISPLAY_NAME,
          enabled: false,
          config: {},
          createdAt: now,
          modifiedAt: now,
        })
        .then(() => undefined),
    );
  }

  private get repo() {
    return this.txHost.tx.getRepository(OrganisationIntegrationEntity);
  }

  /** The whole config: public settings in clear, the other values opened from their envelope. */
  private fullConfig(i: OrganisationIntegrationEntity): OrganisationIntegrationConfig {
    const sealed = i.secretConfigCiphertext
      ? (JSON.parse(this.secrets.open(i.secretConfigCiphertext, integrationConfigContext(i.identity))) as OrganisationIntegrationConfig)
      : {};
    return { ...(i.config ?? {}), ...sealed };
  }

  /** Splits a config into what is stored in clear (public settings) and the sealed rest (null when there is none). */
  private seal(identity: string, config: OrganisationIntegrationConfig): { config: OrganisationIntegrationConfig; secretConfigCiphertext: string | null } {
    const open = Object.fromEntries(Object.entries(config).filter(([k]) => isPublicKey(k)));
    const secret = Object.fromEntries(Object.entries(config).filter(([k]) => !isPublicKey(k)));
    return {
      config: open,
      secretConfigCiphertext: Object.keys(secret).length ? this.secrets.seal(JSON.stringify(secret), integrationConfigContext(identity)) : null,
    };
  }

  /**
   * Integrations stored before their secret values were sealed hold them in `config`: they are sealed once at start
   * (idempotent; replicas starting together seal each row once, the row lock deciding).
   */
  async onApplicationBootstrap(): Promise<void> {
    const rows: { id: string; identity: string; config: OrganisationIntegrationConfig; secret_config_ciphertext: string | null }[] =
      await this.dataSource.query(
        `SELECT id, identity, config, secret_config_ciphertext FROM organisation_integrations
          WHERE EXISTS (SELECT 1 FROM jsonb_object_keys(config) k WHERE NOT (k = ANY($1::text[])))`,
        [INTEGRATION_CONFIG_PUBLIC_KEYS],
      );
    for (const row of rows) {
      await this.dataSource.transaction(async (tx) => {
        const [locked] = await tx.query(`SELECT config, secret_config_ciphertext FROM organisation_integrations WHERE id = $1 FOR UPDATE`, [row.id]);
        if (!locked || Object.keys(locked.config).every(isPublicKey)) return;
        const entity = { identity: row.identity, config: locked.config, secretConfigCiphertext: locked.secret_config_ciphertext } as OrganisationIntegrationEntity;
        const sealed = this.seal(row.identity, this.fullConfig(entity));
        await tx.query(`UPDATE organisation_integrations SET config = $2::jsonb, secret_config_ciphertext = $3 WHERE id = $1`, [
          row.id,
          JSON.stringify(sealed.config),
          sealed.secretConfigCiphertext,
        ]);
      });
    }
    if (rows.length) this.logger.log(`Sealed the secret config values of ${rows.length} organisation integrations stored in clear`);
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
      // Answered whole; SecretResponseInterceptor shows the secret values as the caller may see them.
      config: this.fullConfig(i),
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
    const currentConfig = this.fullConfig(current);
    let config = currentConfig;
    if (body.config !== undefined) {
      // A value sent back as the placeholder keeps the stored one.
      const kept = keepStoredSecret(INTEGRATION_CONFIG_SECRET, 'config', { ...body.config }, currentConfig);
      if (kept.missing.length)
        throw new ValidationFailedException(
          kept.missing.map((field) => ({ field, message: `${field} is ${SECRET_PLACEHOLDER} but no value is stored there; send the value` })),
        );
      config = kept.value;
    }
    const next = {
      displayName: body.displayName !== undefined ? body.displayName.trim() || body.displayName : current.displayName,
      enabled: body.enabled ?? current.enabled,
      config,
    };
    const details: Record<string, { old: unknown; new: unknown }> = {};
    if (next.displayName !== current.displayName) details.displayName = { old: current.displayName, new: next.displayName };
    if (next.enabled !== current.enabled) details.enabled = { old: current.enabled, new: next.enabled };
    // The audit service shows the secret values of `config` as [redacted] (its declaration), the public settings as they are.
    if (JSON.stringify(sorted(next.config)) !== JSON.stringify(sorted(currentConfig))) details.config = { old: currentConfig, new: next.config };
    if (Object.keys(details).length > 0) {
      current.displayName = next.displayName;
      current.enabled = next.enabled;
      Object.assign(current, this.seal(current.identity, next.config));
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
