import type { ClusterObservation, DesiredClusterSpec, DriverOperationKind } from '../cluster-drivers/driver-contract';
import type { ClusterStatus } from '../clusters/cluster.entity';
import type { ReconcileStep } from '../clusters/cluster-state-machine';

/**
 * How the reconciler's steps (the state machine's, which the interface shows as status and provisionStatus) map to
 * the driver contract, as pure functions: which call a step makes and when a driver's observation says the step is
 * done (docs/adr/0151-reconciler-on-the-driver-contract.md). Every call carries the whole desired spec; a step is
 * done when the observation shows its milestone, so a driver that works asynchronously is asked again until it does.
 */

/** A step that calls the driver (not an idle wait, not a recovery). */
export type CallingStep = Exclude<ReconcileStep, { kind: 'idle' | 'recover' }>;

const CREATE_STEPS = new Set(['provisioning', 'OIDC_PROVISIONED', 'CLUSTER_PROVISIONED', 'INITIAL_NODE_POOLS_PROVISIONED', 'INITIAL_ADDONS_PROVISIONED', 'DONE', 'provisioned']);

/** The contract's operation kind of a step (informative for the driver; the spec says what is wanted). */
export function operationKind(step: CallingStep): DriverOperationKind {
  if (step.kind === 'upgrade') return 'upgrade';
  if (step.kind === 'update') return 'update';
  if (CREATE_STEPS.has(step.step)) return 'create';
  if (step.step === 'starting' || step.step === 'started') return 'start';
  if (step.step === 'stopping' || step.step === 'stopped') return 'stop';
  return 'delete';
}

/** Whether the step removes the cluster (a `delete` call) rather than applies the spec. */
export const isDeleteStep = (step: CallingStep): boolean => step.kind === 'transition' && (step.step === 'deleting' || step.step === 'deleted');

/** The observation reports generation `generation` (or a newer one) fully applied. */
export const applied = (o: ClusterObservation, generation: number): boolean => o.observedGeneration !== null && o.observedGeneration >= generation;

const controlPlaneReady = (o: ClusterObservation) => o.exists && !!o.controlPlane?.ready && !!o.controlPlane.endpoint;

/** Every pool the driver provisions (not bring-your-own-node pools) is there and ready. */
function poolsReady(o: ClusterObservation, spec: DesiredClusterSpec): boolean {
  const seen = new Map(o.nodePools.map((p) => [p.identity, p]));
  return spec.nodePools.filter((p) => !p.selfManaged).every((p) => seen.get(p.identity)?.ready === true);
}

/** Every enabled add-on is there and ready. */
function addonsReady(o: ClusterObservation, spec: DesiredClusterSpec): boolean {
  const seen = new Map(o.addons.map((a) => [a.name, a]));
  return spec.addons.filter((a) => a.enabled).every((a) => seen.get(a.name)?.ready === true);
}

/**
 * Whether the observation (answering a call with `spec`) shows the step's milestone:
 * - `provisioning`, `OIDC_PROVISIONED`: the driver has the cluster (`exists`);
 * - `CLUSTER_PROVISIONED`: the control plane is ready with its endpoint;
 * - `INITIAL_NODE_POOLS_PROVISIONED`, `INITIAL_ADDONS_PROVISIONED`: and every pool, then every enabled add-on, ready;
 * - `DONE`, `provisioned`, `update`: the spec's generation is applied; `upgrade`: and the control plane runs its version;
 * - `starting` / `stopping`: the driver is starting (or runs) / stopping (or stopped) the machines;
 *   `started` / `stopped`: it runs / stopped them with the generation applied;
 * - `deleting`: the driver is deleting (or has deleted) the cluster; `deleted`: it does not exist any more.
 */
export function stepReached(step: CallingStep, o: ClusterObservation, spec: DesiredClusterSpec): boolean {
  if (o.error) return false;
  const gen = spec.generation;
  switch (step.kind) {
    case 'upgrade':
      return o.exists && applied(o, gen) && o.version === spec.version;
    case 'update':
      return o.exists && applied(o, gen);
    case 'transition':
      break;
  }
  switch (step.step) {
    case 'provisioning':
    case 'OIDC_PROVISIONED':
      return o.exists;
    case 'CLUSTER_PROVISIONED':
      return controlPlaneReady(o);
    case 'INITIAL_NODE_POOLS_PROVISIONED':
      return controlPlaneReady(o) && poolsReady(o, spec);
    case 'INITIAL_ADDONS_PROVISIONED':
      return controlPlaneReady(o) && poolsReady(o, spec) && addonsReady(o, spec);
    case 'DONE':
    case 'provisioned':
      return o.exists && applied(o, gen);
    case 'starting':
      return o.exists && (o.state === 'starting' || o.state === 'running');
    case 'started':
      return o.exists && o.state === 'running' && applied(o, gen);
    case 'stopping':
      return o.exists && (o.state === 'stopping' || o.state === 'stopped');
    case 'stopped':
      return o.exists && o.state === 'stopped' && applied(o, gen);
    case 'deleting':
      return !o.exists || o.state === 'deleting' || o.state === 'absent';
    case 'deleted':
      return !o.exists;
  }
  return false;
}

/** The cluster status an observation of a settled cluster reports (null: none of the settled ones). */
export function observedStatus(o: ClusterObservation): ClusterStatus | null {
  if (!o.exists) return null;
  switch (o.state) {
    case 'running':
    case 'updating':
      return 'started';
    case 'stopped':
      return 'stopped';
    case 'starting':
      return 'starting';
    case 'stopping':
      return 'stopping';
    case 'creating':
      return 'provisioning';
    case 'deleting':
      return 'deleting';
    default:
      return null;
  }
}

/** A healthy observation of an existing cluster: no error, the cluster exists and is not failed. */
export const healthy = (o: ClusterObservation): boolean => !o.error && o.exists && o.state !== 'failed' && o.state !== 'absent';
