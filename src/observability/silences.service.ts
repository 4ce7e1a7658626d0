import { newIdentity } from '../common/pinned-identities';
import { TransactionHost } from '@nestjs-cls/transactional';
import { isUuid } from '../common/uuid';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { AuditRecorder } from '../audit/audit-recorder';
import { Clock } from '../common/clock';
import { ValidationFailedException } from '../common/errors';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { CreateSilenceRequest, SilenceResponse } from './dto/silence.dto';
import { Executor, executorKey } from '../executor/executor';
import type { ObservabilityTasks } from './observability-tasks';
import { SilenceMatcher, silenceState } from './silence-matchers';
import { TenantRow, TenantsService } from './tenants.service';

/** Silences of one tenant that are not expired: bounded, so matching alerts stays cheap. */
export const MAX_OPEN_SILENCES = 100;

interface SilenceRow {
  id: string;
  tenant_id: string;
  matchers: SilenceMatcher[];
  starts_at: Date;
  ends_at: Date;
  comment: string;
  created_by: string;
  updated_at: Date;
}

/** Alert silences per observability tenant (MEMBER creates and expires, VIEWER reads; audited). */
@Injectable()
export class SilencesService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
    private readonly tenants: TenantsService,
    private readonly executor: Executor<ObservabilityTasks>,
  ) {}

  async list(org: OrganisationEntity, tenantSlug: string): Promise<SilenceResponse[]> {
    const tenant = await this.tenants.findRow(org, tenantSlug);
    const rows: SilenceRow[] = await this.txHost.tx.query(
      `SELECT * FROM alert_silences WHERE tenant_id = $1 ORDER BY starts_at DESC, id`,
      [tenant.id],
    );
    return rows.map((r) => this.toResponse(r));
  }

  async create(org: OrganisationEntity, tenantSlug: string, req: CreateSilenceRequest, createdBy: string): Promise<SilenceResponse> {
    const tenant = await this.tenants.findRow(org, tenantSlug, { lock: true });
    const now = this.clock.now();
    const startsAt = new Date(req.startsAt);
    const endsAt = new Date(req.endsAt);
    if (endsAt.getTime() <= startsAt.getTime()) throw ValidationFailedException.forField('endsAt', 'endsAt must be after startsAt');
    if (endsAt.getTime() <= now.getTime()) throw ValidationFailedException.forField('endsAt', 'endsAt must be in the future');
    const matchers: SilenceMatcher[] = req.matchers.map((m) => ({ name: m.name, value: m.value, isRegex: m.isRegex ?? false, isEqual: m.isEqual ?? true }));
    // RE2 syntax and Alertmanager's match-all rule, checked where user patterns run: on the executor.
    const problems = await this.executor.run(executorKey(org.id), 'silences.check', matchers);
    if (problems.length) throw new ValidationFailedException(problems);
    const [{ n }] = await this.txHost.tx.query(`SELECT count(*)::int AS n FROM alert_silences WHERE tenant_id = $1 AND ends_at > $2`, [tenant.id, now]);
    if (n >= MAX_OPEN_SILENCES) {
      throw new ConflictException(`Monitoring tenant '${tenant.slug}' already has ${MAX_OPEN_SILENCES} silences that are not expired; expire some first.`);
    }
    const [row]: SilenceRow[] = await this.txHost.tx.query(
      `INSERT INTO alert_silences (id, tenant_id, matchers, starts_at, ends_at, comment, created_by, created_at, updated_at)
       VALUES ($8, $1, $2::jsonb, $3, $4, $5, $6, $7, $7) RETURNING *`,
      [tenant.id, JSON.stringify(matchers), startsAt, endsAt, req.comment, createdBy, now, newIdentity('alert_silences')],
    );
    this.record('ALERT_SILENCE_CREATED', org, tenant, row.id, {
      matchers: { old: null, new: matchers.map(describeMatcher).join(', ') },
      startsAt: { old: null, new: startsAt.toISOString() },
      endsAt: { old: null, new: endsAt.toISOString() },
      comment: { old: null, new: req.comment },
    });
    return this.toResponse(row);
  }

  /** Expires a pending or active silence at once (Alertmanager's DELETE); 409 when it already expired. */
  async expire(org: OrganisationEntity, tenantSlug: string, silenceId: string): Promise<void> {
    const tenant = await this.tenants.findRow(org, tenantSlug);
    const [row]: SilenceRow[] = isUuid(silenceId)
      ? await this.txHost.tx.query(`SELECT * FROM alert_silences WHERE id = $1 AND tenant_id = $2 FOR UPDATE`, [silenceId, tenant.id])
      : [];
    if (!row) throw new NotFoundException(`Silence '${silenceId}' was not found in monitoring tenant '${tenant.slug}'.`);
    const now = this.clock.now();
    if (silenceState(row.starts_at, row.ends_at, now) === 'expired') {
      throw new ConflictException(`Silence '${silenceId}' has already expired.`);
    }
    const startsAt = row.starts_at.getTime() < now.getTime() ? row.starts_at : new Date(now.getTime() - 1);
    await this.txHost.tx.query(`UPDATE alert_silences SET starts_at = $2, ends_at = $3, updated_at = $3 WHERE id = $1`, [row.id, startsAt, now]);
    this.record('ALERT_SILENCE_EXPIRED', org, tenant, row.id, { endsAt: { old: row.ends_at.toISOString(), new: now.toISOString() } });
  }

  /** The matchers of the silences active at `now`, per tenant id: what the alert lists apply. */
  async activeByTenant(tenantIds: string[], now: Date): Promise<Map<string, { id: string; matchers: SilenceMatcher[] }[]>> {
    const byTenant = new Map<string, { id: string; matchers: SilenceMatcher[] }[]>();
    if (!tenantIds.length) return byTenant;
    const rows: SilenceRow[] = await this.txHost.tx.query(
      `SELECT id, tenant_id, matchers FROM alert_silences WHERE tenant_id = ANY($1::bigint[]) AND starts_at <= $2 AND ends_at > $2`,
      [tenantIds, now],
    );
    for (const r of rows) {
      const list = byTenant.get(String(r.tenant_id)) ?? [];
      list.push({ id: r.id, matchers: r.matchers });
      byTenant.set(String(r.tenant_id), list);
    }
    return byTenant;
  }

  private record(type: string, org: OrganisationEntity, tenant: TenantRow, id: string, details: Record<string, { old: unknown; new: unknown }>) {
    this.audit.record({
      type,
      organisation: { id: Number(org.id), slug: org.slug },
      environment: tenant.e_id ? { id: Number(tenant.e_id), slug: tenant.e_slug! } : null,
      cluster: tenant.c_id ? { id: Number(tenant.c_id), slug: tenant.c_slug! } : null,
      referencedEntityIdentity: id,
      subject: `silence ${id} of monitoring tenant ${tenant.slug}`,
      details: details as never,
    });
  }

  private toResponse(r: SilenceRow): SilenceResponse {
    return {
      id: r.id,
      matchers: r.matchers,
      startsAt: r.starts_at.toISOString(),
      endsAt: r.ends_at.toISOString(),
      updatedAt: r.updated_at.toISOString(),
      createdBy: r.created_by,
      comment: r.comment,
      status: { state: silenceState(r.starts_at, r.ends_at, this.clock.now()) },
    };
  }
}

function describeMatcher(m: SilenceMatcher): string {
  return `${m.name}${m.isEqual ? '' : '!'}${m.isRegex ? '=~' : '='}"${m.value}"`;
}
