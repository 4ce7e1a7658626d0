import { escapePrototypeKeys, restorePrototypeKeys, unescapeKeys } from '../common/prototype-keys';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, UnauthorizedException } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { createHash, timingSafeEqual } from 'crypto';
import { AuditRecorder } from '../audit/audit-recorder';
import { WebhookOutbox } from '../webhooks/webhook-outbox';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { flattenValidationErrors, ValidationFailedException } from '../common/errors';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { AlertManagerWebhookDto, Alerts, TenantAlert, TenantAlertCounts, WebhookAlertDto, WebhookReceivedResponse } from './dto/alerts.dto';
import { hashWebhookToken, TENANT_SELECT, TenantRow, TenantsService } from './tenants.service';
import { Executor, executorKey } from '../executor/executor';
import type { ObservabilityTasks } from './observability-tasks';
import { SilenceMatcher, silencedByLiterals, usesRegex } from './silence-matchers';
import { SilencesService } from './silences.service';

const MAX_LABELS = 100;
const MAX_LABEL_KEY = 256;
const MAX_LABEL_VALUE = 8192;

interface AlertRow {
  tenant_id: string;
  fingerprint: string;
  status: 'firing' | 'resolved';
  labels: Record<string, string>;
  annotations: Record<string, string>;
  starts_at: Date;
  ends_at: Date | null;
}

/** Reads the webhook token from `Authorization: Bearer <token>` or `X-Alert-Token: <token>`. */
export function presentedWebhookToken(headers: Record<string, string | string[] | undefined>): string | null {
  const single = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const x = single(headers['x-alert-token'])?.trim();
  if (x) return x;
  const auth = single(headers['authorization'])?.trim();
  const m = auth ? /^Bearer\s+(\S+)$/i.exec(auth) : null;
  return m ? m[1] : null;
}

/** The alert-manager fingerprint is opaque; without one, a stable digest of the sorted labels stands in. */
export function labelFingerprint(labels: Record<string, string>): string {
  const canonical = JSON.stringify(Object.keys(labels).sort().map((k) => [k, labels[k]]));
  return createHash('sha256').update(canonical, 'utf8').digest('hex').slice(0, 16);
}

function checkStringMap(field: string, value: unknown, errors: { field: string; message: string }[]): void {
  if (value === undefined) return;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    errors.push({ field, message: `${field} must be an object of strings` });
    return;
  }
  const entries = Object.entries(value);
  if (entries.length > MAX_LABELS) errors.push({ field, message: `${field} may hold at most ${MAX_LABELS} entries` });
  for (const [k, v] of entries) {
    if (typeof v !== 'string') errors.push({ field: `${field}.${k}`, message: `${field}.${k} must be a string` });
    else if (k.length > MAX_LABEL_KEY || v.length > MAX_LABEL_VALUE)
      errors.push({ field: `${field}.${k}`, message: `${field}.${k} is too long (key ${MAX_LABEL_KEY}, value ${MAX_LABEL_VALUE} characters at most)` });
  }
}

/** Parses an alert-manager time; the zero time (year 1) and absent values mean "none". */
function parseTime(field: string, value: string | undefined, errors: { field: string; message: string }[]): Date | null {
  if (value === undefined || value === '') return null;
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) {
    errors.push({ field, message: `${field} must be an RFC 3339 date-time` });
    return null;
  }
  return d.getUTCFullYear() < 1970 ? null : d;
}

