import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { ClsService } from 'nestjs-cls';
import * as semver from 'semver';
import { AuditService } from '../audit/audit.service';
import { MetricsService } from '../metrics/metrics.service';
import type { AuditDetails } from '../audit/audit-event.entity';
import { SYSTEM_ACTOR } from '../auth/principal';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import type { MaintenanceWindow } from '../maintenance/maintenance-window';
import { allowedWindow, applicableExclusions, MaintenanceExclusion, overlappingExclusion } from '../maintenance/maintenance-exclusion';
import type { ScheduledUpgradeStatus } from '../upgrades/scheduled-cluster-upgrade.entity';
import { describeUpgradeWindow, UPGRADE_COLUMNS, UPGRADE_FROM, upgradeAuditRefs, UpgradeRow } from '../upgrades/upgrade-rows';

/** Key of the transaction-scoped advisory lock: one scheduler batch at a time across replicas. */
export const SCHEDULER_LOCK_KEY = 724_007;
const INTERVAL_NAME = 'scheduled-cluster-upgrades';
const HOUR_MS = 60 * 60 * 1000;
/** Announce an upgrade this long before its window opens (at once when the window is sooner). */
export const NOTIFY_AHEAD_MS = 24 * HOUR_MS;
/** Without a maintenance schedule the window opens 24 h after scheduling and lasts 24 h. */
export const DEFAULT_WINDOW_DELAY_MS = 24 * HOUR_MS;
export const DEFAULT_WINDOW_LENGTH_MS = 24 * HOUR_MS;

const LOCKED = Symbol('locked');
/** What a rule did in one batch: the cursor to go on from (a full batch: its last row id; else null), and its rows. */
interface Step {
  next: string | null;
  rows: number;
}
/** A rule: handles at most `limit` rows after the id `after`. */
type Rule = (after: string, limit: number) => Promise<Step>;

const TERMINAL: ScheduledUpgradeStatus[] = ['SUCCEEDED', 'FAILED', 'MISSED', 'CANCELLED', 'SUPERSEDED'];

export interface SchedulerRunResult {
  /**
   * True when another replica held the lock: this run stopped there (after the batches it had done) and left the
   * rest of the pass to that replica.
   */
  skipped: boolean;
  /** Transitions made, by target status (SCHEDULED counts upgrades created). */
  transitions: Partial<Record<ScheduledUpgradeStatus, number>>;
}

interface OpenUpgradeRow extends UpgradeRow {
  created_by: string;
  blocked_reason: string | null;
  cluster_version: string;
  cluster_status: string;
  cluster_desired_status: string | null;
  cluster_deleted_at: Date | null;
  cluster_observed_version: string | null;
  cluster_last_error: string | null;
  auto_upgrade: boolean;
  channel_name: string | null;
  channel_version: string | null;
  cluster_exclusions: MaintenanceExclusion[] | null;
  schedule_exclusions: MaintenanceExclusion[] | null;
}

/**
 * Rollout sequencing facts about a cluster's upstream cluster, for one target version (see `upstreamSql`).
 * `up_id` is null when the cluster has no (live) upstream cluster.
 */
interface UpstreamFacts {
  up_id: number | null;
  up_subject: string | null;
  up_version: string | null;
  up_since: Date | null;
  up_upgrade: string | null;
  up_upgrade_status: ScheduledUpgradeStatus | null;
  soak_hours: number;
}

/**
 * Columns and joins giving the UpstreamFacts of cluster `c` for the target version `target` (an SQL
 * expression): the upstream's running version and since when, its latest upgrade to the target, and the
 * soak time that applies (the cluster's own, else its organisation's).
 */
function upstreamSql(target: string): { columns: string; joins: string } {
  return {
    columns: `up.id AS up_id, upe.slug || '/' || up.slug AS up_subject, up.observed_version AS up_version, up.version_since AS up_since,
              upu.identity AS up_upgrade, upu.status AS up_upgrade_status,
              COALESCE(c.upgrade_soak_hours, (SELECT o2.upgrade_soak_hours FROM organisations o2 WHERE o2.id = c.organisation_id)) AS soak_hours`,
    joins: `LEFT JOIN clusters up ON up.id = c.upstream_cluster_id AND up.deleted_at IS NULL
            LEFT JOIN environments upe ON upe.id = up.environment_id
            LEFT JOIN LATERAL (SELECT x.identity, x.status FROM scheduled_cluster_upgrades x
                                WHERE x.cluster_id = up.id AND x.to_cluster_version = ${target}
                                ORDER BY x.id DESC LIMIT 1) upu ON true`,
  };
}

/** Whether sequencing holds an upgrade to a version back, and when the upstream's soak ended (or ends). */
interface Gate {
  held: string | null;
  soakEnd: Date | null;
}

interface CandidateCluster extends UpstreamFacts {
  id: number;
  /** An open upgrade exists (nothing to plan). */
  has_open: boolean;
  /** The channel's version failed before or a person cancelled it: not planned again by itself. */
  refused: boolean;
  organisation_id: number;
  version: string;
  channel_name: string;
  channel_version: string;
  windows: MaintenanceWindow[] | null;
  time_zone: string | null;
  auto_upgrade_policy: string;
  cluster_exclusions: MaintenanceExclusion[] | null;
  schedule_exclusions: MaintenanceExclusion[] | null;
}

/** Where an exclusion comes from, for messages. */
interface SourcedExclusion {
  exclusion: MaintenanceExclusion;
  source: string;
}

