import * as semver from 'semver';
import type { ClusterDesiredStatus, ClusterStatus, ProvisionStatus } from './cluster.entity';

/**
 * The cluster state machine of docs/conventions.md ("Clusters and node pools"), in one place, as pure functions:
 *
 *   create -> new (ACCEPTED) -> provisioning (ACCEPTED, OIDC_PROVISIONED, CLUSTER_PROVISIONED,
 *   INITIAL_NODE_POOLS_PROVISIONED, INITIAL_ADDONS_PROVISIONED, DONE) -> provisioned -> starting -> started
 *   started  --stopping--> stopping -> stopped
 *   stopped  --starting--> starting -> started
 *   settled (provisioned, started, stopped, unknown) --deleting--> deleting -> deleted
 *   a failed driver step -> unknown, back to the remembered status at the next successful observation.
 *
 * The API only records intent (`desiredStatus`, `version`); the reconciler moves `status` one step per
 * pass with `nextReconcileStep`.
 */

/** States in which nothing is in flight; only these accept a request for a transition. */
export const SETTLED_STATUSES: readonly ClusterStatus[] = ['provisioned', 'started', 'stopped', 'unknown'];

/** Which `status` request (PATCH status / desiredStatus) each current status accepts. */
const ALLOWED_REQUESTS: Record<ClusterStatus, readonly ClusterDesiredStatus[]> = {
  new: [],
  provisioning: [],
  provisioned: ['starting', 'deleting'],
  starting: [],
  started: ['stopping', 'deleting'],
  stopping: [],
  stopped: ['starting', 'deleting'],
  deleting: [],
  deleted: [],
  unknown: ['deleting'],
};

export function allowedRequests(status: ClusterStatus): readonly ClusterDesiredStatus[] {
  return ALLOWED_REQUESTS[status] ?? [];
}

export interface StateView {
  status: ClusterStatus;
  provisionStatus: ProvisionStatus;
  desiredStatus: ClusterDesiredStatus | null;
  version: string;
  observedVersion: string | null;
  statusBeforeFault?: ClusterStatus | null;
  deleteProtection?: boolean;
  /** The desired-state generation and the newest one the driver reported applied (docs/adr/0150). */
  generation?: number;
  observedGeneration?: number | null;
}

/** A newer generation than the driver reported applied is waiting (rows without generations have none). */
export function generationPending(c: Pick<StateView, 'generation' | 'observedGeneration'>): boolean {
  return c.generation != null && c.observedGeneration != null && Number(c.generation) > Number(c.observedGeneration);
}

export type RequestDecision = { ok: true; desiredStatus: ClusterDesiredStatus; noop: boolean } | { ok: false; message: string };

/**
 * Decides a client's request for a transition. Repeating the request already pending is accepted as
 * a no-op; deleting overrides a pending start or stop; anything else not allowed from the current
 * status is refused with a message naming the status and what it allows.
 */
export function decideRequest(c: StateView, requested: ClusterDesiredStatus): RequestDecision {
  if (c.desiredStatus === requested || (requested === 'deleting' && c.status === 'deleting')) {
    return { ok: true, desiredStatus: c.desiredStatus ?? requested, noop: true };
  }
  const allowed = allowedRequests(c.status);
  if (!allowed.includes(requested)) {
    const list = allowed.length ? allowed.map((s) => `'${s}'`).join(', ') : 'none (wait until it is settled)';
    return {
      ok: false,
      message: `The cluster is '${c.status}'${c.desiredStatus ? ` with '${c.desiredStatus}' pending` : ''}; '${requested}' is not allowed from this state. Allowed requests: ${list}.`,
    };
  }
  if (requested === 'deleting' && c.deleteProtection) {
    return { ok: false, message: 'The cluster has deleteProtection enabled; set deleteProtection to false before deleting it.' };
  }
  if (requested !== 'deleting' && c.desiredStatus && c.desiredStatus !== requested) {
    return {
      ok: false,
      message: `The cluster is '${c.status}' with '${c.desiredStatus}' pending; wait until it is settled before requesting '${requested}'.`,
    };
  }
  return { ok: true, desiredStatus: requested, noop: false };
}

