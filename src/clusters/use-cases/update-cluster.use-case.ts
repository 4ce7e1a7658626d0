import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable } from '@nestjs/common';
import { auditDiff } from '../../audit/audit-diff';
import { AuditEntry, AuditRecorder } from '../../audit/audit-recorder';
import { AuditService } from '../../audit/audit.service';
import { AuditedTransaction } from '../../audit/audited-transaction';
import { SqlPart, sqlParams } from '../../common/sql-params';
import { Clock } from '../../common/clock';
import { checkExclusionHorizon, normaliseExclusions } from '../../maintenance/maintenance-exclusion';
import { ValidationFailedException } from '../../common/errors';
import type { OrganisationEntity } from '../../identity/organisation.entity';
import { ClusterCatalog } from '../cluster-catalog';
import { ClusterLookup } from '../cluster-lookup';
import { CLUSTER_SELECT, ClusterRow } from '../cluster-read';
import { ClusterRules } from '../cluster-rules';
import { decideRequest, downgradeTargets, upgradeTargets, VERSION_CHANGE_STATUSES } from '../cluster-state-machine';
import { ClusterDesiredStatus, ClusterEntity, PodSecurityStandardsProfile } from '../cluster.entity';
import type { UpdateClusterRequest } from '../dto/cluster.dto';
import { ClusterChangeGate } from '../cluster-change-gate';

export class UpdateClusterCommand {
  constructor(
    readonly organisation: OrganisationEntity,
    readonly environmentSlug: string,
    readonly clusterSlug: string,
    readonly request: UpdateClusterRequest,
  ) {}
}

const fail = (field: string, message: string) => ValidationFailedException.forField(field, message);

const AUDITED = [
  'name',
  'description',
  'desiredStatus',
  'version',
  'updateChannel',
  'autoUpgrade',
  'autoUpgradePolicy',
  'highlyAvailable',
  'enableNetworkEncryption',
  'podSecurityStandardsProfile',
  'deleteProtection',
  'ipWhitelist',
  'addons',
  'clusterAutoscalerSettings',
  'maintenanceScheduleId',
  'maintenanceExclusions',
  'upstreamClusterId',
  'upgradeSoakHours',
] as const;

type Audited = (typeof AUDITED)[number];

const REQUEST_TYPES: Record<ClusterDesiredStatus, string> = {
  starting: 'CLUSTER_START_REQUESTED',
  stopping: 'CLUSTER_STOP_REQUESTED',
  deleting: 'CLUSTER_DELETE_REQUESTED',
};

/**
 * The cluster update of docs/conventions.md ("Clusters and node pools"). Settings change at once; `status` records the intent in
 * `desiredStatus` for the reconciler (409 when the state machine refuses it); `version` only moves to
 * an available upgrade or downgrade target while the cluster is started or stopped.
 */
