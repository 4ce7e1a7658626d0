import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import {
  DRIVER_PROTOCOL_VERSION,
  type ApplyRequest,
  type ClusterDriver,
  type ClusterObservation,
  type DeleteRequest,
  type DesiredClusterSpec,
  type DriverCapabilities,
  type DriverOperation,
  type ObserveRequest,
} from '../cluster-drivers/driver-contract';
import { byonStepIsImmediate } from '../clusters/byon/byon-rules';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { createSelfSignedCa } from './self-signed-ca';

/** Simulated control planes answer under this domain (nothing listens there). */
export const SIMULATED_API_DOMAIN = 'clusters.example.net';

const LOST_CONTACT = 'Simulated driver lost contact with the cluster';

/** How far the simulated infrastructure of a cluster is, as an observation shows it. */
interface Progress {
  exists: boolean;
  state: ClusterObservation['state'];
  controlPlane?: boolean;
  pools?: boolean;
  addons?: boolean;
  /** The spec's generation is applied. */
  applied?: boolean;
}

const ABSENT: Progress = { exists: false, state: 'absent' };
const KNOWN: Progress = { exists: true, state: 'creating' };
const CONTROL_PLANE: Progress = { ...KNOWN, controlPlane: true };
const POOLS: Progress = { ...CONTROL_PLANE, pools: true };
const ADDONS: Progress = { ...POOLS, addons: true };
const converged = (spec: DesiredClusterSpec, applied = true): Progress => ({
  ...ADDONS,
  state: spec.desiredState === 'stopped' ? 'stopped' : 'running',
  applied,
});

/** What the infrastructure looks like before a step's work is done, and after (step names of the state machine). */
function progress(spec: DesiredClusterSpec, step: string, done: boolean): Progress {
  const at = (state: ClusterObservation['state'], applied = false): Progress => ({ ...ADDONS, state, applied });
  switch (step) {
    case 'provisioning':
    case 'OIDC_PROVISIONED':
      return done ? KNOWN : ABSENT;
    case 'CLUSTER_PROVISIONED':
      return done ? CONTROL_PLANE : KNOWN;
    case 'INITIAL_NODE_POOLS_PROVISIONED':
      return done ? POOLS : CONTROL_PLANE;
    case 'INITIAL_ADDONS_PROVISIONED':
      return done ? ADDONS : POOLS;
    case 'DONE':
    case 'provisioned':
      return done ? converged(spec) : ADDONS;
    case 'starting':
      return done ? at('starting') : at('stopped');
    case 'started':
      return done ? at('running', true) : at('starting');
    case 'stopping':
      return done ? at('stopping') : at('running');
    case 'stopped':
      return done ? at('stopped', true) : at('stopping');
    case 'deleting':
      return done ? at('deleting') : converged(spec, false);
    case 'deleted':
      return done ? ABSENT : at('deleting');
    default:
      // upgrade, update
      return converged(spec, done);
  }
}

/**
 * The default driver (`CLUSTER_DRIVER=simulated`), in process, behind the driver contract like any other. It keeps no
 * state of its own: what it answers follows from the request (the spec and the operation's step and start time) and
 * the clock, so a restart loses nothing. A step's work completes once PROVISIONING_STEP_SECONDS have passed since
 * the reconciler started the step (`operation.startedAt`); until then it answers the infrastructure as it was before
 * the step (with `retryAfterSeconds`), then as the step leaves it. A `simulated_driver_faults` row for the cluster
 * and step makes the step fail with a retryable error (`remaining` times); step `observe` makes observations fail
 * (in a batch observation too, per cluster). Faults live in the database so every replica sees them. Every call (a
 * batch observation is one call) takes SIMULATED_DRIVER_LATENCY_MS, like a provider's API would. The
 * CLUSTER_PROVISIONED step reports a simulated API endpoint and a real self-signed CA; a bring-your-own-node cluster
 * completes the steps after it at once. Credentials are received and not used.
 */
@Injectable()
export class SimulatedClusterDriver implements ClusterDriver {
  readonly name = 'simulated';

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  capabilities(): Promise<DriverCapabilities> {
    return Promise.resolve({
      protocolVersion: DRIVER_PROTOCOL_VERSION,
      driver: { name: 'simulated', version: '1' },
      cloudProviders: [],
      features: ['stopStart', 'upgrade', 'nodePoolScaling', 'addons', 'faultInjection'],
    });
  }

  apply(request: ApplyRequest): Promise<ClusterObservation> {
    return this.step(request.cluster, request.operation);
  }

  delete(request: DeleteRequest): Promise<ClusterObservation> {
    return this.step(request.cluster, request.operation);
  }

  async observe(request: ObserveRequest): Promise<ClusterObservation> {
    const [faulted] = await Promise.all([this.consumeFault(request.cluster.identity, 'observe'), this.latency()]);
    return faulted ? this.lost(request.cluster) : this.observation(request.cluster, converged(request.cluster), null);
  }

