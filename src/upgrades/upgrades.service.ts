import { MaintenanceWindow, nextWindowStart } from '../maintenance/maintenance-window';
import { newIdentity } from '../common/pinned-identities';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import * as semver from 'semver';
import { AuditRecorder } from '../audit/audit-recorder';
import { ClusterPolicyEnforcer } from '../policies/cluster-policy-enforcer';
import { Clock } from '../common/clock';
import { ValidationFailedException } from '../common/errors';
import { orderBySql, Page, PageRequest, toPage, toPageRequest } from '../common/paging';
import type { OrganisationEntity } from '../identity/organisation.entity';
import type { UserEntity } from '../identity/user.entity';
import {
  CreateScheduledClusterUpgradeRequest,
  ScheduledClusterUpgradeQuery,
  ScheduledClusterUpgradeResponse,
  UpdateScheduledClusterUpgradeRequest,
} from './dto/scheduled-cluster-upgrade.dto';
import { CANCELLABLE_SCHEDULED_UPGRADE_STATUSES, ScheduledUpgradeStatus } from './scheduled-cluster-upgrade.entity';
import { toUpgradeResponse, UPGRADE_SELECT, upgradeAuditRefs, UpgradeRow } from './upgrade-rows';

/** The properties scheduled-upgrade lists sort by: this service's allow-list, in its order. */
export const UPGRADE_SORTABLE = [
  'createdAt',
  'modifiedAt',
  'windowStart',
  'windowEnd',
  'status',
  'clusterSlug',
  'environmentSlug',
  'organisationSlug',
  'fromClusterVersion',
  'toClusterVersion',
] as const;

const SORTABLE: Record<string, string> = {
  createdAt: 'u.created_at',
  modifiedAt: 'u.modified_at',
  windowStart: 'u.window_start',
  windowEnd: 'u.window_end',
  status: 'u.status',
  clusterSlug: 'c.slug',
  environmentSlug: 'e.slug',
  organisationSlug: 'o.slug',
  fromClusterVersion: 'u.from_cluster_version',
  toClusterVersion: 'u.to_cluster_version',
};

const isCancellable = (s: ScheduledUpgradeStatus) => (CANCELLABLE_SCHEDULED_UPGRADE_STATUSES as readonly string[]).includes(s);

