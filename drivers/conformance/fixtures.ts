import { randomUUID } from 'crypto';
import type { ApplyRequest, DeleteRequest, DesiredClusterSpec, DesiredNodePool, DriverCloudAccount, DriverOperationKind, ObserveRequest } from '../../src/cluster-drivers/driver-contract';

/** Desired specs and requests for the conformance kit and the tests: plain contract values. */

export function nodePool(overrides: Partial<DesiredNodePool> = {}): DesiredNodePool {
  return {
    identity: randomUUID(),
    name: 'pool-1',
    generation: 1,
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
    ...overrides,
  };
}

export function clusterSpec(overrides: Partial<DesiredClusterSpec> = {}): DesiredClusterSpec {
  return {
    identity: randomUUID(),
    generation: 1,
    slug: 'conformance',
    name: 'Conformance',
    organisation: { identity: randomUUID(), slug: 'acme' },
    environment: { identity: randomUUID(), slug: 'production', type: 'PRODUCTION' },
    cloudProvider: 'aws',
    cloudProfile: null,
    region: 'eu-central-1',
    zones: ['eu-central-1a', 'eu-central-1b'],
    version: '1.31.2',
    desiredState: 'running',
    highAvailability: false,
    multiAvailabilityZones: false,
    natGateway: false,
    networkEncryption: false,
    cni: 'cilium',
    podSubnet: null,
    serviceSubnet: null,
    ipAllowList: [],
    podSecurityStandardsProfile: 'baseline',
    clusterAutoscaler: {},
    oidc: null,
    addons: [{ name: 'cert-manager', enabled: false, settings: {} }],
    nodePools: [nodePool()],
    ...overrides,
  };
}

export function cloudAccount(secret = 'conformance-secret'): DriverCloudAccount {
  return {
    identity: randomUUID(),
    name: 'main',
    cloudProvider: 'aws',
    cloudProfile: null,
    metadata: { accountId: '123456789012' },
    credentials: { identity: randomUUID(), name: 'primary', values: { accessKeyId: 'AKIAEXAMPLE', accessKeySecret: secret } },
  };
}

export function applyRequest(cluster: DesiredClusterSpec, account: DriverCloudAccount | null = null, kind: DriverOperationKind = 'update'): ApplyRequest {
  return {
    idempotencyKey: `${cluster.identity}:${cluster.generation}`,
    operation: { kind, step: kind === 'create' ? 'CLUSTER_PROVISIONED' : kind, startedAt: new Date().toISOString() },
    cluster,
    cloudAccount: account,
  };
}

export function deleteRequest(cluster: DesiredClusterSpec, account: DriverCloudAccount | null = null): DeleteRequest {
  return {
    idempotencyKey: `${cluster.identity}:${cluster.generation}:delete`,
    operation: { kind: 'delete', step: 'deleting', startedAt: new Date().toISOString() },
    cluster,
    cloudAccount: account,
  };
}

export const observeRequest = (cluster: DesiredClusterSpec, account: DriverCloudAccount | null = null): ObserveRequest => ({ cluster, cloudAccount: account });

/** The spec at its next generation with `change` applied (what the service sends after a user's change). */
export function nextGeneration(spec: DesiredClusterSpec, change: (s: DesiredClusterSpec) => void): DesiredClusterSpec {
  const next: DesiredClusterSpec = JSON.parse(JSON.stringify(spec));
  next.generation = spec.generation + 1;
  change(next);
  return next;
}
