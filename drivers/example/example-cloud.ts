import type {
  ApplyRequest,
  ClusterObservation,
  DeleteRequest,
  DesiredClusterSpec,
  DesiredNodePool,
  DriverError,
  ObservedState,
} from '../../src/cluster-drivers/driver-contract';

/**
 * A slow cloud in memory (and in its state file): the example driver's infrastructure. Work is asynchronous: a call
 * records what is wanted and answers at once; every tick moves each cluster one unit further (the control plane
 * comes up in CONTROL_PLANE_TICKS, pools gain or lose one node per tick, an upgrade replaces one node per pool per
 * tick, an add-on is ready one tick after it is enabled). Only the contract's types are shared with the service.
 */

export const CONTROL_PLANE_TICKS = 2;
/** Idempotency keys remembered per cluster (older ones are forgotten; their generations are stale anyway). */
const KEYS_KEPT = 50;

interface PoolState {
  identity: string;
  name: string;
  readyNodes: number;
  /** Nodes on `version` (an upgrade replaces them one by one). */
  upgradedNodes: number;
  version: string;
  /** While an upgrade rolls: the version of the nodes not replaced yet. */
  rollingFrom: string | null;
}

interface ClusterState {
  identity: string;
  /** The desired spec of `targetGeneration` (the newest accepted). */
  spec: DesiredClusterSpec;
  targetGeneration: number;
  /** The newest generation fully brought about. */
  observedGeneration: number | null;
  deleting: boolean;
  controlPlaneTicks: number;
  controlPlaneVersion: string | null;
  pools: PoolState[];
  addons: Record<string, boolean>;
  /** A terminal error of the spec of `targetGeneration`, shown until the spec changes. */
  error: DriverError | null;
  /** The idempotency key of the call that was refused with `error`. */
  errorKey: string | null;
  keys: string[];
}

export interface CloudState {
  clusters: Record<string, ClusterState>;
  /** Delete keys of clusters that are gone: a repeated delete answers `absent`. */
  deleted: string[];
}

export interface CloudOptions {
  /** For the conformance kit's negative test: every call acts, whatever its idempotency key. */
  ignoreIdempotencyKeys?: boolean;
}

/** A spec the cloud refuses: node types named `invalid…` do not exist (the example's terminal error). */
function specError(spec: DesiredClusterSpec): DriverError | null {
  const bad = spec.nodePools.find((p) => !p.selfManaged && p.nodeType.name.startsWith('invalid'));
  return bad ? { class: 'terminal', code: 'InvalidNodeType', message: `Node type '${bad.nodeType.name}' of pool '${bad.name}' does not exist in ${spec.region}` } : null;
}

const wantedNodes = (spec: DesiredClusterSpec, p: DesiredNodePool, deleting: boolean) =>
  deleting || spec.desiredState === 'stopped' || p.selfManaged ? 0 : p.minSize;

export class ExampleCloud {
  constructor(
    private readonly state: CloudState,
    private readonly options: CloudOptions = {},
  ) {}

  static empty(): CloudState {
    return { clusters: {}, deleted: [] };
  }

  get snapshot(): CloudState {
    return this.state;
  }

  /** Accepts the spec of a generation (unless its key was seen or it is older); answers the observation. */
  apply(req: ApplyRequest): { observation: ClusterObservation; error: DriverError | null; changed: boolean } {
    const id = req.cluster.identity;
    const existing = this.state.clusters[id];
    if (existing && !this.options.ignoreIdempotencyKeys && existing.keys.includes(req.idempotencyKey)) {
      return { observation: this.observe(id), error: existing.errorKey === req.idempotencyKey ? existing.error : null, changed: false };
    }
    if (existing && req.cluster.generation < existing.targetGeneration) {
      return { observation: this.observe(id), error: null, changed: false };
    }
    const error = specError(req.cluster);
    const cluster: ClusterState = existing ?? {
      identity: id,
      spec: req.cluster,
      targetGeneration: req.cluster.generation,
      observedGeneration: null,
      deleting: false,
      controlPlaneTicks: 0,
      controlPlaneVersion: null,
      pools: [],
      addons: {},
      error: null,
      errorKey: null,
      keys: [],
    };
    cluster.keys = [...cluster.keys, req.idempotencyKey].slice(-KEYS_KEPT);
    if (error) {
      // Refused: nothing of this spec is acted on; the error stays until a newer spec comes.
      cluster.error = error;
      cluster.errorKey = req.idempotencyKey;
      this.state.clusters[id] = cluster;
      return { observation: this.observe(id), error, changed: true };
    }
    cluster.spec = req.cluster;
    cluster.targetGeneration = req.cluster.generation;
    cluster.error = null;
    cluster.errorKey = null;
    cluster.deleting = false;
    this.state.clusters[id] = cluster;
    return { observation: this.observe(id), error: null, changed: true };
  }

  delete(req: DeleteRequest): { observation: ClusterObservation; changed: boolean } {
    const id = req.cluster.identity;
    const cluster = this.state.clusters[id];
    if (!cluster) return { observation: absent(), changed: false };
    if (cluster.deleting) return { observation: this.observe(id), changed: false };
    cluster.deleting = true;
    cluster.keys = [...cluster.keys, req.idempotencyKey].slice(-KEYS_KEPT);
    return { observation: this.observe(id), changed: true };
  }

