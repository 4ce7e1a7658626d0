import { TransactionHost } from '@nestjs-cls/transactional';
import type { ClusterObservation, DesiredClusterSpec } from '../../src/cluster-drivers/driver-contract';
import { nextReconcileStep, PROVISIONING_STEPS } from '../../src/clusters/cluster-state-machine';
import { Clock } from '../../src/common/clock';
import { AppConfig } from '../../src/config/app-config';
import { SimulatedClusterDriver } from '../../src/provisioning/simulated-cluster-driver';
import { CallingStep, operationKind, stepReached } from '../../src/provisioning/step-outcome';

const spec = (over: Partial<DesiredClusterSpec> = {}): DesiredClusterSpec => ({
  identity: '00000000-0000-4000-8000-000000000001',
  generation: 3,
  slug: 'web',
  name: 'web',
  organisation: { identity: 'o', slug: 'acme' },
  environment: { identity: 'e', slug: 'production', type: 'production' },
  cloudProvider: 'platform_1',
  cloudProfile: null,
  region: 'eu-central-1',
  zones: ['eu-central-1a'],
  version: '1.31.5',
  desiredState: 'running',
  highAvailability: false,
  multiAvailabilityZones: false,
  natGateway: false,
  networkEncryption: false,
  cni: 'cilium',
  podSubnet: null,
  serviceSubnet: null,
  ipAllowList: [],
  podSecurityStandardsProfile: null,
  clusterAutoscaler: {},
  oidc: null,
  addons: [{ name: 'cert-manager', enabled: true, settings: {} }],
  nodePools: [
    {
      identity: '00000000-0000-4000-8000-0000000000aa',
      name: 'workers',
      generation: 2,
      nodeType: { name: 'm5.large', cpu: 2, memoryMb: 8192 },
      availabilityZone: null,
      autoScaling: false,
      minSize: 2,
      maxSize: 2,
      labels: {},
      annotations: {},
      taints: [],
      upgradeStrategy: 'REPLACE',
      enableNodeAutoReplacement: true,
      enableNodeReboots: false,
      selfManaged: false,
    },
  ],
  ...over,
});

const transition = (step: string): CallingStep => ({ kind: 'transition', step, to: { status: 'provisioning', provisionStatus: 'ACCEPTED' }, fulfilsDesired: false, auditType: 'X' });

/** The simulated driver with a fixed clock, no latency and no faults (its fault lookup answers none). */
function simulated(stepSeconds: number, now: Date): SimulatedClusterDriver {
  const txHost = { tx: { query: async () => [] } } as unknown as TransactionHost<never>;
  const config = { PROVISIONING_STEP_SECONDS: stepSeconds, SIMULATED_DRIVER_LATENCY_MS: 0 } as AppConfig;
  const clock = { now: () => now } as unknown as Clock;
  return new SimulatedClusterDriver(txHost as never, config, clock);
}

describe('steps on the driver contract', () => {
  const steps: CallingStep[] = [
    ...['provisioning', ...PROVISIONING_STEPS, 'provisioned', 'starting', 'started', 'stopping', 'stopped', 'deleting', 'deleted'].map(transition),
    { kind: 'upgrade', step: 'upgrade', toVersion: '1.31.5', auditType: 'CLUSTER_UPGRADED' },
    { kind: 'update', step: 'update', auditType: 'CLUSTER_CHANGES_APPLIED' },
  ];

  it.each(steps.map((s) => [s.step, s] as const))('the simulated driver answers %s as not reached before its time, reached after', async (_, step) => {
    const now = new Date('2026-11-27T12:00:00Z');
    const desired = spec({ desiredState: step.step === 'stopping' || step.step === 'stopped' ? 'stopped' : 'running' });
    const operation = { kind: operationKind(step), step: step.step, startedAt: new Date(now.getTime() - 3000).toISOString() };
    const call = (d: SimulatedClusterDriver) =>
      step.step === 'deleting' || step.step === 'deleted'
        ? d.delete({ idempotencyKey: 'k', operation, cluster: desired, cloudAccount: null })
        : d.apply({ idempotencyKey: 'k', operation, cluster: desired, cloudAccount: null });
    const waiting = await call(simulated(5, now));
    expect(stepReached(step, waiting, desired)).toBe(false);
    expect(waiting.retryAfterSeconds).toBe(2);
    const done = await call(simulated(1, now));
    expect(stepReached(step, done, desired)).toBe(true);
  });

  it('an error, a missing pool or add-on, or an older generation is not reached', () => {
    const desired = spec();
    const full: ClusterObservation = {
      exists: true,
      observedGeneration: 3,
      state: 'running',
      version: '1.31.5',
      controlPlane: { ready: true, endpoint: 'https://x:6443', caCertificate: null },
      nodePools: [{ identity: desired.nodePools[0].identity, name: 'workers', desiredNodes: 2, readyNodes: 2, version: '1.31.5', ready: true }],
      addons: [{ name: 'cert-manager', ready: true }],
      conditions: [],
      error: null,
      retryAfterSeconds: null,
    };
    expect(stepReached({ kind: 'update', step: 'update', auditType: 'CLUSTER_CHANGES_APPLIED' }, full, desired)).toBe(true);
    expect(stepReached({ kind: 'update', step: 'update', auditType: 'CLUSTER_CHANGES_APPLIED' }, { ...full, observedGeneration: 2 }, desired)).toBe(false);
    expect(stepReached(transition('INITIAL_NODE_POOLS_PROVISIONED'), { ...full, nodePools: [] }, desired)).toBe(false);
    expect(stepReached(transition('INITIAL_ADDONS_PROVISIONED'), { ...full, addons: [{ name: 'cert-manager', ready: false }] }, desired)).toBe(false);
    expect(stepReached(transition('DONE'), { ...full, error: { class: 'retryable', code: 'X', message: 'x' } }, desired)).toBe(false);
    expect(stepReached({ kind: 'upgrade', step: 'upgrade', toVersion: '1.31.5', auditType: 'CLUSTER_UPGRADED' }, { ...full, version: '1.31.4' }, desired)).toBe(false);
    // Bring-your-own-node pools are the customer's: not waited for.
    const byon = spec({ nodePools: [{ ...desired.nodePools[0], selfManaged: true }] });
    expect(stepReached(transition('INITIAL_NODE_POOLS_PROVISIONED'), { ...full, nodePools: [] }, byon)).toBe(true);
  });

  it('a started or stopped cluster with a pending generation is updated; a stopped one with a pending version waits for its start', () => {
    const base = { provisionStatus: 'DONE' as const, desiredStatus: null, version: '1.31.5', observedVersion: '1.31.5', generation: 4, observedGeneration: 3 };
    expect(nextReconcileStep({ ...base, status: 'started' })).toMatchObject({ kind: 'update', step: 'update' });
    expect(nextReconcileStep({ ...base, status: 'stopped' })).toMatchObject({ kind: 'update' });
    expect(nextReconcileStep({ ...base, status: 'stopped', version: '1.31.6' })).toEqual({ kind: 'idle' });
    expect(nextReconcileStep({ ...base, status: 'started', version: '1.31.6' })).toMatchObject({ kind: 'upgrade' });
    expect(nextReconcileStep({ ...base, status: 'started', observedGeneration: 4 })).toBeNull();
    // Rows without generations (written by hand) have nothing pending.
    expect(nextReconcileStep({ ...base, status: 'started', observedGeneration: null })).toBeNull();
  });
});