/** Same major and minor: the step is a patch. */
function samePatchLine(a: string, b: string): boolean {
  const x = semver.parse(a);
  const y = semver.parse(b);
  return !!x && !!y && x.major === y.major && x.minor === y.minor;
}

/**
 * Drives scheduled cluster upgrades through their states (docs/decisions.md "Maintenance and upgrades"):
 * creates SCHEDULED upgrades for auto-upgrade clusters behind their update channel, announces them
 * (SCHEDULED_NOTIFIED), starts them when the window opens (UPDATED: sets the cluster's desired
 * version for the reconciler), and records the outcome (SUCCEEDED, FAILED, MISSED, SUPERSEDED).
 * A pass runs the rules in order, each in keyset batches (on the row id) inside short transactions under a
 * transaction-scoped advisory lock; a transaction handles at most SCHEDULER_BATCH_SIZE rows and goes on with the
 * next rules while that budget lasts, so a pass at rest is one transaction. The rows come from indexes on what
 * needs work (open upgrades, clusters behind their channel), so a pass over a fleet at rest costs
 * a few index probes whatever its size (docs/performance.md "Scheduler pass"). Every batch reads afresh under the
 * lock and every update is guarded by the status it read, so however many replicas run, each transition happens
 * once; a replica that finds the lock taken stops its pass (the holder carries on). Each transition sits in a
 * savepoint so one bad row cannot block the others.
 */
