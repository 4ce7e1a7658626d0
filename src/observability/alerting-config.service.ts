import { SecretBox } from '../common/secret-box';
import { SECRET_PLACEHOLDER } from '../common/secret-text';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, NotFoundException, OnModuleInit } from '@nestjs/common';
import { createHash } from 'crypto';
import { AuditRecorder } from '../audit/audit-recorder';
import type { AuditDetails } from '../audit/audit-event.entity';
import { Clock } from '../common/clock';
import { ValidationFailedException } from '../common/errors';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { Executor, executorKey } from '../executor/executor';
import type { ObservabilityTasks } from './observability-tasks';
import { AlertingProblem, describeProblem } from './alerting-limits';
import { DEFAULT_RULES_FILE_NAME, loadDefaultRules } from './default-alerting-rules';
import {
  AlertingConfigurationRequest,
  AlertingConfigurationResponse,
  AlertingValidationResponse,
  MessageResponse,
} from './dto/alerting.dto';
import type { AlertingFiles } from './observability-tenant.entity';
import { TenantsService } from './tenants.service';


interface StoredConfig {
  alertingConfig: string | null;
  ruleFiles: AlertingFiles;
  templateFiles: AlertingFiles;
}

const digest = (text: string) => `sha256:${createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 12)}`;

/** Which files changed (by short digest, never the contents). */
export function alertingChanges(before: StoredConfig, after: StoredConfig): AuditDetails {
  const details: Record<string, { old: unknown; new: unknown }> = {};
  const a = (before.alertingConfig ?? '') || null;
  const b = (after.alertingConfig ?? '') || null;
  if (a !== b) details.alertingConfig = { old: a === null ? null : digest(a), new: b === null ? null : digest(b) };
  for (const kind of ['ruleFiles', 'templateFiles'] as const) {
    const names = new Set([...Object.keys(before[kind] ?? {}), ...Object.keys(after[kind] ?? {})]);
    for (const name of [...names].sort()) {
      const o = before[kind]?.[name];
      const n = after[kind]?.[name];
      if (o !== n) details[`${kind}.${name}`] = { old: o === undefined ? null : digest(o), new: n === undefined ? null : digest(n) };
    }
  }
  return details as AuditDetails;
}

