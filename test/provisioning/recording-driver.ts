import type {
  ApplyRequest,
  ClusterDriver,
  ClusterObservation,
  DeleteRequest,
  DesiredClusterSpec,
  DriverCapabilities,
  DriverError,
  ObserveRequest,
} from '../../src/cluster-drivers/driver-contract';

type Request = ApplyRequest | DeleteRequest;

/**
 * A driver for tests, bound through ClusterDriverResolver: it records every request (as JSON, the way the HTTP
 * protocol would carry it) and keeps an in-memory "cloud" per cluster identity. An effect happens once per
 * idempotency key (`acted` lists the keys acted on; `conflicts` a key sent again with another spec). With `callsToApply` > 1 a generation is
 * applied only on the n-th call that carries it (an asynchronous provider: Reconciling until then).
 */
export class RecordingDriver implements ClusterDriver {
  readonly name = 'recording';
  readonly requests: Request[] = [];
  readonly observeRequests: ObserveRequest[] = [];
  /** The idempotency keys acted on, in order: each once, however often it is sent. */
  readonly acted: string[] = [];
  /** Keys that came again with a different spec (an idempotency key must always mean the same spec). */
  readonly conflicts: string[] = [];
  private readonly specByKey = new Map<string, string>();
  private readonly clusters = new Map<string, { applied: number | null; deleted: boolean; spec: DesiredClusterSpec; callsFor: Map<number, number> }>();
  callsToApply = 1;
  /** Runs inside each apply or delete call, before the driver acts (to change things while a call is under way). */
  during: ((request: Request) => Promise<void>) | null = null;
  /** An error to answer in the observation (or to throw, with `throwIt`). */
  failWith: ((request: Request) => { error: DriverError; throwIt?: boolean } | null) | null = null;

  capabilities(): Promise<DriverCapabilities> {
    return Promise.resolve({ protocolVersion: 'v1', driver: { name: 'recording', version: '1' }, cloudProviders: [], features: ['stopStart', 'upgrade'] });
  }

  apply(request: ApplyRequest): Promise<ClusterObservation> {
    return this.act(request, false);
  }

  delete(request: DeleteRequest): Promise<ClusterObservation> {
    return this.act(request, true);
  }

  async observe(request: ObserveRequest): Promise<ClusterObservation> {
    this.observeRequests.push(JSON.parse(JSON.stringify(request)));
    return this.observation(request.cluster);
  }

  async observeMany(requests: ObserveRequest[]): Promise<Map<string, ClusterObservation>> {
    const out = new Map<string, ClusterObservation>();
    for (const r of requests) out.set(r.cluster.identity, await this.observe(r));
    return out;
  }

  /** The apply and delete requests of one cluster, in order. */
  requestsOf(identity: string): Request[] {
    return this.requests.filter((r) => r.cluster.identity === identity);
  }

  private async act(request: Request, remove: boolean): Promise<ClusterObservation> {
    this.requests.push(JSON.parse(JSON.stringify(request)));
    if (this.during) await this.during(request);
    const failure = this.failWith?.(request) ?? null;
    if (failure?.throwIt) {
      const { DriverCallError } = await import('../../src/cluster-drivers/driver-call-error');
      throw new DriverCallError(failure.error);
    }
    if (failure) return { ...this.observation(request.cluster), error: failure.error };
    const spec = request.cluster;
    const key = request.idempotencyKey;
    const json = JSON.stringify(spec);
    if (!this.specByKey.has(key)) this.specByKey.set(key, json);
    else if (this.specByKey.get(key) !== json) this.conflicts.push(key);
    const state = this.clusters.get(spec.identity) ?? { applied: null, deleted: false, spec, callsFor: new Map<number, number>() };
    this.clusters.set(spec.identity, state);
    const calls = (state.callsFor.get(spec.generation) ?? 0) + 1;
    state.callsFor.set(spec.generation, calls);
    if (calls >= this.callsToApply && !this.acted.includes(key)) {
      // The effect of this key happens now, once: a repeated key changes nothing.
      this.acted.push(key);
      if (remove) state.deleted = true;
      else if (state.applied === null || spec.generation >= state.applied) {
        state.applied = spec.generation;
        state.spec = spec;
      }
    }
    return this.observation(spec);
  }

  private observation(spec: DesiredClusterSpec): ClusterObservation {
    const state = this.clusters.get(spec.identity);
    if (!state || state.deleted) {
      return { exists: false, observedGeneration: null, state: 'absent', version: null, controlPlane: null, nodePools: [], addons: [], conditions: [], error: null, retryAfterSeconds: null };
    }
    const applied = state.applied !== null;
    const s = state.spec;
    return {
      exists: true,
      observedGeneration: state.applied,
      state: !applied ? 'creating' : s.desiredState === 'stopped' ? 'stopped' : 'running',
      version: applied ? s.version : null,
      controlPlane: { ready: applied, endpoint: applied ? `https://${s.slug}.recording.example.net:6443` : null, caCertificate: applied ? 'TEST-CA' : null },
      nodePools: s.nodePools.map((p) => ({ identity: p.identity, name: p.name, desiredNodes: p.minSize, readyNodes: applied ? p.minSize : 0, version: s.version, ready: applied })),
      addons: s.addons.filter((a) => a.enabled).map((a) => ({ name: a.name, ready: applied })),
      conditions: [],
      error: null,
      retryAfterSeconds: applied ? null : 1,
    };
  }
}