@Injectable()
export class UpgradesService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
    private readonly policies: ClusterPolicyEnforcer,
  ) {}

  private query<T = UpgradeRow>(sql: string, params: unknown[]): Promise<T[]> {
    return this.txHost.tx.query(sql, params);
  }

  /** Page (form B) of upgrades; `org` null lists every organisation's (platform administrators). */
  async list(org: OrganisationEntity | null, q: ScheduledClusterUpgradeQuery): Promise<Page<ScheduledClusterUpgradeResponse>> {
    const req: PageRequest = toPageRequest(q, SORTABLE);
    const where: string[] = [];
    const params: unknown[] = [];
    if (org) {
      params.push(org.id);
      where.push(`u.organisation_id = $${params.length}`);
    }
    if (q.clusterIdentities?.length) {
      params.push(q.clusterIdentities);
      where.push(`c.identity = ANY($${params.length}::uuid[])`);
    }
    if (q.statuses?.length) {
      params.push(q.statuses);
      where.push(`u.status = ANY($${params.length}::text[])`);
    }
    const whereSql = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const order = orderBySql(req, SORTABLE, 'u.id');
    const rows = await this.query(`${UPGRADE_SELECT} ${whereSql} ORDER BY ${order} LIMIT ${req.size} OFFSET ${req.offset}`, params);
    const [{ n }] = await this.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM scheduled_cluster_upgrades u JOIN clusters c ON c.id = u.cluster_id ${whereSql}`,
      params,
    );
    // The organisation list is form B (the interface); the admin list, which it does not define, form A.
    return toPage(rows.map(toUpgradeResponse), n, req, org ? 'B' : 'A');
  }

  async get(org: OrganisationEntity | null, identity: string): Promise<ScheduledClusterUpgradeResponse> {
    return toUpgradeResponse(await this.findRow(identity, org));
  }

  /** The upgrade with that identity (of `org` when given), optionally locked, or 404. */
  private async findRow(identity: string, org: OrganisationEntity | null, lock = false): Promise<UpgradeRow> {
    const params: unknown[] = [identity];
    let where = 'u.identity = $1';
    if (org) {
      params.push(org.id);
      where += ' AND u.organisation_id = $2';
    }
    const [row] = await this.query(`${UPGRADE_SELECT} WHERE ${where}${lock ? ' FOR UPDATE OF u' : ''}`, params);
    if (!row) {
      throw new NotFoundException(
        `Scheduled cluster upgrade '${identity}' does not exist${org ? ` in organisation '${org.slug}'` : ''}.`,
      );
    }
    return row;
  }

  /**
   * DELETE: SCHEDULED or SCHEDULED_NOTIFIED -> CANCELLED; anything else 409. `reason`, when given (the admin
   * PATCH/PUT with status CANCELLED), replaces the upgrade's reason in the same change and audit entry.
   */
  async cancel(org: OrganisationEntity | null, identity: string, by: UserEntity, reason?: string): Promise<ScheduledClusterUpgradeResponse> {
    const row = await this.findRow(identity, org, true);
    if (!isCancellable(row.status)) {
      throw new ConflictException(
        `Scheduled cluster upgrade '${identity}' is ${row.status}; only SCHEDULED or SCHEDULED_NOTIFIED upgrades can be cancelled.`,
      );
    }
    const now = this.clock.now();
    const newReason = reason ?? row.reason;
    await this.query(
      `UPDATE scheduled_cluster_upgrades SET status = 'CANCELLED', cancelled_by = $3, finished_at = $2, modified_at = $2, reason = $4,
              version = version + 1
        WHERE id = $1`,
      [row.id, now, by.username, newReason],
    );
    const details: Record<string, { old: unknown; new: unknown }> = { status: { old: row.status, new: 'CANCELLED' } };
    if (newReason !== row.reason) details.reason = { old: row.reason, new: newReason };
    this.audit.record({
      type: 'SCHEDULED_CLUSTER_UPGRADE_CANCELLED',
      ...upgradeAuditRefs(row),
      details,
      subject: `${row.environment_slug}/${row.cluster_slug} to ${row.to_cluster_version}`,
    });
    return toUpgradeResponse(await this.findRow(identity, org));
  }

  // ---- platform administrators ------------------------------------------------------------------

  async adminCreate(user: UserEntity, req: CreateScheduledClusterUpgradeRequest): Promise<ScheduledClusterUpgradeResponse> {
    const [cluster] = await this.query<{
      id: number;
      organisation_id: number;
      version: string;
      slug: string;
      windows: MaintenanceWindow[] | null;
      time_zone: string | null;
    }>(
      `SELECT c.id, c.organisation_id, c.version, c.slug, ms.windows, ms.time_zone
         FROM clusters c LEFT JOIN maintenance_schedules ms ON ms.id = c.maintenance_schedule_id
        WHERE c.identity = $1 AND c.deleted_at IS NULL FOR UPDATE OF c`,
      [req.clusterIdentity],
    );
    if (!cluster) throw new NotFoundException(`Cluster '${req.clusterIdentity}' does not exist.`);
    if (req.fromClusterVersion !== undefined && req.fromClusterVersion !== cluster.version) {
      throw new ConflictException(
        `The cluster runs ${cluster.version}, not fromClusterVersion ${req.fromClusterVersion}; the upgrade was not scheduled.`,
      );
    }
    await this.checkTargetVersion(req.toClusterVersion, cluster.version);
    let windowStart = new Date(req.windowStart);
    let windowEnd = new Date(req.windowEnd);
    this.checkWindow(windowStart, windowEnd);
    const ignore = req.ignoreMaintenanceSchedule === true;
    if (!ignore && cluster.windows?.length) {
      // Into the cluster's first maintenance window starting at or after windowStart.
      const next = nextWindowStart(cluster.windows, new Date(windowStart.getTime() - 1), cluster.time_zone ?? 'UTC');
      if (next) {
        windowStart = next.start;
        windowEnd = next.end;
      }
    }
    const [open] = await this.query<{ identity: string; status: string }>(
      `SELECT identity, status FROM scheduled_cluster_upgrades WHERE cluster_id = $1 AND status IN ('SCHEDULED','SCHEDULED_NOTIFIED','UPDATED')`,
      [cluster.id],
    );
    if (open) {
      throw new ConflictException(
        `Cluster '${cluster.slug}' already has an open upgrade (${open.identity}, ${open.status}); cancel or edit that one instead.`,
      );
    }
    // Cluster policies see the cluster as the upgrade will leave it (its target version).
    await this.policies.enforce({ clusterId: Number(cluster.id), operation: 'UPDATE', resource: 'scheduledClusterUpgrades', overrides: { version: req.toClusterVersion } });
    const now = this.clock.now();
    const reason = req.reason?.trim() || `scheduled by platform administrator ${user.username}`;
    const [{ identity }] = await this.query<{ identity: string }>(
      `INSERT INTO scheduled_cluster_upgrades
         (organisation_id, cluster_id, from_cluster_version, to_cluster_version, window_start, window_end, status, reason, created_by,
          created_at, modified_at, ignore_maintenance_schedule, identity)
       VALUES ($1, $2, $3, $4, $5, $6, 'SCHEDULED', $7, $8, $9, $9, $10, $11) RETURNING identity`,
      [cluster.organisation_id, cluster.id, cluster.version, req.toClusterVersion, windowStart, windowEnd, reason, user.username, now, ignore, newIdentity('scheduled_cluster_upgrades')],
    );
    const row = await this.findRow(identity, null);
    this.audit.record({
      type: 'SCHEDULED_CLUSTER_UPGRADE_CREATED',
      ...upgradeAuditRefs(row),
      details: {
        fromClusterVersion: { old: null, new: row.from_cluster_version },
        toClusterVersion: { old: null, new: row.to_cluster_version },
        windowStart: { old: null, new: row.window_start.toISOString() },
        windowEnd: { old: null, new: row.window_end.toISOString() },
        reason: { old: null, new: row.reason },
        status: { old: null, new: row.status },
      },
      subject: `${row.environment_slug}/${row.cluster_slug} to ${row.to_cluster_version}`,
    });
    return toUpgradeResponse(row);
  }

  /**
   * Moves the window or changes the target while the upgrade has not started. A notified upgrade
   * whose window or target changes goes back to SCHEDULED, so the new plan is announced again.
   */
  /**
   * PATCH (and the original admin client's PUT, whose body is a subset): every field takes effect or is refused.
   * - `identity`, when given, must be the identity in the path (400);
   * - `status`: the current status changes nothing; CANCELLED cancels as DELETE does (409 once started or ended),
   *   with `reason` as the cancellation's reason, and cannot be combined with a new window or target (400); any
   *   other status is the scheduler's to set (400);
   * - `reason` replaces the reason (any status);
   * - `windowStart`, `windowEnd` and `toClusterVersion` (or the client's `version`) re-plan an upgrade that has not
   *   started (409 otherwise); a notified upgrade goes back to SCHEDULED so the new plan is announced again.
   * One audit entry names every change.
   */
  async adminUpdate(identity: string, req: UpdateScheduledClusterUpgradeRequest, by: UserEntity): Promise<ScheduledClusterUpgradeResponse> {
    if (req.identity !== undefined && req.identity.toLowerCase() !== identity.toLowerCase()) {
      throw ValidationFailedException.forField('identity', 'identity must be the identity in the path');
    }
    if (req.version !== undefined && req.toClusterVersion !== undefined && req.version !== req.toClusterVersion) {
      throw ValidationFailedException.forField('version', 'version and toClusterVersion name the same field and must be equal');
    }
    const target = req.toClusterVersion ?? req.version;
    const planFields = [
      req.windowStart !== undefined ? 'windowStart' : null,
      req.windowEnd !== undefined ? 'windowEnd' : null,
      req.toClusterVersion !== undefined ? 'toClusterVersion' : req.version !== undefined ? 'version' : null,
    ].filter((f): f is string => f !== null);
    const row = await this.findRow(identity, null, true);
    if (req.status !== undefined && req.status !== row.status) {
      if (req.status !== 'CANCELLED') {
        throw ValidationFailedException.forField(
          'status',
          `status can only be set to CANCELLED (the scheduler sets ${row.status === 'SCHEDULED' ? 'the others' : `${row.status} and the others`})`,
        );
      }
      if (planFields.length) {
        throw ValidationFailedException.forField(planFields[0], `${planFields[0]} cannot change in the update that cancels the upgrade`);
      }
      return this.cancel(null, identity, by, req.reason);
    }
    if (planFields.length && !isCancellable(row.status)) {
      throw new ConflictException(
        `Scheduled cluster upgrade '${identity}' is ${row.status}; only SCHEDULED or SCHEDULED_NOTIFIED upgrades can be changed.`,
      );
    }
    const windowStart = req.windowStart !== undefined ? new Date(req.windowStart) : row.window_start;
    const windowEnd = req.windowEnd !== undefined ? new Date(req.windowEnd) : row.window_end;
    const toVersion = target ?? row.to_cluster_version;
    const reason = req.reason ?? row.reason;
    const details: Record<string, { old: unknown; new: unknown }> = {};
    if (windowStart.getTime() !== row.window_start.getTime())
      details.windowStart = { old: row.window_start.toISOString(), new: windowStart.toISOString() };
    if (windowEnd.getTime() !== row.window_end.getTime())
      details.windowEnd = { old: row.window_end.toISOString(), new: windowEnd.toISOString() };
    if (toVersion !== row.to_cluster_version) {
      const [cluster] = await this.query<{ version: string }>(`SELECT version FROM clusters WHERE id = $1`, [row.cluster_id]);
      await this.checkTargetVersion(toVersion, cluster.version, req.toClusterVersion !== undefined ? 'toClusterVersion' : 'version');
      await this.policies.enforce({ clusterId: Number(row.cluster_id), operation: 'UPDATE', resource: 'scheduledClusterUpgrades', overrides: { version: toVersion } });
      details.toClusterVersion = { old: row.to_cluster_version, new: toVersion };
    }
    if (details.windowStart || details.windowEnd) this.checkWindow(windowStart, windowEnd);
    const replanned = Object.keys(details).length > 0;
    let status = row.status;
    if (replanned && row.status !== 'SCHEDULED') {
      status = 'SCHEDULED';
      details.status = { old: row.status, new: status };
    }
    if (reason !== row.reason) details.reason = { old: row.reason, new: reason };
    if (Object.keys(details).length > 0) {
      await this.query(
        `UPDATE scheduled_cluster_upgrades
            SET window_start = $2, window_end = $3, to_cluster_version = $4, status = $5, reason = $6,
                notified_at = CASE WHEN $7 THEN NULL ELSE notified_at END, modified_at = $8, version = version + 1
          WHERE id = $1`,
        [row.id, windowStart, windowEnd, toVersion, status, reason, replanned, this.clock.now()],
      );
    }
    this.audit.record({
      type: 'SCHEDULED_CLUSTER_UPGRADE_UPDATED',
      ...upgradeAuditRefs(row),
      details,
      subject: `${row.environment_slug}/${row.cluster_slug} to ${toVersion}`,
    });
    return toUpgradeResponse(await this.findRow(identity, null));
  }

  private checkWindow(start: Date, end: Date): void {
    if (start.getTime() >= end.getTime()) {
      throw ValidationFailedException.forField('windowEnd', 'windowEnd must be after windowStart');
    }
    if (end.getTime() <= this.clock.now().getTime()) {
      throw ValidationFailedException.forField('windowEnd', 'windowEnd must be in the future');
    }
  }

  private async checkTargetVersion(to: string, current: string, field = 'toClusterVersion'): Promise<void> {
    const [known] = await this.query<{ available: boolean }>(`SELECT available FROM cluster_versions WHERE version = $1`, [to]);
    if (!known) throw ValidationFailedException.forField(field, `${field} '${to}' is not a known cluster version`);
    const a = semver.valid(to);
    const b = semver.valid(current);
    if (a && b && !semver.gt(a, b)) {
      throw ValidationFailedException.forField(
        field,
        `${field} must be newer than the version the cluster runs (${current})`,
      );
    }
  }
}
