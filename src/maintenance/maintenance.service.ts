import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { AuditRecorder } from '../audit/audit-recorder';
import { auditDiff } from '../audit/audit-diff';
import { Clock } from '../common/clock';
import { ValidationFailedException } from '../common/errors';
import type { OrganisationEntity } from '../identity/organisation.entity';
import {
  CreateMaintenanceScheduleRequest,
  MaintenanceScheduleResponse,
  MaintenanceWindowRequest,
  UpdateMaintenanceScheduleRequest,
} from './dto/maintenance-schedule.dto';
import { MaintenanceScheduleEntity } from './maintenance-schedule.entity';
import { DEFAULT_WINDOW_DURATION, defaultScheduleName, describeWindow, findOverlaps, MaintenanceWindow, parseDay, Weekday } from './maintenance-window';
import { checkExclusionHorizon, ExclusionInput, MaintenanceExclusion, normaliseExclusions } from './maintenance-exclusion';
import { clusterHolds } from '../common/cluster-holds';

/** The response shape, also used where a cluster embeds its schedule. */
export function toMaintenanceScheduleResponse(s: MaintenanceScheduleEntity, clusterCount: number): MaintenanceScheduleResponse {
  return {
    clusterCount,
    identity: s.identity,
    name: s.name,
    windows: s.windows.map((w) => ({ day: w.day, duration: w.duration, startTime: w.startTime })),
    timeZone: s.timeZone ?? 'UTC',
    exclusions: normaliseExclusions(s.exclusions),
  };
}

