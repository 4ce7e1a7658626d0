/**
 * The contract between the reconciler and a cluster driver, protocol version v1 (docs/drivers.md).
 *
 * A driver brings the infrastructure of one cluster to a desired spec and reports what it observes, the way
 * Crossplane's external clients and Cluster API's providers do: every call carries the whole desired spec of one
 * generation (level-triggered: a driver never needs an earlier call to understand this one), and every answer is
 * an observation of the actual state. The same types are the JSON bodies of the out-of-process HTTP protocol
 * (`/v1/...`), so nothing here may hold a class, a Date or a function: plain JSON only.
 *
 * Pure types and constants: no Nest, no database, no import from another module.
 */

/** The protocol version of these types; the HTTP protocol's path prefix is `/${DRIVER_PROTOCOL_VERSION}`. */
export const DRIVER_PROTOCOL_VERSION = 'v1';

/** A node type as the catalog describes it. */
export interface DriverNodeType {
  /** The provider's name of the type (e.g. `m5.large`); the node pool's `nodeSize`. */
  name: string;
  cpu: number | null;
  /** Memory in MiB. */
  memoryMb: number | null;
}

export interface DriverTaint {
  key: string;
  value: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

/** One node pool of the desired spec. */
export interface DesiredNodePool {
  /** Stable identity of the pool (uuid): the key a driver tracks it by (names can change). */
  identity: string;
  name: string;
  /** The cluster generation of the pool's last change. */
  generation: number;
  nodeType: DriverNodeType;
  /** Zone of the pool, or null for the cluster's zones. */
  availabilityZone: string | null;
  autoScaling: boolean;
  /** With autoScaling the autoscaler's bounds; without it the pool runs `minSize` nodes. */
  minSize: number;
  maxSize: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  taints: DriverTaint[];
  upgradeStrategy: 'REPLACE' | 'INPLACE' | 'INPLACE_WITHOUT_DRAIN' | 'REPLACE_MINOR_INPLACE_PATCH' | 'REPLACE_MINOR_INPLACE_PATCH_WITHOUT_DRAIN';
  enableNodeAutoReplacement: boolean;
  enableNodeReboots: boolean;
  /**
   * True for a bring-your-own-node pool: the customer's machines join it themselves; a driver provisions no
   * machines for it (it may still configure the control plane for them).
   */
  selfManaged: boolean;
}

export interface DesiredAddon {
  /** The catalog's add-on name (e.g. `cert-manager`). */
  name: string;
  enabled: boolean;
  /** The add-on's custom values as the user set them. */
  settings: Record<string, string>;
}

/**
 * The whole desired state of one cluster at one generation: everything a user can change about its
 * infrastructure, plus the names a driver needs to label what it creates.
 */
export interface DesiredClusterSpec {
  /** Stable identity (uuid): the key a driver tracks the cluster by. */
  identity: string;
  /** Bumped by every change of this spec; a driver reports the newest generation it brought about. */
  generation: number;
  slug: string;
  name: string;
  organisation: { identity: string; slug: string };
  environment: { identity: string; slug: string; type: string };
  cloudProvider: string;
  /** The cloud profile of the cluster's cloud account (e.g. a provider's partition or sovereign region set). */
  cloudProfile: string | null;
  region: string;
  /** The region's availability zones the cluster may use (all of them with multiAvailabilityZones). */
  zones: string[];
  /** Kubernetes version of the control plane (and of the pools, per their upgrade strategy). */
  version: string;
  /** Whether the cluster's machines run. Deletion is its own call (`delete`). */
  desiredState: 'running' | 'stopped';
  highAvailability: boolean;
  multiAvailabilityZones: boolean;
  natGateway: boolean;
  networkEncryption: boolean;
  cni: string;
  podSubnet: string | null;
  serviceSubnet: string | null;
  /** Addresses allowed to reach the API server; empty: everyone. */
  ipAllowList: { cidr: string; description: string }[];
  podSecurityStandardsProfile: 'privileged' | 'baseline' | 'restricted' | null;
  /** Cluster autoscaler flags by name (e.g. `scale-down-unneeded-time`). */
  clusterAutoscaler: Record<string, string | number>;
  /** How the API server authenticates users; null: no OIDC. */
  oidc: { issuerUrl: string; clientId: string; usernameClaim: string; groupsClaim: string } | null;
  addons: DesiredAddon[];
  nodePools: DesiredNodePool[];
}

/** The cloud account a cluster runs in, with its credentials decrypted for this call only. */
export interface DriverCloudAccount {
  identity: string;
  name: string;
  cloudProvider: string;
  cloudProfile: string | null;
  /** Account metadata (e.g. project or subscription ids). */
  metadata: Record<string, string>;
  /**
   * The primary credentials, decrypted. A driver must never log, store in clear or echo them; the service
   * puts them nowhere but the request.
   */
  credentials: { identity: string; name: string; values: Record<string, string> } | null;
}

export const DRIVER_OPERATIONS = ['create', 'update', 'start', 'stop', 'upgrade', 'delete'] as const;
/** Why the reconciler calls: informative (logs, timeouts); the spec alone says what is wanted. */
export type DriverOperationKind = (typeof DRIVER_OPERATIONS)[number];

export interface DriverOperation {
  kind: DriverOperationKind;
  /** The reconciler's step (a provisionStatus such as `CLUSTER_PROVISIONED`, a status such as `starting`, `upgrade`, `update`). */
  step: string;
  /** When the reconciler started this step (ISO 8601); the same on every call of the step. */
  startedAt: string;
}

/**
 * Create or update the cluster to `cluster`. Idempotent per `idempotencyKey`: a repeated key has no second effect;
 * a call whose generation is older than one the driver already acted on changes nothing and answers the current
 * observation. Long work is asynchronous: the driver answers at once with what it observes, and the reconciler
 * asks again.
 */
export interface ApplyRequest {
  /** `${identity}:${generation}`. */
  idempotencyKey: string;
  operation: DriverOperation;
  cluster: DesiredClusterSpec;
  cloudAccount: DriverCloudAccount | null;
}

/** Remove the cluster and everything the driver made for it. Idempotent; `exists: false` once it is gone. */
export interface DeleteRequest {
  /** `${identity}:${generation}:delete`. */
  idempotencyKey: string;
  operation: DriverOperation;
  cluster: DesiredClusterSpec;
  cloudAccount: DriverCloudAccount | null;
}

/** What is there now; changes nothing. */
export interface ObserveRequest {
  cluster: DesiredClusterSpec;
  cloudAccount: DriverCloudAccount | null;
}

export const DRIVER_ERROR_CLASSES = ['retryable', 'terminal'] as const;
export type DriverErrorClass = (typeof DRIVER_ERROR_CLASSES)[number];

/**
 * A driver's error. `retryable`: transient (throttling, a provider's 5xx, a timeout); the reconciler tries again
 * with backoff. `terminal`: the spec cannot be brought about as it is (an unknown node type, refused credentials,
 * a quota the account lacks); the cluster shows Degraded with `message`, and the reconciler does not try again
 * until the spec changes (or after a long backoff). `message` is shown to the cluster's users: no secrets in it.
 */
export interface DriverError {
  class: DriverErrorClass;
  /** Machine-readable, e.g. `InvalidNodeType`, `QuotaExceeded`, `Throttled`. */
  code: string;
  message: string;
}

export const OBSERVED_STATES = ['creating', 'running', 'updating', 'stopping', 'stopped', 'starting', 'deleting', 'absent', 'failed'] as const;
export type ObservedState = (typeof OBSERVED_STATES)[number];

export interface ObservedNodePool {
  identity: string;
  name: string;
  /** Nodes the pool is meant to have now. */
  desiredNodes: number;
  /** Nodes that are up and ready. */
  readyNodes: number;
  /** Kubernetes version of the pool's nodes (the oldest, while they roll). */
  version: string | null;
  /** The pool is as its spec of `observedGeneration` asks. */
  ready: boolean;
}

export interface ObservedCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

/** What a driver observes of one cluster. */
export interface ClusterObservation {
  exists: boolean;
  /** The newest generation the infrastructure fully matches; null when none yet (or it does not exist). */
  observedGeneration: number | null;
  state: ObservedState;
  /** Kubernetes version of the control plane. */
  version: string | null;
  controlPlane: { ready: boolean; endpoint: string | null; caCertificate: string | null } | null;
  nodePools: ObservedNodePool[];
  addons: { name: string; ready: boolean }[];
  /** The driver's own conditions (e.g. from Cluster API objects), shown as they are. */
  conditions: ObservedCondition[];
  error: DriverError | null;
  /** Ask again no sooner than this (a hint; null: the reconciler decides). */
  retryAfterSeconds: number | null;
}

export interface DriverCapabilities {
  protocolVersion: typeof DRIVER_PROTOCOL_VERSION;
  /** The driver's own name and version, for people. */
  driver: { name: string; version: string };
  /** Cloud providers (and optionally profiles) it can serve. */
  cloudProviders: string[];
  /** Optional features: `stopStart`, `upgrade`, `nodePoolScaling`, `addons`, `faultInjection`, ... */
  features: string[];
}

/**
 * The port. Calls are made outside any database transaction while the reconciler holds a lease on the cluster;
 * a call is given up after half the lease (and counts as a retryable error). Implementations: the in-process
 * simulated driver and the HTTP driver for out-of-process drivers.
 */
export interface ClusterDriver {
  readonly name: string;
  capabilities(): Promise<DriverCapabilities>;
  apply(request: ApplyRequest): Promise<ClusterObservation>;
  delete(request: DeleteRequest): Promise<ClusterObservation>;
  observe(request: ObserveRequest): Promise<ClusterObservation>;
  /** Many clusters in one call (a provider lists its clusters at once); answers by cluster identity, a missing one is not reachable. */
  observeMany(requests: ObserveRequest[]): Promise<Map<string, ClusterObservation>>;
}

/** The idempotency key of an apply of `generation`. */
export const applyKey = (identity: string, generation: number): string => `${identity}:${generation}`;
/** The idempotency key of the delete of a cluster at `generation`. */
export const deleteKey = (identity: string, generation: number): string => `${identity}:${generation}:delete`;

/** The body of `POST /v1/observe-many` (HTTP protocol). */
export interface ObserveManyRequest {
  clusters: ObserveRequest[];
}

/** The answer of `POST /v1/observe-many`: observations by cluster identity; a cluster left out is not reachable now. */
export interface ObserveManyResponse {
  observations: Record<string, ClusterObservation>;
}

/**
 * The body of a driver's non-2xx answer when it knows why (HTTP protocol): its own error, handed to the reconciler
 * as it is. Any other non-2xx answer, a lost connection or a timeout is a retryable error of the service's making.
 */
export interface DriverErrorResponse {
  error: DriverError;
}