@Injectable()
export class UpgradeSchedulerService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('UpgradeScheduler');
  private running = false;

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly cls: ClsService,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
    private readonly registry: SchedulerRegistry,
    private readonly metrics: MetricsService,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.BACKGROUND_JOBS_ENABLED || this.config.SCHEDULER_INTERVAL_SECONDS <= 0) return;
    const timer = setInterval(() => void this.tick(), this.config.SCHEDULER_INTERVAL_SECONDS * 1000);
    timer.unref?.();
    this.registry.addInterval(INTERVAL_NAME, timer);
  }

  /** Shutdown: no new pass starts; a pass under way finishes (its transitions commit) before the pool closes. */
  async onModuleDestroy(): Promise<void> {
    if (this.registry.doesExist('interval', INTERVAL_NAME)) this.registry.deleteInterval(INTERVAL_NAME);
    if (this.inFlight) await this.inFlight;
  }

  private inFlight: Promise<void> | null = null;

  private get batchSize(): number {
    return this.config.SCHEDULER_BATCH_SIZE ?? 200;
  }

  /** The step after a batch of `limit`: the last id when the batch was full (there may be more). */
  private step(rows: { id: number | string }[], limit: number): Step {
    return { next: rows.length === limit ? String(rows[rows.length - 1].id) : null, rows: rows.length };
  }

  private tick(): Promise<void> {
    if (this.running) return this.inFlight ?? Promise.resolve();
    this.running = true;
    this.inFlight = this.timedPass().finally(() => (this.inFlight = null));
    return this.inFlight;
  }

  private async timedPass(): Promise<void> {
    try {
      await this.runOnce();
    } catch (err) {
      this.logger.error({ err }, 'Scheduler run failed');
      this.metrics.backgroundErrors.inc({ job: 'scheduler' });
    } finally {
      this.running = false;
    }
  }

  /** One pass over every rule; tests call it directly with the clock set. */
  async runOnce(): Promise<SchedulerRunResult> {
    const result = await this.pass();
    // Counted after the pass committed.
    for (const [status, n] of Object.entries(result.transitions)) this.metrics.schedulerTransitions.inc({ status }, n ?? 0);
    return result;
  }

  private async pass(): Promise<SchedulerRunResult> {
    const result: SchedulerRunResult = { skipped: false, transitions: {} };
    const now = this.clock.now();
    const count = (s: ScheduledUpgradeStatus) => (result.transitions[s] = (result.transitions[s] ?? 0) + 1);
    const rules: Rule[] = [
      (after, limit) => this.closeObsolete(now, count, after, limit),
      (after, limit) => this.sequence(now, after, limit),
      (after, limit) => this.replan(now, after, limit),
      (after, limit) => this.scheduleNew(now, count, after, limit),
      (after, limit) => this.notify(now, count, after, limit),
      (after, limit) => this.start(now, count, after, limit),
      (after, limit) => this.finish(now, count, after, limit),
      (after, limit) => this.miss(now, count, after, limit),
    ];
    // A batch (one transaction) goes on with the next rules while its row budget lasts, so a pass at rest is one
    // short transaction; a rule with more rows than the budget continues in the next batch from its cursor.
    let i = 0;
    let after = '0';
    while (i < rules.length) {
      const done = await this.batch(async () => {
        let budget = this.batchSize;
        while (i < rules.length && budget > 0) {
          const { next, rows } = await rules[i](after, budget);
          budget -= rows;
          if (next !== null) {
            after = next;
            return;
          }
          i++;
          after = '0';
        }
      });
      if (done === LOCKED) return { ...result, skipped: true };
    }
    return result;
  }

  /** One batch: its own transaction, under the advisory lock (LOCKED when another replica holds it). */
  private batch(fn: () => Promise<void>): Promise<void | typeof LOCKED> {
    return this.cls.run(() =>
      this.txHost.withTransaction(async () => {
        const [{ locked }] = await this.q<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [SCHEDULER_LOCK_KEY]);
        if (!locked) return LOCKED;
        return fn();
      }),
    );
  }

  // ---- rules -------------------------------------------------------------------------------------

  /**
   * Open upgrades that no longer make sense: cluster deleted, auto-upgrade turned off or channel left
   * or moved back (CANCELLED, for upgrades the scheduler planned); already running the version, or the
   * channel moved past the target (SUPERSEDED; rule 1 then plans the newer version).
   */
  private async closeObsolete(now: Date, count: (s: ScheduledUpgradeStatus) => void, after: string, limit: number): Promise<Step> {
    const rows = await this.openUpgrades(`u.status IN ('SCHEDULED','SCHEDULED_NOTIFIED')`, [], after, limit);
    for (const row of rows) {
      const subject = this.subject(row);
      if (row.cluster_deleted_at) {
        await this.transition(row, 'CANCELLED', now, count, {
          message: `system cancelled the upgrade of cluster ${subject} to ${row.to_cluster_version}: the cluster was deleted`,
        });
      } else if (this.atLeast(row.cluster_version, row.to_cluster_version)) {
        await this.transition(row, 'SUPERSEDED', now, count, {
          message: `system superseded the upgrade of cluster ${subject} to ${row.to_cluster_version}: the cluster already runs ${row.cluster_version}`,
        });
      } else if (row.created_by === 'system' && (!row.auto_upgrade || !row.channel_version)) {
        await this.transition(row, 'CANCELLED', now, count, {
          message:
            `system cancelled the upgrade of cluster ${subject} to ${row.to_cluster_version}: ` +
            (row.auto_upgrade ? 'the cluster no longer follows an update channel' : 'auto-upgrade was turned off'),
        });
      } else if (row.created_by === 'system' && this.newer(row.to_cluster_version, row.channel_version!)) {
        await this.transition(row, 'CANCELLED', now, count, {
          message: `system cancelled the upgrade of cluster ${subject} to ${row.to_cluster_version}: update channel ${row.channel_name} offers ${row.channel_version}`,
        });
      } else if (row.auto_upgrade && row.channel_version && this.newer(row.channel_version, row.to_cluster_version)) {
        await this.transition(row, 'SUPERSEDED', now, count, {
          message: `system superseded the upgrade of cluster ${subject} to ${row.to_cluster_version}: update channel ${row.channel_name} moved to ${row.channel_version}`,
        });
      }
    }
    return this.step(rows, limit);
  }

  /**
   * Rollout sequencing of upgrades already planned (e.g. before the cluster got its upstream cluster): an upgrade
   * the scheduler planned is held (`blocked_reason`, status SCHEDULED: it neither starts nor misses its window)
   * while its upstream cluster has not run the target version for the soak time, or after the upstream's upgrade
   * to it failed; once that clears it is released into the first allowed window starting at or after the end of
   * the soak. Each hold, change of reason and release is audited.
   */
  private async sequence(now: Date, after: string, limit: number): Promise<Step> {
    const upstream = upstreamSql('u.to_cluster_version');
    const rows = await this.q<OpenUpgradeRow & UpstreamFacts & { windows: MaintenanceWindow[] | null; time_zone: string | null }>(
      `SELECT ${UPGRADE_COLUMNS}, u.created_by, c.version AS cluster_version, ms.windows, ms.time_zone,
              c.maintenance_exclusions AS cluster_exclusions, ms.exclusions AS schedule_exclusions, ${upstream.columns}
         ${UPGRADE_FROM}
         LEFT JOIN maintenance_schedules ms ON ms.id = c.maintenance_schedule_id
         ${upstream.joins}
        WHERE u.status IN ('SCHEDULED','SCHEDULED_NOTIFIED') AND u.created_by = 'system' AND c.deleted_at IS NULL AND u.id > $1
          -- found from the clusters with an upstream (clusters_upstream_idx) and the held upgrades, not from every open one
          AND u.id IN (SELECT x.id FROM clusters dc
                         JOIN scheduled_cluster_upgrades x ON x.cluster_id = dc.id AND x.status IN ('SCHEDULED','SCHEDULED_NOTIFIED')
                        WHERE dc.upstream_cluster_id IS NOT NULL AND dc.deleted_at IS NULL
                       UNION
                       SELECT x.id FROM scheduled_cluster_upgrades x
                        WHERE x.blocked_reason IS NOT NULL AND x.status IN ('SCHEDULED','SCHEDULED_NOTIFIED'))
        ORDER BY u.id
        LIMIT $2
        FOR UPDATE OF u SKIP LOCKED`,
      [after, limit],
    );
    for (const row of rows) {
      const gate = this.gate(row, row.to_cluster_version, now);
      const subject = this.subject(row);
      if (gate.held && gate.held !== row.blocked_reason) {
        await this.savepoint(async () => {
          await this.guardedUpdate(
            `UPDATE scheduled_cluster_upgrades
                SET blocked_reason = $3, status = 'SCHEDULED', notified_at = NULL, modified_at = $4, version = version + 1
              WHERE id = $1 AND status = $2 AND blocked_reason IS NOT DISTINCT FROM $5`,
            [row.id, row.status, gate.held, now, row.blocked_reason],
            row,
          );
          const details: AuditDetails = { blockedReason: { old: row.blocked_reason, new: gate.held } };
          if (row.status !== 'SCHEDULED') details.status = { old: row.status, new: 'SCHEDULED' };
          await this.audit.write(
            {
              type: 'SCHEDULED_CLUSTER_UPGRADE_BLOCKED',
              ...upgradeAuditRefs(row),
              details,
              message: `system held the upgrade of cluster ${subject} to ${row.to_cluster_version}: ${gate.held}`,
            },
            SYSTEM_ACTOR,
          );
        });
      } else if (!gate.held && row.blocked_reason) {
        const covering = this.covering(this.exclusionsOf(row, null), row.cluster_version, row.to_cluster_version);
        const next = this.sequencedWindow(row.windows, row.time_zone, now, covering, gate.soakEnd);
        if (!next) continue; // no allowed window yet: stays held, tried again next pass
        await this.savepoint(async () => {
          await this.guardedUpdate(
            `UPDATE scheduled_cluster_upgrades
                SET blocked_reason = NULL, window_start = $3, window_end = $4, modified_at = $5, version = version + 1
              WHERE id = $1 AND status = $2 AND blocked_reason = $6`,
            [row.id, row.status, next.start, next.end, now, row.blocked_reason],
            row,
          );
          const details: AuditDetails = { blockedReason: { old: row.blocked_reason, new: null } };
          if (row.window_start.getTime() !== next.start.getTime()) details.windowStart = { old: row.window_start.toISOString(), new: next.start.toISOString() };
          if (row.window_end.getTime() !== next.end.getTime()) details.windowEnd = { old: row.window_end.toISOString(), new: next.end.toISOString() };
          const why =
            row.up_id != null
              ? `upstream cluster ${row.up_subject} has run ${row.to_cluster_version} since ${row.up_since!.toISOString()} (soak ${row.soak_hours} h)`
              : 'the cluster no longer has an upstream cluster';
          await this.audit.write(
            {
              type: 'SCHEDULED_CLUSTER_UPGRADE_UNBLOCKED',
              ...upgradeAuditRefs(row),
              details,
              message:
                `system released the upgrade of cluster ${subject} to ${row.to_cluster_version} into the window ` +
                `${describeUpgradeWindow(next.start, next.end)}: ${why}`,
            },
            SYSTEM_ACTOR,
          );
        });
      }
    }
    return this.step(rows, limit);
  }

  /**
   * An upgrade the scheduler planned follows its cluster's maintenance schedule and exclusions: when the
   * schedule (or the cluster's choice of schedule) changed before the window opened, or an exclusion covering
   * the upgrade now overlaps its window (even one already open, as long as the upgrade has not started), the
   * upgrade moves to the first allowed window and goes back to SCHEDULED so the new window is announced.
   */
  private async replan(now: Date, after: string, limit: number): Promise<Step> {
    const rows = await this.q<
      UpgradeRow & {
        windows: MaintenanceWindow[] | null;
        time_zone: string | null;
        schedule_name: string | null;
        cluster_version: string;
        cluster_exclusions: MaintenanceExclusion[] | null;
        schedule_exclusions: MaintenanceExclusion[] | null;
      }
    >(
      `SELECT ${UPGRADE_COLUMNS}, ms.windows, ms.time_zone, ms.name AS schedule_name, c.version AS cluster_version,
              c.maintenance_exclusions AS cluster_exclusions, ms.exclusions AS schedule_exclusions
         ${UPGRADE_FROM}
         LEFT JOIN maintenance_schedules ms ON ms.id = c.maintenance_schedule_id
        WHERE u.status IN ('SCHEDULED','SCHEDULED_NOTIFIED') AND u.created_by = 'system' AND u.window_end > $1
          AND c.deleted_at IS NULL AND u.blocked_reason IS NULL AND u.id > $2
        ORDER BY u.id
        LIMIT $3
        FOR UPDATE OF u SKIP LOCKED`,
      [now, after, limit],
    );
    for (const row of rows) {
      const sourced = this.exclusionsOf(row, row.schedule_name);
      const covering = this.covering(sourced, row.cluster_version, row.to_cluster_version);
      const blocking = overlappingExclusion(
        covering.map((x) => x.exclusion),
        row.window_start,
        row.window_end,
      );
      const hasWindows = !!row.windows?.length;
      // Without an exclusion in the way, only a future window of a schedule follows the schedule's changes.
      if (!blocking && !(hasWindows && row.window_start.getTime() > now.getTime())) continue;
      const next = this.allowed(row.windows, row.time_zone, now, covering, false);
      if (!next) continue;
      if (next.start.getTime() === row.window_start.getTime() && next.end.getTime() === row.window_end.getTime()) continue;
      const because = blocking
        ? `its window overlapped the maintenance exclusion "${blocking.name}" (${blocking.scope}, ` +
          `${describeUpgradeWindow(new Date(blocking.startsAt), new Date(blocking.endsAt))}) of ${sourced.find((x) => x.exclusion === blocking)!.source}`
        : 'its maintenance schedule changed';
      await this.savepoint(async () => {
        await this.q(
          `UPDATE scheduled_cluster_upgrades
              SET window_start = $2, window_end = $3, status = 'SCHEDULED', notified_at = NULL, modified_at = $4, version = version + 1
            WHERE id = $1`,
          [row.id, next.start, next.end, now],
        );
        const details: AuditDetails = {
          windowStart: { old: row.window_start.toISOString(), new: next.start.toISOString() },
          windowEnd: { old: row.window_end.toISOString(), new: next.end.toISOString() },
        };
        if (row.status !== 'SCHEDULED') details.status = { old: row.status, new: 'SCHEDULED' };
        await this.audit.write(
          {
            type: 'SCHEDULED_CLUSTER_UPGRADE_RESCHEDULED',
            ...upgradeAuditRefs(row),
            details,
            message:
              `system moved the upgrade of cluster ${this.subject(row)} to ${row.to_cluster_version} to the window ` +
              `${describeUpgradeWindow(next.start, next.end)}: ${because}`,
          },
          SYSTEM_ACTOR,
        );
      });
    }
    return this.step(rows, limit);
  }

  /**
   * Auto-upgrade clusters behind their channel, with no open upgrade: SCHEDULED in the next window. The candidates
   * are found from the update channels: per channel, the auto-upgrade clusters on it whose version sorts before or
   * after the channel's, two range scans of clusters_channel_version_idx that skip the clusters on the channel's
   * version (a fleet at rest reads no cluster row).
   */
  private async scheduleNew(now: Date, count: (s: ScheduledUpgradeStatus) => void, after: string, limit: number): Promise<Step> {
    const upstream = upstreamSql('ch.kubernetes_cluster_version');
    const candidates = await this.q<CandidateCluster>(
      `WITH behind AS (
         SELECT b.id, ch.name AS channel_name, ch.kubernetes_cluster_version AS channel_version
           FROM update_channels ch
           CROSS JOIN LATERAL (
             SELECT c.id FROM clusters c
              WHERE c.update_channel = ch.name AND c.auto_upgrade AND c.deleted_at IS NULL
                AND c.version < ch.kubernetes_cluster_version AND c.id > $1
             UNION ALL
             SELECT c.id FROM clusters c
              WHERE c.update_channel = ch.name AND c.auto_upgrade AND c.deleted_at IS NULL
                AND c.version > ch.kubernetes_cluster_version AND c.id > $1) b
          ORDER BY b.id
          LIMIT $2)
       SELECT c.id, c.organisation_id, c.version, c.auto_upgrade_policy, ch.name AS channel_name, ch.kubernetes_cluster_version AS channel_version,
              ms.windows, ms.time_zone, c.maintenance_exclusions AS cluster_exclusions, ms.exclusions AS schedule_exclusions,
              EXISTS (SELECT 1 FROM scheduled_cluster_upgrades u
                       WHERE u.cluster_id = c.id AND u.status IN ('SCHEDULED','SCHEDULED_NOTIFIED','UPDATED')) AS has_open,
              -- a version whose upgrade failed, or a person cancelled, is not planned again by itself
              EXISTS (SELECT 1 FROM scheduled_cluster_upgrades u
                       WHERE u.cluster_id = c.id AND u.to_cluster_version = ch.kubernetes_cluster_version
                         AND (u.status = 'FAILED' OR (u.status = 'CANCELLED' AND u.cancelled_by IS DISTINCT FROM 'system'))) AS refused,
              ${upstream.columns}
         FROM behind
         JOIN clusters c ON c.id = behind.id
         JOIN update_channels ch ON ch.name = behind.channel_name
         LEFT JOIN maintenance_schedules ms ON ms.id = c.maintenance_schedule_id
         ${upstream.joins}
        ORDER BY c.id`,
      [after, limit],
    );
    for (const c of candidates) {
      if (c.has_open || c.refused) continue;
      if (!this.newer(c.channel_version, c.version)) continue;
      // PATCH_ONLY: a channel on another minor plans nothing (the cluster shows upgradeAvailable instead).
      if (c.auto_upgrade_policy === 'PATCH_ONLY' && !samePatchLine(c.channel_version, c.version)) continue;
      // Rollout sequencing: behind an upstream cluster, only once it has run the version for the soak time (and
      // not after its upgrade to it failed); nothing is planned meanwhile.
      const gate = this.gate(c, c.channel_version, now);
      if (gate.held) continue;
      // The window open now when enough of it remains (a user who opens a window wants it used), else the next;
      // either way the first one no exclusion covering this upgrade overlaps. None found: nothing is planned yet.
      // Behind an upstream, the first window starting at or after the end of its soak.
      const covering = this.covering(this.exclusionsOf(c, null), c.version, c.channel_version);
      const occurrence = this.sequencedWindow(c.windows, c.time_zone, now, covering, gate.soakEnd);
      if (!occurrence) continue;
      const windowStart = occurrence.start;
      const windowEnd = occurrence.end;
      const reason =
        `update channel ${c.channel_name} moved to ${c.channel_version}` +
        (c.up_id != null ? `; upstream cluster ${c.up_subject} runs it since ${c.up_since!.toISOString()} (soak ${c.soak_hours} h)` : '');
      await this.savepoint(async () => {
        const [inserted] = await this.q<{ identity: string }>(
          `INSERT INTO scheduled_cluster_upgrades
             (organisation_id, cluster_id, from_cluster_version, to_cluster_version, window_start, window_end, status, reason,
              created_by, created_at, modified_at)
           VALUES ($1, $2, $3, $4, $5, $6, 'SCHEDULED', $7, 'system', $8, $8)
           ON CONFLICT DO NOTHING RETURNING identity`,
          [c.organisation_id, c.id, c.version, c.channel_version, windowStart, windowEnd, reason, now],
        );
        if (!inserted) return; // an open upgrade appeared meanwhile (e.g. created by an administrator)
        const [row] = await this.q<UpgradeRow>(`SELECT ${UPGRADE_COLUMNS} ${UPGRADE_FROM} WHERE u.identity = $1`, [inserted.identity]);
        await this.audit.write(
          {
            type: 'SCHEDULED_CLUSTER_UPGRADE_SCHEDULED',
            ...upgradeAuditRefs(row),
            details: {
              status: { old: null, new: 'SCHEDULED' },
              fromClusterVersion: { old: null, new: row.from_cluster_version },
              toClusterVersion: { old: null, new: row.to_cluster_version },
              windowStart: { old: null, new: row.window_start.toISOString() },
              windowEnd: { old: null, new: row.window_end.toISOString() },
              reason: { old: null, new: reason },
            },
            message:
              `system scheduled an upgrade of cluster ${this.subject(row)} from ${row.from_cluster_version} to ${row.to_cluster_version} ` +
              `in the window ${describeUpgradeWindow(row.window_start, row.window_end)} (${reason})`,
          },
          SYSTEM_ACTOR,
        );
        count('SCHEDULED');
      });
    }
    return this.step(candidates, limit);
  }

  /** SCHEDULED -> SCHEDULED_NOTIFIED once the window is at most NOTIFY_AHEAD_MS away: the announcement. */
  private async notify(now: Date, count: (s: ScheduledUpgradeStatus) => void, after: string, limit: number): Promise<Step> {
    const rows = await this.openUpgrades(
      `u.status = 'SCHEDULED' AND u.window_start <= $1 AND u.window_end > $2 AND u.blocked_reason IS NULL`,
      [new Date(now.getTime() + NOTIFY_AHEAD_MS), now],
      after,
      limit,
    );
    for (const row of rows) {
      await this.transition(row, 'SCHEDULED_NOTIFIED', now, count, {
        message:
          `Cluster ${this.subject(row)} will be upgraded from ${row.from_cluster_version} to ${row.to_cluster_version} ` +
          `in the maintenance window ${describeUpgradeWindow(row.window_start, row.window_end)}`,
      });
    }
    return this.step(rows, limit);
  }

  /** Window open and the cluster running: set its desired version (the reconciler upgrades it). */
  private async start(now: Date, count: (s: ScheduledUpgradeStatus) => void, after: string, limit: number): Promise<Step> {
    const rows = await this.openUpgrades(
      `u.status IN ('SCHEDULED','SCHEDULED_NOTIFIED') AND u.window_start <= $1 AND u.window_end > $1 AND u.blocked_reason IS NULL
       AND c.deleted_at IS NULL AND c.status = 'started' AND c.desired_status IS NULL`,
      [now],
      after,
      limit,
    );
    for (const row of rows) {
      // An upgrade the scheduler planned does not start inside an exclusion covering it (replan normally moved it
      // already); an administrator's upgrade is not held back.
      if (row.created_by === 'system') {
        const covering = this.covering(this.exclusionsOf(row, null), row.cluster_version, row.to_cluster_version);
        if (overlappingExclusion(covering.map((x) => x.exclusion), now, new Date(now.getTime() + 1))) continue;
      }
      await this.transition(row, 'UPDATED', now, count, {
        details: { version: { old: row.cluster_version, new: row.to_cluster_version } },
        message: `system started the upgrade of cluster ${this.subject(row)} from ${row.cluster_version} to ${row.to_cluster_version}`,
        before: async () => {
          await this.q(
            `UPDATE clusters SET version = $2, next_attempt_at = NULL, modified_at = $3, row_version = row_version + 1 WHERE id = $1`,
            [row.cluster_id, row.to_cluster_version, now],
          );
        },
      });
    }
    return this.step(rows, limit);
  }

  /** UPDATED: the driver reports the new version (SUCCEEDED) or a fault (FAILED). */
  private async finish(now: Date, count: (s: ScheduledUpgradeStatus) => void, after: string, limit: number): Promise<Step> {
    const rows = await this.openUpgrades(`u.status = 'UPDATED'`, [], after, limit);
    for (const row of rows) {
      const subject = this.subject(row);
      if (row.cluster_observed_version === row.to_cluster_version && !row.cluster_deleted_at) {
        await this.transition(row, 'SUCCEEDED', now, count, {
          message: `Cluster ${subject} was upgraded from ${row.from_cluster_version} to ${row.to_cluster_version}`,
          // Its downstream clusters' soak time counts from here (the trigger set the database's time when the
          // observed version changed; the scheduler's clock is the one the rules use).
          before: async () => {
            await this.q(`UPDATE clusters SET version_since = $2 WHERE id = $1 AND observed_version = $3`, [row.cluster_id, now, row.to_cluster_version]);
          },
        });
      } else if (row.cluster_deleted_at) {
        await this.transition(row, 'FAILED', now, count, {
          message: `The upgrade of cluster ${subject} to ${row.to_cluster_version} failed: the cluster was deleted`,
        });
      } else if (
        (row.cluster_status === 'unknown' && row.cluster_last_error) ||
        row.window_end.getTime() + this.config.UPGRADE_TIMEOUT_GRACE_MINUTES * 60_000 <= now.getTime()
      ) {
        // A driver fault, or no new version by the end of the window plus the grace period (timeout). The
        // cluster goes back to the version it runs, so the reconciler does not retry the upgrade outside the
        // window; a new attempt is a new scheduled upgrade.
        const timedOut = !(row.cluster_status === 'unknown' && row.cluster_last_error);
        const reason = timedOut
          ? `the cluster did not reach ${row.to_cluster_version} by ${new Date(row.window_end.getTime() + this.config.UPGRADE_TIMEOUT_GRACE_MINUTES * 60_000).toISOString()} ` +
            `(window end plus ${this.config.UPGRADE_TIMEOUT_GRACE_MINUTES} min)`
          : row.cluster_last_error!;
        const revertTo = row.cluster_observed_version ?? row.from_cluster_version;
        const reverts = row.cluster_version === row.to_cluster_version && revertTo !== row.cluster_version;
        await this.transition(row, 'FAILED', now, count, {
          details: {
            ...(timedOut ? { reason: { old: row.reason, new: `timed out: ${reason}` } } : { lastError: { old: null, new: reason } }),
            ...(reverts ? { version: { old: row.cluster_version, new: revertTo } } : {}),
          },
          message: `The upgrade of cluster ${subject} from ${row.from_cluster_version} to ${row.to_cluster_version} failed: ${reason}`,
          before: async () => {
            if (timedOut) await this.q(`UPDATE scheduled_cluster_upgrades SET reason = $2 WHERE id = $1`, [row.id, `timed out: ${reason}`]);
            if (reverts) {
              await this.q(`UPDATE clusters SET version = $2, modified_at = $3, row_version = row_version + 1 WHERE id = $1`, [
                row.cluster_id,
                revertTo,
                now,
              ]);
            }
          },
        });
      }
    }
    return this.step(rows, limit);
  }

  /** The window closed before the upgrade could start (e.g. the cluster was stopped): MISSED. */
  private async miss(now: Date, count: (s: ScheduledUpgradeStatus) => void, after: string, limit: number): Promise<Step> {
    const rows = await this.openUpgrades(`u.status IN ('SCHEDULED','SCHEDULED_NOTIFIED') AND u.window_end <= $1 AND u.blocked_reason IS NULL`, [now], after, limit);
    for (const row of rows) {
      await this.transition(row, 'MISSED', now, count, {
        message:
          `The upgrade of cluster ${this.subject(row)} from ${row.from_cluster_version} to ${row.to_cluster_version} missed its window ` +
          `${describeUpgradeWindow(row.window_start, row.window_end)} (the cluster was ${row.cluster_status})`,
      });
    }
    return this.step(rows, limit);
  }

  // ---- helpers -----------------------------------------------------------------------------------

  private q<T = unknown>(sql: string, params: unknown[] = []): Promise<T[]> {
    return this.txHost.tx.query(sql, params);
  }

  /**
   * One batch (after the id `after`) of the upgrades matching `where`, with their cluster and channel, locked (rows
   * held elsewhere are skipped).
   */
  private openUpgrades(where: string, params: unknown[], after: string, limit: number): Promise<OpenUpgradeRow[]> {
    return this.q<OpenUpgradeRow>(
      `SELECT ${UPGRADE_COLUMNS}, u.created_by, c.version AS cluster_version, c.status AS cluster_status,
              c.desired_status AS cluster_desired_status, c.deleted_at AS cluster_deleted_at,
              c.observed_version AS cluster_observed_version, c.last_error AS cluster_last_error, c.auto_upgrade,
              ch.name AS channel_name, ch.kubernetes_cluster_version AS channel_version,
              c.maintenance_exclusions AS cluster_exclusions, ms.exclusions AS schedule_exclusions
         ${UPGRADE_FROM}
         LEFT JOIN update_channels ch ON ch.name = c.update_channel
         LEFT JOIN maintenance_schedules ms ON ms.id = c.maintenance_schedule_id
        WHERE ${where} AND u.id > $${params.length + 1}
        ORDER BY u.id
        LIMIT $${params.length + 2}
        FOR UPDATE OF u SKIP LOCKED`,
      [...params, after, limit],
    );
  }

  private async transition(
    row: OpenUpgradeRow,
    to: ScheduledUpgradeStatus,
    now: Date,
    count: (s: ScheduledUpgradeStatus) => void,
    opts: { message: string; details?: AuditDetails; before?: () => Promise<void> },
  ): Promise<void> {
    await this.savepoint(async () => {
      if (opts.before) await opts.before();
      const [, changed] = (await this.txHost.tx.query(
        `UPDATE scheduled_cluster_upgrades
            SET status = $2, modified_at = $3, version = version + 1,
                notified_at = CASE WHEN $2 = 'SCHEDULED_NOTIFIED' THEN $3 ELSE notified_at END,
                started_at = CASE WHEN $2 = 'UPDATED' THEN $3 ELSE started_at END,
                finished_at = CASE WHEN $2 = ANY($5::text[]) THEN $3 ELSE finished_at END,
                cancelled_by = CASE WHEN $2 = 'CANCELLED' THEN 'system' ELSE cancelled_by END
          WHERE id = $1 AND status = $4`,
        [row.id, to, now, row.status, TERMINAL],
      )) as [unknown, number];
      if (!changed) throw new Error(`upgrade ${row.identity} left ${row.status} meanwhile`);
      await this.audit.write(
        {
          type: `SCHEDULED_CLUSTER_UPGRADE_${to}`,
          ...upgradeAuditRefs(row),
          details: { status: { old: row.status, new: to }, ...(opts.details ?? {}) },
          message: opts.message,
        },
        SYSTEM_ACTOR,
      );
      this.logger.log(
        {
          upgrade: row.identity,
          cluster: row.cluster_identity,
          organisation: row.organisation_slug,
          environment: row.environment_slug,
          from: row.status,
          to,
          toVersion: row.to_cluster_version,
        },
        `Scheduled upgrade ${row.identity} of ${row.environment_slug}/${row.cluster_slug}: ${row.status} -> ${to}`,
      );
      row.status = to;
      count(to);
    });
  }

  /** Runs `fn` in a savepoint: its failure is logged and undone without aborting the run. */
  private async savepoint(fn: () => Promise<void>): Promise<void> {
    await this.q('SAVEPOINT upgrade_step');
    try {
      await fn();
      await this.q('RELEASE SAVEPOINT upgrade_step');
    } catch (err) {
      await this.q('ROLLBACK TO SAVEPOINT upgrade_step');
      this.logger.warn({ err }, 'Scheduled upgrade step skipped');
    }
  }

  /**
   * Rollout sequencing for an upgrade to `to` of a cluster with these upstream facts: held (with the reason) while
   * the upstream does not run `to` (or newer), its upgrade to `to` is still under way, or it runs `to` for less than
   * the soak time; and when the upstream's latest upgrade to `to` FAILED (and it does not run `to` after all); `soakEnd` is when the upstream's soak ended (null without an upstream).
   */
  private gate(f: UpstreamFacts, to: string, now: Date): Gate {
    if (f.up_id == null) return { held: null, soakEnd: null };
    const hours = Number(f.soak_hours);
    const runs = !!f.up_version && this.atLeast(f.up_version, to);
    if (!runs && f.up_upgrade_status === 'FAILED') {
      return { held: `upstream cluster ${f.up_subject} failed its upgrade to ${to} (upgrade ${f.up_upgrade})`, soakEnd: null };
    }
    // While the upstream's upgrade to `to` is still UPDATED its outcome is open (and the soak starts when it
    // is recorded as SUCCEEDED).
    const settled = runs && f.up_upgrade_status !== 'UPDATED';
    const soakEnd = settled && f.up_since ? new Date(new Date(f.up_since).getTime() + hours * HOUR_MS) : null;
    if (!soakEnd || soakEnd.getTime() > now.getTime()) {
      return { held: `waiting for upstream cluster ${f.up_subject} to run ${to} for ${hours} h`, soakEnd };
    }
    return { held: null, soakEnd };
  }

  /** The window to plan into, and behind an upstream cluster the first one starting at or after its soak ended. */
  private sequencedWindow(
    windows: MaintenanceWindow[] | null,
    zone: string | null,
    now: Date,
    covering: SourcedExclusion[],
    soakEnd: Date | null,
  ): { start: Date; end: Date } | null {
    const open = this.allowed(windows, zone, now, covering, true);
    if (!open || !soakEnd || open.start.getTime() >= soakEnd.getTime()) return open;
    // The window open now started before the soak ended: the next one.
    return this.allowed(windows, zone, now, covering, false);
  }

  /** An UPDATE of one upgrade row that must change it (else the step is undone: another run got there first). */
  private async guardedUpdate(sql: string, params: unknown[], row: UpgradeRow): Promise<void> {
    const [, changed] = (await this.txHost.tx.query(sql, params)) as [unknown, number];
    if (!changed) throw new Error(`upgrade ${row.identity} changed meanwhile`);
  }

  /** The cluster's own exclusions, then its schedule's. */
  private exclusionsOf(
    row: { cluster_exclusions: MaintenanceExclusion[] | null; schedule_exclusions: MaintenanceExclusion[] | null },
    scheduleName: string | null,
  ): SourcedExclusion[] {
    return [
      ...(row.cluster_exclusions ?? []).map((exclusion) => ({ exclusion, source: 'the cluster' })),
      ...(row.schedule_exclusions ?? []).map((exclusion) => ({
        exclusion,
        source: scheduleName ? `maintenance schedule ${scheduleName}` : 'its maintenance schedule',
      })),
    ];
  }

  /** Those covering an upgrade from `from` to `to` (NO_MINOR_UPGRADES only when major.minor changes). */
  private covering(list: SourcedExclusion[], from: string, to: string): SourcedExclusion[] {
    const applicable = new Set(applicableExclusions(list.map((x) => x.exclusion), from, to));
    return list.filter((x) => applicable.has(x.exclusion));
  }

  /** The window to plan into: the schedule's (or the default one), skipping those the exclusions overlap. */
  private allowed(windows: MaintenanceWindow[] | null, zone: string | null, now: Date, covering: SourcedExclusion[], openOk: boolean) {
    return allowedWindow(windows, zone ?? 'UTC', now, covering.map((x) => x.exclusion), {
      openOk,
      defaultDelayMs: DEFAULT_WINDOW_DELAY_MS,
      defaultLengthMs: DEFAULT_WINDOW_LENGTH_MS,
    });
  }

  private subject(row: UpgradeRow): string {
    return `${row.environment_slug}/${row.cluster_slug}`;
  }

  /** a > b by semver (false when either is not a version). */
  private newer(a: string, b: string): boolean {
    const va = semver.valid(a);
    const vb = semver.valid(b);
    return !!va && !!vb && semver.gt(va, vb);
  }

  private atLeast(a: string, b: string): boolean {
    const va = semver.valid(a);
    const vb = semver.valid(b);
    return !!va && !!vb && semver.gte(va, vb);
  }
}