/** Statuses in which a version change is accepted. */
export const VERSION_CHANGE_STATUSES: readonly ClusterStatus[] = ['started', 'stopped'];

/** The provisioning steps after ACCEPTED, in order. */
export const PROVISIONING_STEPS: readonly ProvisionStatus[] = [
  'OIDC_PROVISIONED',
  'CLUSTER_PROVISIONED',
  'INITIAL_NODE_POOLS_PROVISIONED',
  'INITIAL_ADDONS_PROVISIONED',
  'DONE',
];

export interface Transition {
  kind: 'transition';
  /** Name of the driver step (also the key of a simulated fault): the target provisionStatus or status. */
  step: string;
  to: { status: ClusterStatus; provisionStatus: ProvisionStatus };
  /** Clear desiredStatus once this transition is applied (the intent is fulfilled). */
  fulfilsDesired: boolean;
  /** Audit/activity type written for the step. */
  auditType: string;
}
export interface UpgradeStep {
  kind: 'upgrade';
  step: 'upgrade';
  toVersion: string;
  auditType: 'CLUSTER_UPGRADED';
}
export interface RecoverStep {
  kind: 'recover';
  step: 'observe';
  auditType: 'CLUSTER_RECOVERED';
}
/** A started or stopped cluster whose newest generation is not applied yet (a node pool, add-on or network change). */
export interface UpdateStep {
  kind: 'update';
  step: 'update';
  auditType: 'CLUSTER_CHANGES_APPLIED';
}
/** Nothing to do now (e.g. a stopped cluster whose new version waits for the next start). */
export interface IdleStep {
  kind: 'idle';
}
export type ReconcileStep = Transition | UpgradeStep | UpdateStep | RecoverStep | IdleStep;

const t = (
  step: string,
  status: ClusterStatus,
  provisionStatus: ProvisionStatus,
  auditType: string,
  fulfilsDesired = false,
): Transition => ({ kind: 'transition', step, to: { status, provisionStatus }, fulfilsDesired, auditType });

const UPDATE: UpdateStep = { kind: 'update', step: 'update', auditType: 'CLUSTER_CHANGES_APPLIED' };

/**
 * The one next step for a cluster, or null when it is at rest. Deleting wins over everything; a
 * cluster in `unknown` first has to be observed healthy again (unless it is being deleted).
 */
export function nextReconcileStep(c: StateView): ReconcileStep | null {
  const ps = c.provisionStatus;
  if (c.status === 'deleted') return null;
  if (c.status === 'deleting') return t('deleted', 'deleted', ps, 'CLUSTER_DELETED');
  if (c.desiredStatus === 'deleting' && SETTLED_STATUSES.includes(c.status)) {
    return t('deleting', 'deleting', ps, 'CLUSTER_DELETING', true);
  }
  switch (c.status) {
    case 'unknown':
      return { kind: 'recover', step: 'observe', auditType: 'CLUSTER_RECOVERED' };
    case 'new':
      return t('provisioning', 'provisioning', 'ACCEPTED', 'CLUSTER_PROVISIONING_STEP_COMPLETED');
    case 'provisioning': {
      if (ps === 'DONE') return t('provisioned', 'provisioned', 'DONE', 'CLUSTER_PROVISIONED');
      const idx = PROVISIONING_STEPS.indexOf(ps);
      const next = PROVISIONING_STEPS[idx + 1] ?? PROVISIONING_STEPS[0]; // ACCEPTED/UNKNOWN -> first step
      return t(next, 'provisioning', next, 'CLUSTER_PROVISIONING_STEP_COMPLETED');
    }
    case 'provisioned':
      // A provisioned cluster is started unless the client asked for nothing (it always did: create asks for starting).
      return t('starting', 'starting', ps, 'CLUSTER_STARTING');
    case 'starting':
      return t('started', 'started', ps, 'CLUSTER_STARTED', true);
    case 'stopping':
      return t('stopped', 'stopped', ps, 'CLUSTER_STOPPED', true);
    case 'started':
      if (c.desiredStatus === 'stopping') return t('stopping', 'stopping', ps, 'CLUSTER_STOPPING');
      if (c.version !== c.observedVersion) return { kind: 'upgrade', step: 'upgrade', toVersion: c.version, auditType: 'CLUSTER_UPGRADED' };
      if (generationPending(c)) return UPDATE;
      return null;
    case 'stopped':
      if (c.desiredStatus === 'starting') return t('starting', 'starting', ps, 'CLUSTER_STARTING');
      // A new version of a stopped cluster is applied once it runs again (and the other changes with it).
      if (c.version !== c.observedVersion) return { kind: 'idle' };
      if (generationPending(c)) return UPDATE;
      return null;
  }
  return null;
}