@Injectable()
export class AlertingConfigService implements OnModuleInit {
  private defaultRules = '';

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
    private readonly tenants: TenantsService,
    private readonly executor: Executor<ObservabilityTasks>,
    private readonly secrets: SecretBox,
  ) {}

  /** The alert-manager configuration holds receiver credentials: sealed at rest, bound to its row. */
  private seal(text: string | null, context: string): string | null {
    return text === null ? null : this.secrets.seal(text, context);
  }

  private unseal(text: string | null | undefined, context: string): string | null {
    if (!text) return null;
    // Rows written before encryption hold plain YAML; they are sealed on their next change.
    return text.startsWith('v1.') && !text.includes('\n') ? this.secrets.open(text, context) : text;
  }

  /** Puts back stored secrets where the request sent `<secret>`; 400 where nothing is stored there. */
  private async withStoredSecrets(org: OrganisationEntity, next: StoredConfig, before: StoredConfig): Promise<StoredConfig> {
    // Only a document holding the placeholder needs parsing (on the executor: the event loop never parses YAML).
    if (!next.alertingConfig || !next.alertingConfig.includes(SECRET_PLACEHOLDER)) return next;
    const { text, missing } = await this.executor.run(executorKey(org.id), 'alerting.restore', { text: next.alertingConfig, stored: before.alertingConfig });
    if (missing.length) {
      throw new ValidationFailedException(
        missing.map((path) => ({ field: `alertingConfig.${path}`, message: `alertingConfig.${path} is ${SECRET_PLACEHOLDER} but no value is stored there` })),
      );
    }
    return { ...next, alertingConfig: text };
  }

  onModuleInit(): void {
    this.defaultRules = loadDefaultRules();
  }

  private check(org: OrganisationEntity, body: AlertingConfigurationRequest): Promise<AlertingProblem[]> {
    const input = { alertingConfig: body.alertingConfig, ruleFiles: body.ruleFiles, templateFiles: body.templateFiles };
    return this.executor.run(executorKey(org.id), 'alerting.check', input);
  }

  /** Problems of a configuration, each with its file and, where known, line and column. */
  async validate(org: OrganisationEntity, body: AlertingConfigurationRequest): Promise<AlertingValidationResponse> {
    const errors = await this.check(org, body);
    return { valid: errors.length === 0, errors };
  }

  /** 400 naming each file and problem; nothing is stored. */
  private async assertValid(org: OrganisationEntity, body: AlertingConfigurationRequest): Promise<StoredConfig> {
    const problems: AlertingProblem[] = await this.check(org, body);
    if (problems.length) {
      throw new ValidationFailedException(
        problems.map((p) => ({ field: p.file, message: describeProblem(p) })),
        `Invalid alerting configuration: ${problems.map(describeProblem).join('; ')}`,
      );
    }
    return {
      alertingConfig: body.alertingConfig && body.alertingConfig.trim() ? body.alertingConfig : null,
      ruleFiles: { ...(body.ruleFiles ?? {}) },
      templateFiles: { ...(body.templateFiles ?? {}) },
    };
  }

  /** Roles below MEMBER and READ_ONLY tokens see `<secret>` in place of receiver credentials. */
  private async toResponse(org: OrganisationEntity, c: StoredConfig | undefined, reveal: boolean): Promise<AlertingConfigurationResponse> {
    const text = c?.alertingConfig ?? '';
    return {
      alertingConfig: reveal || !text.trim() ? text : await this.executor.run(executorKey(org.id), 'alerting.redact', text),
      ruleFiles: c?.ruleFiles ?? {},
      templateFiles: c?.templateFiles ?? {},
    };
  }

  private async environment(org: OrganisationEntity, slug: string): Promise<{ id: string; slug: string; name: string }> {
    const [env] = await this.txHost.tx.query(
      `SELECT id, slug, name FROM environments WHERE organisation_id = $1 AND slug = $2 AND deleted_at IS NULL`,
      [org.id, slug],
    );
    if (!env) throw new NotFoundException(`Environment '${slug}' not found in organisation '${org.slug}'.`);
    return env;
  }

  private async environmentConfig(environmentId: string, lock = false): Promise<StoredConfig | undefined> {
    const [row] = await this.txHost.tx.query(
      `SELECT alerting_config AS "alertingConfig", rule_files AS "ruleFiles", template_files AS "templateFiles"
         FROM environment_alerting_configs WHERE environment_id = $1${lock ? ' FOR UPDATE' : ''}`,
      [environmentId],
    );
    return row ? { ...row, alertingConfig: this.unseal(row.alertingConfig, `environment-alerting:${environmentId}`) } : row;
  }

  private async storeEnvironmentConfig(environmentId: string, c: StoredConfig): Promise<void> {
    const now = this.clock.now();
    await this.txHost.tx.query(
      `INSERT INTO environment_alerting_configs (environment_id, alerting_config, rule_files, template_files, created_at, modified_at)
       VALUES ($1, $2, $3::jsonb, $4::jsonb, $5, $5)
       ON CONFLICT (environment_id) DO UPDATE
         SET alerting_config = EXCLUDED.alerting_config, rule_files = EXCLUDED.rule_files,
             template_files = EXCLUDED.template_files, modified_at = EXCLUDED.modified_at`,
      [environmentId, this.seal(c.alertingConfig, `environment-alerting:${environmentId}`), JSON.stringify(c.ruleFiles), JSON.stringify(c.templateFiles), now],
    );
  }

  async getForEnvironment(org: OrganisationEntity, envSlug: string, reveal: boolean): Promise<AlertingConfigurationResponse> {
    const env = await this.environment(org, envSlug);
    return this.toResponse(org, await this.environmentConfig(env.id), reveal);
  }

  async replaceForEnvironment(
    org: OrganisationEntity,
    envSlug: string,
    body: AlertingConfigurationRequest,
  ): Promise<MessageResponse> {
    const checked = await this.assertValid(org, body);
    const env = await this.environment(org, envSlug);
    const before = this.toStored(await this.environmentConfig(env.id, true));
    const next = await this.withStoredSecrets(org, checked, before);
    await this.storeEnvironmentConfig(env.id, next);
    this.audit.record({
      type: 'ALERTING_CONFIGURATION_UPDATED',
      organisation: { id: Number(org.id), slug: org.slug },
      environment: { id: Number(env.id), slug: env.slug },
      subject: `of environment ${env.slug}`,
      details: alertingChanges(before, next),
    });
    return { message: `Alerting configuration of environment '${env.slug}' replaced.` };
  }

  async copyDefaultRules(org: OrganisationEntity, envSlug: string): Promise<MessageResponse> {
    const env = await this.environment(org, envSlug);
    const before = this.toStored(await this.environmentConfig(env.id, true));
    const next: StoredConfig = { ...before, ruleFiles: { ...before.ruleFiles, [DEFAULT_RULES_FILE_NAME]: this.defaultRules } };
    await this.storeEnvironmentConfig(env.id, next);
    this.audit.record({
      type: 'ALERTING_CONFIGURATION_UPDATED',
      organisation: { id: Number(org.id), slug: org.slug },
      environment: { id: Number(env.id), slug: env.slug },
      subject: `of environment ${env.slug} (default rules)`,
      details: alertingChanges(before, next),
    });
    return { message: `Default alerting rules copied to environment '${env.slug}' as rule file '${DEFAULT_RULES_FILE_NAME}'.` };
  }

  private toStored(c: StoredConfig | undefined): StoredConfig {
    return { alertingConfig: c?.alertingConfig ?? null, ruleFiles: c?.ruleFiles ?? {}, templateFiles: c?.templateFiles ?? {} };
  }

  async getForTenant(org: OrganisationEntity, tenantSlug: string, reveal: boolean): Promise<AlertingConfigurationResponse> {
    const tenant = await this.tenants.findRow(org, tenantSlug);
    return this.toResponse(org, await this.tenantConfig(tenant.id), reveal);
  }

  private async tenantConfig(tenantId: string): Promise<StoredConfig> {
    const [row] = await this.txHost.tx.query(
      `SELECT alerting_config AS "alertingConfig", rule_files AS "ruleFiles", template_files AS "templateFiles"
         FROM observability_tenants WHERE id = $1`,
      [tenantId],
    );
    return this.toStored(row ? { ...row, alertingConfig: this.unseal(row.alertingConfig, `tenant-alerting:${tenantId}`) } : row);
  }

  async replaceForTenant(
    org: OrganisationEntity,
    tenantSlug: string,
    body: AlertingConfigurationRequest,
  ): Promise<MessageResponse> {
    const checked = await this.assertValid(org, body);
    const tenant = await this.tenants.findRow(org, tenantSlug, { lock: true });
    const before = await this.tenantConfig(tenant.id);
    const next = await this.withStoredSecrets(org, checked, before);
    await this.txHost.tx.query(
      `UPDATE observability_tenants SET alerting_config = $2, rule_files = $3::jsonb, template_files = $4::jsonb, modified_at = $5 WHERE id = $1`,
      [tenant.id, this.seal(next.alertingConfig, `tenant-alerting:${tenant.id}`), JSON.stringify(next.ruleFiles), JSON.stringify(next.templateFiles), this.clock.now()],
    );
    this.audit.record({
      type: 'ALERTING_CONFIGURATION_UPDATED',
      organisation: { id: Number(org.id), slug: org.slug },
      environment: tenant.e_id ? { id: Number(tenant.e_id), slug: tenant.e_slug! } : null,
      cluster: tenant.c_id ? { id: Number(tenant.c_id), slug: tenant.c_slug! } : null,
      referencedEntityIdentity: tenant.identity,
      subject: `of monitoring tenant ${tenant.slug}`,
      details: alertingChanges(before, next),
    });
    return { message: `Alerting configuration of monitoring tenant '${tenant.slug}' replaced.` };
  }

  /** The validate operation still checks that the tenant exists (404 otherwise) but stores nothing. */
  async validateForTenant(
    org: OrganisationEntity,
    tenantSlug: string,
    body: AlertingConfigurationRequest,
  ): Promise<AlertingValidationResponse> {
    await this.tenants.findRow(org, tenantSlug);
    return this.validate(org, body);
  }
}