@Injectable()
export class AlertsService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
    private readonly tenants: TenantsService,
    private readonly silences: SilencesService,
    private readonly outbox: WebhookOutbox,
    private readonly config: AppConfig,
    private readonly executor: Executor<ObservabilityTasks>,
  ) {}

  /** Finds the tenant whose webhook token matches; slugs are unique only per organisation. 401 otherwise. */
  async authenticateTenant(tenantSlug: string, token: string | null): Promise<TenantRow> {
    if (!token) throw new UnauthorizedException('An alert webhook token is required (Authorization: Bearer <token> or X-Alert-Token).');
    const presented = Buffer.from(hashWebhookToken(token), 'hex');
    const candidates: TenantRow[] = await this.txHost.tx.query(
      `${TENANT_SELECT} WHERE t.slug = $1 AND t.deleted_at IS NULL AND t.webhook_token_hash IS NOT NULL`,
      [tenantSlug],
    );
    const match = candidates.find((c) => {
      const stored = Buffer.from(c.webhook_token_hash!.trim(), 'hex');
      return stored.length === presented.length && timingSafeEqual(stored, presented);
    });
    if (!match) throw new UnauthorizedException('The alert webhook token is not valid for this tenant.');
    return match;
  }

  /** Stores the alerts of one webhook call: upsert by (tenant, fingerprint), so repeats change nothing. */
  async receive(tenantSlug: string, token: string | null, raw: unknown): Promise<WebhookReceivedResponse> {
    const tenant = await this.authenticateTenant(tenantSlug, token);
    const body = await this.validatePayload(raw);
    const errors: { field: string; message: string }[] = [];
    const now = this.clock.now();
    const alerts = body.alerts.map((a: WebhookAlertDto, i: number) => {
      const startsAt = parseTime(`alerts.${i}.startsAt`, a.startsAt, errors);
      if (!startsAt && !errors.some((e) => e.field === `alerts.${i}.startsAt`))
        errors.push({ field: `alerts.${i}.startsAt`, message: `alerts[${i}].startsAt is required` });
      let endsAt = parseTime(`alerts.${i}.endsAt`, a.endsAt, errors);
      // For a firing alert endsAt is only the alert manager's timeout estimate; keep null until resolved.
      if (a.status === 'firing') endsAt = null;
      else if (!endsAt) endsAt = now;
      return {
        fingerprint: a.fingerprint ?? labelFingerprint(a.labels),
        status: a.status,
        labels: a.labels,
        annotations: a.annotations ?? {},
        startsAt,
        endsAt,
      };
    });
    if (errors.length) throw new ValidationFailedException(errors);
    // The same fingerprint twice in one payload: the later entry wins.
    const byFingerprint = new Map(alerts.map((a) => [a.fingerprint, a]));
    // One statement for the whole notification (Alertmanager batches up to thousands of alerts): the rows that were
    // inserted or actually changed come back; a repeated notification of the same alert changes nothing.
    const changed: { fingerprint: string }[] = await this.txHost.tx.query(
      `INSERT INTO tenant_alerts (tenant_id, fingerprint, status, labels, annotations, starts_at, ends_at, created_at, modified_at)
       SELECT $1, r.fingerprint, r.status, r.labels, r.annotations, r.starts_at, r.ends_at, $3, $3
         FROM jsonb_to_recordset($2::jsonb) AS r(fingerprint text, status text, labels jsonb, annotations jsonb, starts_at timestamptz, ends_at timestamptz)
       ON CONFLICT (tenant_id, fingerprint) DO UPDATE
         SET status = EXCLUDED.status, labels = EXCLUDED.labels, annotations = EXCLUDED.annotations,
             starts_at = EXCLUDED.starts_at, ends_at = EXCLUDED.ends_at, modified_at = EXCLUDED.modified_at
       WHERE NOT (tenant_alerts.status = 'resolved' AND EXCLUDED.status = 'firing' AND EXCLUDED.starts_at <= tenant_alerts.starts_at)
         AND (tenant_alerts.status, tenant_alerts.labels, tenant_alerts.annotations, tenant_alerts.starts_at, tenant_alerts.ends_at)
             IS DISTINCT FROM (EXCLUDED.status, EXCLUDED.labels, EXCLUDED.annotations, EXCLUDED.starts_at, EXCLUDED.ends_at)
       RETURNING fingerprint`,
      [
        tenant.id,
        JSON.stringify(
          [...byFingerprint.values()].map((a) => ({
            fingerprint: a.fingerprint,
            status: a.status,
            labels: a.labels,
            annotations: a.annotations,
            starts_at: a.startsAt,
            ends_at: a.endsAt,
          })),
        ),
        now,
      ],
    );
    // One webhook event per alert that changed, when a subscription wants alert events at all.
    if (changed.length && (await this.outbox.subscribed(Number(tenant.organisation_id), ['ALERT_FIRING', 'ALERT_RESOLVED']))) {
      const changedSet = new Set(changed.map((c) => c.fingerprint));
      // In the notification's order (RETURNING's is not defined).
      for (const a of [...byFingerprint.values()].filter((x) => changedSet.has(x.fingerprint))) {
        await this.outbox.enqueue({
          organisationId: Number(tenant.organisation_id),
          type: a.status === 'firing' ? 'ALERT_FIRING' : 'ALERT_RESOLVED',
          data: {
            organisation: { slug: tenant.org_slug },
            environment: tenant.e_id ? { slug: tenant.e_slug! } : null,
            cluster: tenant.c_id ? { slug: tenant.c_slug! } : null,
            referencedEntityIdentity: tenant.identity,
            message: `Alert ${a.labels.alertname ?? a.fingerprint} is ${a.status} in monitoring tenant ${tenant.slug}`,
            details: { fingerprint: a.fingerprint, status: a.status, labels: a.labels, annotations: a.annotations, startsAt: a.startsAt, endsAt: a.endsAt },
          },
        });
      }
    }
    // Resolved alerts are kept RESOLVED_ALERT_RETENTION_DAYS after they ended (0: forever): this tenant's are pruned
    // here, everyone's by the retention job (src/retention) with the same rule.
    await this.txHost.tx.query(
      `DELETE FROM tenant_alerts WHERE tenant_id = $1 AND status = 'resolved' AND $3 > 0 AND ends_at < $2::timestamptz - make_interval(days => $3)`,
      [tenant.id, now, this.config.RESOLVED_ALERT_RETENTION_DAYS],
    );
    const firing = [...byFingerprint.values()].filter((a) => a.status === 'firing').length;
    const resolved = byFingerprint.size - firing;
    this.audit.record({
      type: 'ALERTS_RECEIVED',
      organisation: { id: Number(tenant.organisation_id), slug: tenant.org_slug },
      environment: tenant.e_id ? { id: Number(tenant.e_id), slug: tenant.e_slug! } : null,
      cluster: tenant.c_id ? { id: Number(tenant.c_id), slug: tenant.c_slug! } : null,
      referencedEntityIdentity: tenant.identity,
      subject: `for monitoring tenant ${tenant.slug}`,
      details: {
        firing: { old: null, new: firing },
        resolved: { old: null, new: resolved },
        receiver: { old: null, new: body.receiver },
      },
    });
    return { message: `Received ${byFingerprint.size} alert${byFingerprint.size === 1 ? '' : 's'}`, firing, resolved };
  }

  private async validatePayload(raw: unknown): Promise<AlertManagerWebhookDto> {
    if (!raw || typeof raw !== 'object' || Array.isArray(raw))
      throw ValidationFailedException.forField('body', 'The body must be the alert-manager webhook JSON object.');
    escapePrototypeKeys(raw); // label names such as `constructor` are data (see prototype-keys.ts)
    const dto = plainToInstance(AlertManagerWebhookDto, raw);
    const errors = flattenValidationErrors(await validate(dto, { whitelist: true, forbidNonWhitelisted: true })).map((e) => ({
      field: unescapeKeys(e.field),
      message: unescapeKeys(e.message),
    }));
    restorePrototypeKeys(dto);
    for (const f of ['groupLabels', 'commonLabels', 'commonAnnotations'] as const) checkStringMap(f, dto[f], errors);
    (Array.isArray(dto.alerts) ? dto.alerts : []).forEach((a, i) => {
      if (a && typeof a === 'object') {
        checkStringMap(`alerts.${i}.labels`, a.labels, errors);
        checkStringMap(`alerts.${i}.annotations`, a.annotations, errors);
      }
    });
    if (errors.length) throw new ValidationFailedException(errors);
    return dto;
  }

  /**
   * One alert as the lists answer it: today's fields plus the original client's `ObservabilityAlert` fields
   * (`state`, `activeAt`, `value`). A firing alert that an active silence matches is `suppressed`.
   */
  private toAlert(r: AlertRow, silencedBy: string[]): TenantAlert {
    return {
      fingerprint: r.fingerprint,
      status: r.status,
      state: r.status === 'resolved' ? 'resolved' : silencedBy.length ? 'suppressed' : 'firing',
      silencedBy,
      labels: r.labels,
      annotations: r.annotations,
      startsAt: new Date(r.starts_at).toISOString(),
      activeAt: new Date(r.starts_at).toISOString(),
      endsAt: r.ends_at ? new Date(r.ends_at).toISOString() : null,
      value: r.annotations?.value ?? null,
    };
  }

  private async alertsOf(tenantIds: string[]): Promise<AlertRow[]> {
    if (tenantIds.length === 0) return [];
    return this.txHost.tx.query(
      `SELECT tenant_id, fingerprint, status, labels, annotations, starts_at, ends_at
         FROM tenant_alerts WHERE tenant_id = ANY($1::bigint[])
        ORDER BY (status = 'firing') DESC, starts_at DESC, fingerprint`,
      [tenantIds],
    );
  }

  /**
   * The alerts of each group (a tenant's alerts with its active silences) as answered, each with the silences that
   * mute it. Silences with regular expressions are matched on the executor, in one task for the whole request (user
   * patterns, label values up to 8 KiB, every alert against every silence); literal matchers are plain comparisons
   * and stay here.
   */
  private async withSilences(
    org: OrganisationEntity,
    groups: { rows: AlertRow[]; active?: { id: string; matchers: SilenceMatcher[] }[] }[],
  ): Promise<TenantAlert[][]> {
    const work = groups.map(({ rows, active = [] }) => {
      const firing = active.length ? rows.filter((r) => r.status === 'firing') : [];
      return { rows, firing, silences: active };
    });
    const regex = work.filter((w) => w.firing.length && usesRegex(w.silences));
    const matched = regex.length
      ? await this.executor.run(executorKey(org.id), 'silences.match', regex.map((w) => ({ silences: w.silences, alerts: w.firing.map((r) => r.labels) })))
      : [];
    return work.map((w) => {
      const muted = !w.firing.length ? [] : regex.includes(w) ? matched[regex.indexOf(w)] : silencedByLiterals(w.silences, w.firing.map((r) => r.labels));
      const byAlert = new Map(w.firing.map((r, i) => [r, muted[i]]));
      return w.rows.map((r) => this.toAlert(r, byAlert.get(r) ?? []));
    });
  }

  /** The non-deleted tenants of the organisation with their stored alerts and active silences. */
  private async organisationAlerts(org: OrganisationEntity): Promise<{ tenant: TenantRow; alerts: TenantAlert[] }[]> {
    const tenants: TenantRow[] = await this.txHost.tx.query(
      `${TENANT_SELECT} WHERE t.organisation_id = $1 AND t.deleted_at IS NULL ORDER BY t.slug, t.id`,
      [org.id],
    );
    const ids = tenants.map((t) => String(t.id));
    const rows = await this.alertsOf(ids);
    const active = await this.silences.activeByTenant(ids, this.clock.now());
    const alerts = await this.withSilences(
      org,
      tenants.map((tenant) => ({ rows: rows.filter((r) => String(r.tenant_id) === String(tenant.id)), active: active.get(String(tenant.id)) })),
    );
    return tenants.map((tenant, i) => ({ tenant, alerts: alerts[i] }));
  }

  private static tenantRefs(t: TenantRow): Pick<Alerts, 'tenantSlug' | 'clusterSlug' | 'environmentSlug'> {
    return { tenantSlug: t.slug, clusterSlug: t.c_slug, environmentSlug: t.c_environment_slug ?? t.e_slug };
  }

  /**
   * Every stored alert of the organisation's tenants as one list (firing first, then the newest; ties by tenant),
   * each with its tenant, cluster and environment.
   */
  async listForOrganisation(org: OrganisationEntity): Promise<Alerts[]> {
    const rank = (a: TenantAlert) => (a.status === 'firing' ? 0 : 1);
    return (await this.organisationAlerts(org))
      .flatMap(({ tenant, alerts }) => alerts.map((a) => ({ ...a, ...AlertsService.tenantRefs(tenant) })))
      .sort((a, b) => rank(a) - rank(b) || b.startsAt.localeCompare(a.startsAt) || a.tenantSlug.localeCompare(b.tenantSlug) || a.fingerprint.localeCompare(b.fingerprint));
  }

  /** Per tenant (every tenant, by slug): how many of its alerts fire, are silenced and are resolved. */
  async countsForOrganisation(org: OrganisationEntity): Promise<TenantAlertCounts[]> {
    return (await this.organisationAlerts(org)).map(({ tenant, alerts }) => ({
      ...AlertsService.tenantRefs(tenant),
      firing: alerts.filter((a) => a.state === 'firing').length,
      suppressed: alerts.filter((a) => a.state === 'suppressed').length,
      resolved: alerts.filter((a) => a.state === 'resolved').length,
    }));
  }

  async listForTenant(org: OrganisationEntity, tenantSlug: string): Promise<TenantAlert[]> {
    const tenant = await this.tenants.findRow(org, tenantSlug);
    const active = (await this.silences.activeByTenant([String(tenant.id)], this.clock.now())).get(String(tenant.id));
    const [alerts] = await this.withSilences(org, [{ rows: await this.alertsOf([String(tenant.id)]), active }]);
    return alerts;
  }
}