  observe(id: string): ClusterObservation {
    const c = this.state.clusters[id];
    if (!c) return absent();
    const spec = c.spec;
    const converged = this.converged(c);
    const upToDate = converged && !c.error;
    const controlPlaneReady = c.controlPlaneTicks >= CONTROL_PLANE_TICKS;
    let state: ObservedState;
    if (c.deleting) state = 'deleting';
    else if (c.error && c.observedGeneration === null) state = 'failed';
    else if (c.observedGeneration === null && !upToDate) state = 'creating';
    else if (spec.desiredState === 'stopped') state = upToDate ? 'stopped' : 'stopping';
    else if (c.pools.every((p) => p.readyNodes === 0) && spec.nodePools.some((p) => wantedNodes(spec, p, false) > 0) && c.observedGeneration !== null && !upToDate) state = 'starting';
    else state = upToDate ? 'running' : 'updating';
    const desiredPools = new Map(spec.nodePools.map((p) => [p.identity, p]));
    return {
      exists: true,
      observedGeneration: c.observedGeneration,
      state,
      version: c.controlPlaneVersion,
      controlPlane: { ready: controlPlaneReady, endpoint: controlPlaneReady ? `https://${spec.slug}-${id.slice(0, 8)}.example-driver.invalid:6443` : null, caCertificate: null },
      nodePools: c.pools.map((p) => {
        const desired = desiredPools.get(p.identity);
        const want = desired ? wantedNodes(spec, desired, c.deleting) : 0;
        return {
          identity: p.identity,
          name: p.name,
          desiredNodes: want,
          readyNodes: p.readyNodes,
          version: p.rollingFrom ?? p.version,
          ready: !!desired && p.readyNodes === want && p.version === spec.version && p.rollingFrom === null,
        };
      }),
      addons: spec.addons.filter((a) => a.enabled).map((a) => ({ name: a.name, ready: c.addons[a.name] === true })),
      conditions: [
        {
          type: 'Ready',
          status: upToDate ? 'True' : 'False',
          reason: c.error ? c.error.code : upToDate ? 'Converged' : 'Converging',
          message: c.error ? c.error.message : upToDate ? `Generation ${c.targetGeneration} is in place` : `Working towards generation ${c.targetGeneration}`,
        },
      ],
      error: c.error,
      retryAfterSeconds: upToDate ? null : 1,
    };
  }

  /** One unit of work on every cluster; answers whether anything changed. */
  tick(): boolean {
    let changed = false;
    for (const c of Object.values(this.state.clusters)) changed = this.advance(c) || changed;
    return changed;
  }

  private advance(c: ClusterState): boolean {
    const spec = c.spec;
    if (c.deleting) {
      const withNodes = c.pools.filter((p) => p.readyNodes > 0);
      if (withNodes.length) {
        for (const p of withNodes) p.readyNodes--;
        return true;
      }
      delete this.state.clusters[c.identity];
      this.state.deleted = [...this.state.deleted, c.identity].slice(-1000);
      return true;
    }
    if (c.error && c.observedGeneration === null) return false;
    let changed = false;
    if (c.controlPlaneTicks < CONTROL_PLANE_TICKS) {
      c.controlPlaneTicks++;
      if (c.controlPlaneTicks === CONTROL_PLANE_TICKS) c.controlPlaneVersion = spec.version;
      return true;
    }
    if (c.controlPlaneVersion !== spec.version) {
      c.controlPlaneVersion = spec.version;
      changed = true;
    }
    const desired = new Map(spec.nodePools.map((p) => [p.identity, p]));
    for (const p of spec.nodePools) {
      if (!c.pools.some((x) => x.identity === p.identity)) {
        c.pools.push({ identity: p.identity, name: p.name, readyNodes: 0, upgradedNodes: 0, version: spec.version, rollingFrom: null });
        changed = true;
      }
    }
    for (const pool of [...c.pools]) {
      const want = desired.get(pool.identity);
      if (want) pool.name = want.name;
      const target = want ? wantedNodes(spec, want, false) : 0;
      if (pool.version !== spec.version) {
        // An upgrade: the nodes are replaced one by one, from the next tick on.
        pool.rollingFrom = pool.readyNodes > 0 ? (pool.rollingFrom ?? pool.version) : null;
        pool.version = spec.version;
        pool.upgradedNodes = 0;
        changed = true;
        continue;
      }
      if (pool.rollingFrom !== null && pool.upgradedNodes < pool.readyNodes) {
        pool.upgradedNodes++;
        if (pool.upgradedNodes >= pool.readyNodes) pool.rollingFrom = null;
        changed = true;
      } else if (pool.rollingFrom !== null) {
        pool.rollingFrom = null;
        changed = true;
      } else if (pool.readyNodes < target) {
        pool.readyNodes++;
        pool.upgradedNodes = pool.readyNodes;
        changed = true;
      } else if (pool.readyNodes > target) {
        pool.readyNodes--;
        pool.upgradedNodes = pool.readyNodes;
        changed = true;
      } else if (!want) {
        c.pools.splice(c.pools.indexOf(pool), 1);
        changed = true;
      }
    }
    for (const a of spec.addons) {
      if ((c.addons[a.name] === true) !== a.enabled) {
        c.addons[a.name] = a.enabled;
        changed = true;
      }
    }
    if (!changed && !c.error && c.observedGeneration !== c.targetGeneration) {
      c.observedGeneration = c.targetGeneration;
      changed = true;
    }
    return changed;
  }

  private converged(c: ClusterState): boolean {
    return !c.deleting && c.observedGeneration === c.targetGeneration;
  }
}

function absent(): ClusterObservation {
  return {
    exists: false,
    observedGeneration: null,
    state: 'absent',
    version: null,
    controlPlane: null,
    nodePools: [],
    addons: [],
    conditions: [],
    error: null,
    retryAfterSeconds: null,
  };
}