  async observeMany(requests: ObserveRequest[]): Promise<Map<string, ClusterObservation>> {
    const answer = new Map<string, ClusterObservation>();
    if (!requests.length) return answer;
    await this.latency();
    // One matching fault per cluster is consumed, in one statement.
    const hits: { identity: string }[] = await this.txHost.tx.query(
      `WITH hit AS (
         UPDATE simulated_driver_faults f SET remaining = f.remaining - 1
          WHERE f.id IN (SELECT min(f2.id) FROM simulated_driver_faults f2 JOIN clusters c ON c.id = f2.cluster_id
                          WHERE c.identity = ANY($1::uuid[]) AND f2.step = 'observe' AND f2.remaining > 0 GROUP BY f2.cluster_id)
            AND f.remaining > 0
          RETURNING f.cluster_id)
       SELECT c.identity FROM hit JOIN clusters c ON c.id = hit.cluster_id`,
      [requests.map((r) => r.cluster.identity)],
    );
    const lost = new Set(hits.map((h) => h.identity));
    for (const { cluster } of requests) {
      answer.set(cluster.identity, lost.has(cluster.identity) ? this.lost(cluster) : this.observation(cluster, converged(cluster), null));
    }
    return answer;
  }

  private async step(spec: DesiredClusterSpec, op: DriverOperation): Promise<ClusterObservation> {
    const now = this.clock.now();
    const readyAt = new Date(new Date(op.startedAt).getTime() + this.config.PROVISIONING_STEP_SECONDS * 1000);
    if (readyAt.getTime() > now.getTime() && !byonStepIsImmediate({ cloudProvider: spec.cloudProvider }, op.step)) {
      await this.latency();
      const waiting = this.observation(spec, progress(spec, op.step, false), null);
      return { ...waiting, retryAfterSeconds: Math.max(1, Math.ceil((readyAt.getTime() - now.getTime()) / 1000)) };
    }
    // The fault lookup is this simulation's own bookkeeping, not part of a provider's call: it runs during the
    // latency, so a call takes SIMULATED_DRIVER_LATENCY_MS, not that plus a database round trip.
    const [faulted] = await Promise.all([this.consumeFault(spec.identity, op.step), this.latency()]);
    if (faulted) {
      return {
        ...this.observation(spec, progress(spec, op.step, false), null),
        error: { class: 'retryable', code: 'SimulatedFailure', message: `Simulated driver failure in step ${op.step}` },
      };
    }
    const ca = op.step === 'CLUSTER_PROVISIONED' ? createSelfSignedCa(`kubernetes-ca ${this.host(spec)}`, now).certificatePem : null;
    return this.observation(spec, progress(spec, op.step, true), ca);
  }

  private observation(spec: DesiredClusterSpec, p: Progress, caCertificate: string | null): ClusterObservation {
    const running = p.state === 'running' || p.state === 'starting' || p.state === 'creating' || p.state === 'updating';
    return {
      exists: p.exists,
      observedGeneration: p.applied ? spec.generation : null,
      state: p.state,
      version: p.controlPlane ? spec.version : null,
      controlPlane: p.controlPlane ? { ready: true, endpoint: `https://${this.host(spec)}:6443`, caCertificate } : null,
      nodePools: p.pools
        ? spec.nodePools
            .filter((pool) => !pool.selfManaged)
            .map((pool) => ({
              identity: pool.identity,
              name: pool.name,
              desiredNodes: running ? pool.minSize : 0,
              readyNodes: running ? pool.minSize : 0,
              version: spec.version,
              ready: true,
            }))
        : [],
      addons: p.addons ? spec.addons.filter((a) => a.enabled).map((a) => ({ name: a.name, ready: true })) : [],
      conditions: [],
      error: null,
      retryAfterSeconds: null,
    };
  }

  private lost(spec: DesiredClusterSpec): ClusterObservation {
    return {
      ...this.observation(spec, converged(spec, false), null),
      error: { class: 'retryable', code: 'LostContact', message: LOST_CONTACT },
    };
  }

  /** A per-cluster host name of the simulated API server. */
  private host(spec: DesiredClusterSpec): string {
    return `${spec.slug.replace(/_/g, '-')}-${spec.identity.slice(0, 8)}.${spec.region}.${SIMULATED_API_DOMAIN}`;
  }

  private async latency(): Promise<void> {
    const ms = this.config.SIMULATED_DRIVER_LATENCY_MS;
    if (ms > 0) await new Promise((r) => setTimeout(r, ms));
  }

  /** Decrements one matching fault; true when the step must fail. */
  private async consumeFault(identity: string, step: string): Promise<boolean> {
    const rows: unknown[] = await this.txHost.tx.query(
      `WITH hit AS (
         UPDATE simulated_driver_faults SET remaining = remaining - 1
          WHERE id = (SELECT f.id FROM simulated_driver_faults f JOIN clusters c ON c.id = f.cluster_id
                       WHERE c.identity = $1 AND f.step = $2 AND f.remaining > 0
                       ORDER BY f.id LIMIT 1 FOR UPDATE OF f)
          RETURNING id)
       SELECT id FROM hit`,
      [identity, step],
    );
    return rows.length > 0;
  }
}