@Injectable()
export class MaintenanceService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
  ) {}

  private get repo() {
    return this.txHost.tx.getRepository(MaintenanceScheduleEntity);
  }

  /** Number of non-deleted clusters per schedule id. */
  private async clusterCounts(ids: number[]): Promise<Map<number, number>> {
    const counts = new Map<number, number>();
    if (ids.length === 0) return counts;
    const rows: { id: number; n: number }[] = await this.txHost.tx.query(
      `SELECT maintenance_schedule_id AS id, count(*)::int AS n FROM clusters
        WHERE maintenance_schedule_id = ANY($1::bigint[]) AND ${clusterHolds()} GROUP BY maintenance_schedule_id`,
      [ids],
    );
    for (const r of rows) counts.set(Number(r.id), r.n);
    return counts;
  }

  private async respond(s: MaintenanceScheduleEntity): Promise<MaintenanceScheduleResponse> {
    const counts = await this.clusterCounts([s.id]);
    return toMaintenanceScheduleResponse(s, counts.get(s.id) ?? 0);
  }

  async list(org: OrganisationEntity): Promise<MaintenanceScheduleResponse[]> {
    const rows = await this.repo.find({ where: { organisationId: org.id }, order: { createdAt: 'ASC', id: 'ASC' } });
    const counts = await this.clusterCounts(rows.map((r) => r.id));
    return rows.map((r) => toMaintenanceScheduleResponse(r, counts.get(r.id) ?? 0));
  }

  async get(org: OrganisationEntity, identity: string): Promise<MaintenanceScheduleResponse> {
    return this.respond(await this.find(org, identity));
  }

  /** The schedule of this organisation with that identity, or 404. */
  async find(org: OrganisationEntity, identity: string, lock = false): Promise<MaintenanceScheduleEntity> {
    const qb = this.repo
      .createQueryBuilder('s')
      .where('s.organisation_id = :org AND s.identity = :identity', { org: org.id, identity });
    if (lock) qb.setLock('pessimistic_write');
    const s = await qb.getOne();
    if (!s) throw new NotFoundException(`Maintenance schedule '${identity}' does not exist in organisation '${org.slug}'.`);
    return s;
  }

  async create(org: OrganisationEntity, req: CreateMaintenanceScheduleRequest): Promise<MaintenanceScheduleResponse> {
    const windows = this.normaliseWindows(req.windows);
    const now = this.clock.now();
    const timeZone = req.timeZone ?? 'UTC';
    const exclusions = this.exclusions(req.exclusions ?? [], now);
    const entity = this.repo.create({ organisationId: org.id, name: req.name?.trim() ?? defaultScheduleName(windows), windows, timeZone, exclusions, createdAt: now, modifiedAt: now });
    await this.repo.save(entity);
    this.audit.record({
      type: 'MAINTENANCE_SCHEDULE_CREATED',
      organisation: { id: org.id, slug: org.slug },
      referencedEntityIdentity: entity.identity,
      details: auditDiff(null, { name: entity.name, windows: entity.windows, timeZone, exclusions }),
      subject: entity.name,
    });
    return this.respond(entity);
  }

  async update(org: OrganisationEntity, identity: string, req: UpdateMaintenanceScheduleRequest): Promise<MaintenanceScheduleResponse> {
    const entity = await this.find(org, identity, true);
    const before = { name: entity.name, windows: entity.windows, timeZone: entity.timeZone, exclusions: normaliseExclusions(entity.exclusions) };
    if (req.name !== undefined) entity.name = req.name.trim();
    if (req.windows !== undefined) entity.windows = this.normaliseWindows(req.windows);
    if (req.timeZone !== undefined) entity.timeZone = req.timeZone;
    if (req.exclusions !== undefined) entity.exclusions = this.exclusions(req.exclusions, this.clock.now());
    const after = { name: entity.name, windows: entity.windows, timeZone: entity.timeZone, exclusions: normaliseExclusions(entity.exclusions) };
    const details = auditDiff(before, after);
    if (Object.keys(details).length > 0) {
      entity.modifiedAt = this.clock.now();
      await this.repo.save(entity);
    }
    this.audit.record({
      type: 'MAINTENANCE_SCHEDULE_UPDATED',
      organisation: { id: org.id, slug: org.slug },
      referencedEntityIdentity: entity.identity,
      details,
      subject: entity.name,
    });
    return this.respond(entity);
  }

  async delete(org: OrganisationEntity, identity: string): Promise<void> {
    const entity = await this.find(org, identity, true);
    const counts = await this.clusterCounts([entity.id]);
    const inUse = counts.get(entity.id) ?? 0;
    if (inUse > 0) {
      throw new ConflictException(
        `Maintenance schedule '${entity.name}' is used by ${inUse} cluster${inUse === 1 ? '' : 's'}; move ${inUse === 1 ? 'it' : 'them'} to another schedule first.`,
      );
    }
    await this.repo.delete({ id: entity.id });
    this.audit.record({
      type: 'MAINTENANCE_SCHEDULE_DELETED',
      organisation: { id: org.id, slug: org.slug },
      referencedEntityIdentity: entity.identity,
      details: auditDiff({ name: entity.name, windows: entity.windows, exclusions: normaliseExclusions(entity.exclusions) }, null),
      subject: entity.name,
    });
  }

  /** Canonical form, and each ending within the horizon of now (400 naming the item otherwise). */
  private exclusions(input: ExclusionInput[], now: Date): MaintenanceExclusion[] {
    const list = normaliseExclusions(input);
    checkExclusionHorizon(list, now, 'exclusions');
    return list;
  }

  /** Canonical day names, and no two windows overlapping (400 naming them). */
  private normaliseWindows(input: MaintenanceWindowRequest[]): MaintenanceWindow[] {
    const windows: MaintenanceWindow[] = input.map((w) => ({
      day: (parseDay(w.day) ?? w.day) as Weekday,
      startTime: w.startTime,
      duration: w.duration ?? DEFAULT_WINDOW_DURATION,
    }));
    const overlaps = findOverlaps(windows);
    if (overlaps.length > 0) {
      const errors = overlaps.map(([i, j]) => ({
        field: `windows`,
        message: `windows[${i}] (${describeWindow(windows[i])}) overlaps windows[${j}] (${describeWindow(windows[j])})`,
      }));
      throw new ValidationFailedException(errors, `Invalid request: maintenance windows must not overlap; ${errors.map((e) => e.message).join('; ')}`);
    }
    return windows;
  }
}