/** The provisionStatus value the control plane exists from (its version is observed from then on). */
export function controlPlaneExists(ps: ProvisionStatus): boolean {
  return PROVISIONING_STEPS.indexOf(ps) >= PROVISIONING_STEPS.indexOf('CLUSTER_PROVISIONED');
}

/** What a completed step changes in the state (the reconciler writes it to the row). */
export interface StateChange {
  status: ClusterStatus;
  provisionStatus: ProvisionStatus;
  desiredStatus: ClusterDesiredStatus | null;
  observedVersion: string | null;
  /** Always cleared: a completed step leaves any fault behind. */
  statusBeforeFault: null;
  /** The cluster is gone: set deleted_at and soft-delete its tenant. */
  deleted: boolean;
}

/** The state after a successful driver step. */
export function afterStep(c: StateView, step: Transition | UpgradeStep | UpdateStep): StateChange {
  if (step.kind === 'upgrade' || step.kind === 'update') {
    return {
      status: c.status,
      provisionStatus: c.provisionStatus,
      desiredStatus: c.desiredStatus,
      observedVersion: step.kind === 'upgrade' ? step.toVersion : c.observedVersion,
      statusBeforeFault: null,
      deleted: false,
    };
  }
  const deleted = step.to.status === 'deleted';
  return {
    status: step.to.status,
    provisionStatus: step.to.provisionStatus,
    desiredStatus: step.fulfilsDesired || deleted ? null : c.desiredStatus,
    observedVersion: !c.observedVersion && controlPlaneExists(step.to.provisionStatus) ? c.version : c.observedVersion,
    statusBeforeFault: null,
    deleted,
  };
}

/** A failed step or a lost observation: `unknown`, remembering where to come back to. */
export function afterFailure(c: StateView): { status: ClusterStatus; statusBeforeFault: ClusterStatus } {
  // A cluster already in unknown keeps the status it remembered.
  return { status: 'unknown', statusBeforeFault: c.status === 'unknown' ? (c.statusBeforeFault ?? 'provisioning') : c.status };
}

/** A successful observation of a cluster in `unknown`: back to the remembered status. */
export function afterRecovery(c: StateView, observed?: ClusterStatus): { status: ClusterStatus; statusBeforeFault: null } {
  return { status: c.statusBeforeFault ?? observed ?? 'provisioning', statusBeforeFault: null };
}

// ------------------------------------------------------------------------------------ versions

/**
 * Upgrade targets of docs/conventions.md ("Catalog"): available versions that are newer patches of the same minor or any
 * patch of the next minor. Downgrade targets: available older patches of the same minor.
 */
export function upgradeTargets(current: string, available: readonly string[]): string[] {
  const cur = semver.parse(current);
  if (!cur) return [];
  return available
    .filter((v) => {
      const p = semver.parse(v);
      if (!p || p.major !== cur.major) return false;
      if (p.minor === cur.minor) return semver.gt(p, cur);
      return p.minor === cur.minor + 1;
    })
    .sort(semver.compare);
}

export function downgradeTargets(current: string, available: readonly string[]): string[] {
  const cur = semver.parse(current);
  if (!cur) return [];
  return available
    .filter((v) => {
      const p = semver.parse(v);
      return !!p && p.major === cur.major && p.minor === cur.minor && semver.lt(p, cur);
    })
    .sort(semver.compare);
}

/** Backoff after a failed step: 5 s doubling per attempt, at most 5 minutes. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(5 * 2 ** Math.max(0, attempts - 1), 300);
}