@Injectable()
export class UpdateClusterUseCase {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly lookup: ClusterLookup,
    private readonly catalog: ClusterCatalog,
    private readonly rules: ClusterRules,
    private readonly auditRecorder: AuditRecorder,
    private readonly audit: AuditService,
    private readonly audited: AuditedTransaction,
    private readonly policies: ClusterChangeGate,
  ) {}

  /**
   * Answers the cluster as it is after the change (the row the UPDATE returned, or the locked row when nothing changed),
   * committed: the caller reads the rest of its answer outside the transaction (OwnTransaction), holding no lock.
   * Called inside a transaction already, it joins it.
   */
  execute(cmd: UpdateClusterCommand): Promise<ClusterRow> {
    return this.audited.run(() => this.change(cmd));
  }

  private async change(cmd: UpdateClusterCommand): Promise<ClusterRow> {
    const { organisation: org, request: req } = cmd;
    // Read before the row lock: each statement between the lock and COMMIT holds up every other change of the cluster.
    // It is this transaction's read all the same: a policy committed before the request came is applied.
    const enabledPolicies = await this.policies.enabledPolicies(org.id);
    const { environment: env, cluster } = await this.lookup.cluster(org, cmd.environmentSlug, cmd.clusterSlug, true);
    const before = snapshot(cluster);
    const policySnapshot = await this.policies.before(cluster, enabledPolicies);
    const next: ClusterEntity = Object.assign(Object.create(Object.getPrototypeOf(cluster)), cluster);
    let wakeReconciler = false;

    const onlyRepeatsDelete = Object.keys(req).every((k) => k === 'status') && req.status === 'deleting';
    if (cluster.status === 'deleting' && !onlyRepeatsDelete) {
      throw new ConflictException(`The cluster is 'deleting'; it cannot be changed any more.`);
    }

    if (req.name !== undefined) next.name = req.name;
    if (req.description !== undefined) next.description = req.description ?? null;
    if (req.enableAutoUpgrade !== undefined) next.autoUpgrade = req.enableAutoUpgrade;
    if (req.autoUpgradePolicy !== undefined) next.autoUpgradePolicy = req.autoUpgradePolicy;
    if (req.enableHighAvailability !== undefined) next.highlyAvailable = req.enableHighAvailability;
    if (req.enableNetworkEncryption !== undefined) next.enableNetworkEncryption = req.enableNetworkEncryption;
    if (req.podSecurityStandardsProfile !== undefined) next.podSecurityStandardsProfile = req.podSecurityStandardsProfile as PodSecurityStandardsProfile;
    if (req.deleteProtection !== undefined) next.deleteProtection = req.deleteProtection;
    // Protection while a deletion is pending is refused (the database enforces the same rule under races).
    if (req.deleteProtection === true && (cluster.desiredStatus === 'deleting' || req.status === 'deleting')) {
      throw new ConflictException(
        'The cluster has a deletion pending; it cannot be protected now. Deletions cannot be cancelled once requested.',
      );
    }
    if (req.ipWhitelist !== undefined) next.ipWhitelist = req.ipWhitelist.map((w) => ({ cidr: w.cidr.ipRange, description: w.description }));
    if (req.clusterAutoscalerSettings !== undefined) next.clusterAutoscalerSettings = { ...req.clusterAutoscalerSettings };
    if (req.updateChannel !== undefined && req.updateChannel !== null) {
      await this.rules.updateChannel(req.updateChannel);
      next.updateChannel = req.updateChannel;
    } else if (req.updateChannel === null) next.updateChannel = null;
    if (req.addons !== undefined) {
      await this.rules.checkAddons(req.addons);
      next.addons = { ...cluster.addons };
      for (const [k, v] of Object.entries(req.addons)) next.addons[k] = { enabled: v.enabled, customValues: v.customValues ?? {} };
    }
    if (req.maintenanceScheduleIdentity !== undefined) {
      next.maintenanceScheduleId = req.maintenanceScheduleIdentity === null ? null : await this.rules.maintenanceScheduleId(org, req.maintenanceScheduleIdentity);
    }
    if (req.maintenanceExclusions !== undefined) {
      const exclusions = normaliseExclusions(req.maintenanceExclusions);
      checkExclusionHorizon(exclusions, this.clock.now(), 'maintenanceExclusions');
      next.maintenanceExclusions = exclusions;
    }
    if (req.upgradeSoakHours !== undefined) next.upgradeSoakHours = req.upgradeSoakHours;
    if (req.upstreamCluster !== undefined) {
      next.upstreamClusterId = req.upstreamCluster === null ? null : await this.upstreamId(org, cluster, req.upstreamCluster.identity);
    }

    if (req.version !== undefined && req.version !== cluster.version) {
      if (!VERSION_CHANGE_STATUSES.includes(cluster.status)) {
        throw new ConflictException(`The version of a cluster can change only while it is started or stopped; it is '${cluster.status}'.`);
      }
      const target = await this.catalog.version(req.version);
      if (!target) throw fail('version', `version '${req.version}' is not a known cluster version`);
      if (!target.available) throw fail('version', `version '${req.version}' is not available`);
      const available = await this.catalog.availableVersions();
      const allowed = [...downgradeTargets(cluster.version, available), ...upgradeTargets(cluster.version, available)];
      if (!allowed.includes(req.version)) {
        throw fail(
          'version',
          `version '${req.version}' is not an upgrade or downgrade target of ${cluster.version}; allowed: ${allowed.join(', ') || 'none'}`,
        );
      }
      next.version = req.version;
      wakeReconciler = true;
    }

    if (req.status !== undefined) {
      const decision = decideRequest(
        {
          status: cluster.status,
          provisionStatus: cluster.provisionStatus,
          desiredStatus: cluster.desiredStatus,
          version: cluster.version,
          observedVersion: cluster.observedVersion,
          deleteProtection: next.deleteProtection,
        },
        req.status as ClusterDesiredStatus,
      );
      if (!decision.ok) throw new ConflictException(decision.message);
      if (!decision.noop) {
        next.desiredStatus = decision.desiredStatus;
        wakeReconciler = true;
      }
    }

    const after = snapshot(next);
    const details = auditDiff(before, after, [...AUDITED]);
    const changed = Object.keys(details) as Audited[];
    const statusChanged = req.status !== undefined && details.desiredStatus !== undefined;
    const entry: AuditEntry = {
      type: statusChanged ? REQUEST_TYPES[req.status as ClusterDesiredStatus] : 'CLUSTER_UPDATED',
      organisation: { id: org.id, slug: org.slug },
      environment: { id: env.id, slug: env.slug },
      cluster: { id: cluster.id, slug: cluster.slug },
      referencedEntityIdentity: cluster.identity,
      subject: `${env.slug}/${cluster.slug}`,
      details,
    };
    const now = this.clock.now();
    let updated: ClusterRow = cluster;
    // The audit row, activity and webhook events ride on the UPDATE: the row lock is held for one statement fewer.
    if (changed.length) updated = await this.write(cluster.id, next, changed, now, wakeReconciler, this.audit.inStatement(entry));
    else this.auditRecorder.record(entry); // an update that changed nothing writes no trace
    if (before.name !== after.name) {
      await this.txHost.tx.query(`UPDATE observability_tenants SET name = $2, modified_at = $3 WHERE cluster_id = $1 AND deleted_at IS NULL`, [
        cluster.id,
        `${env.name}/${after.name}`,
        now,
      ]);
    }

    // A change that changes nothing is not evaluated; deleting (PATCH status deleting or DELETE) is operation DELETE.
    // A Deny throws, and the transaction (the UPDATE with its audit rows) rolls back.
    if (changed.length) {
      const operation = statusChanged && req.status === 'deleting' ? 'DELETE' : 'UPDATE';
      await this.policies.enforce({ clusterId: Number(cluster.id), operation, resource: 'clusters', before: policySnapshot });
    }
    return updated;
  }

  /**
   * One UPDATE of the changed columns (and the bookkeeping TypeORM's entity update did: modified_at, the row_version
   * counter), answering the row as the GET reads it. Only changed columns are named, so the NOTIFY trigger on
   * desired_status/version (ClusterChangeNotify) wakes the reconcilers only when what they act on changed.
   * `rows`: the change's audit row, activity and webhook events (AuditService.inStatement), written by the same statement.
   */
  private async write(id: number, next: ClusterEntity, changed: Audited[], now: Date, wakeReconciler: boolean, rows: SqlPart | null): Promise<ClusterRow> {
    const { values, bind } = sqlParams();
    const withRows = rows ? `WITH ${rows(bind)} ` : '';
    const set = [`modified_at = ${bind(now)}`, 'row_version = row_version + 1'];
    const meta = this.txHost.tx.dataSource.getMetadata(ClusterEntity);
    for (const k of changed) {
      const column = meta.findColumnWithPropertyName(k)!;
      const v = (next as unknown as Record<string, unknown>)[k];
      // jsonb values go as JSON text: pg would send a JS array as a SQL array.
      const jsonb = column.type === 'jsonb';
      set.push(`${column.databaseName} = ${bind(jsonb ? JSON.stringify(v) : v)}${jsonb ? '::jsonb' : ''}`);
    }
    if (wakeReconciler) set.push('next_attempt_at = NULL');
    // TypeORM answers an UPDATE as [rows, rowCount].
    const [[row]] = await this.txHost.tx.query(`${withRows}UPDATE clusters c SET ${set.join(', ')} WHERE c.id = ${bind(id)} RETURNING ${CLUSTER_SELECT}`, values);
    return row as ClusterRow;
  }

  /** A non-deleted cluster of the same organisation, not this one and not downstream of it. */
  private async upstreamId(org: OrganisationEntity, self: ClusterEntity, identity: string): Promise<number> {
    const field = 'upstreamCluster.identity';
    const [row] = await this.txHost.tx.query(`SELECT id FROM clusters WHERE identity = $1 AND organisation_id = $2 AND deleted_at IS NULL`, [
      identity,
      org.id,
    ]);
    if (!row) throw fail(field, `${field}: no cluster ${identity} in organisation '${org.slug}'`);
    const id = Number(row.id);
    if (id === Number(self.id)) throw fail(field, `${field}: a cluster cannot be its own upstream cluster`);
    const [cycle] = await this.txHost.tx.query(
      `WITH RECURSIVE up(id, upstream) AS (
         SELECT id, upstream_cluster_id FROM clusters WHERE id = $1
         UNION SELECT c.id, c.upstream_cluster_id FROM clusters c JOIN up ON c.id = up.upstream)
       SELECT 1 FROM up WHERE id = $2 LIMIT 1`,
      [id, self.id],
    );
    if (cycle) throw fail(field, `${field}: that cluster is downstream of this one; the chain would be a cycle`);
    return id;
  }
}

function snapshot(c: ClusterEntity): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of AUDITED) {
    const v = (c as unknown as Record<string, unknown>)[k];
    // jsonb answers object keys in its own order: the canonical form compares like with like.
    out[k] = k.endsWith('Id') && v != null ? Number(v) : k === 'maintenanceExclusions' ? normaliseExclusions(v as []) : v;
  }
  return out;
}
