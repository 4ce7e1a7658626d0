import * as fc from 'fast-check';
import {
  afterFailure,
  afterRecovery,
  afterStep,
  allowedRequests,
  decideRequest,
  downgradeTargets,
  nextReconcileStep,
  retryDelaySeconds,
  SETTLED_STATUSES,
  StateView,
  upgradeTargets,
  VERSION_CHANGE_STATUSES,
} from '../../src/clusters/cluster-state-machine';
import { CLUSTER_STATUSES, ClusterDesiredStatus, ClusterStatus, PROVISION_STATUSES } from '../../src/clusters/cluster.entity';
import { cidrsOverlap } from '../../src/clusters/cluster-rules';
import type { ClusterDriver } from '../../src/provisioning/cluster-driver';
import { loadConfig } from '../../src/config/app-config';
import { selectDriver } from '../../src/provisioning/provisioning.module';

const view = (over: Partial<StateView>): StateView => ({
  status: 'started',
  provisionStatus: 'DONE',
  desiredStatus: null,
  version: '1.31.5',
  observedVersion: '1.31.5',
  ...over,
});

/** Applies steps like the reconciler does when the driver always succeeds. */
function drive(start: StateView, max = 20): string[] {
  const out: string[] = [];
  let c = { ...start };
  for (let i = 0; i < max; i++) {
    const s = nextReconcileStep(c);
    if (!s) break;
    if (s.kind === 'transition') {
      c = { ...c, status: s.to.status, provisionStatus: s.to.provisionStatus, desiredStatus: s.fulfilsDesired ? null : c.desiredStatus };
      out.push(`${c.status}/${c.provisionStatus}`);
    } else if (s.kind === 'upgrade') {
      c = { ...c, observedVersion: s.toVersion };
      out.push(`upgrade:${s.toVersion}`);
    } else break;
  }
  return out;
}

describe('cluster state machine', () => {
  it('provisions a new cluster one step at a time up to started', () => {
    expect(drive(view({ status: 'new', provisionStatus: 'ACCEPTED', desiredStatus: 'starting', observedVersion: null }))).toEqual([
      'provisioning/ACCEPTED',
      'provisioning/OIDC_PROVISIONED',
      'provisioning/CLUSTER_PROVISIONED',
      'provisioning/INITIAL_NODE_POOLS_PROVISIONED',
      'provisioning/INITIAL_ADDONS_PROVISIONED',
      'provisioning/DONE',
      'provisioned/DONE',
      'starting/DONE',
      'started/DONE',
      'upgrade:1.31.5', // observed version unknown in this pure run: the reconciler records it at CLUSTER_PROVISIONED
    ]);
  });

  it('stops, starts and deletes through the transitional states', () => {
    expect(drive(view({ desiredStatus: 'stopping' }))).toEqual(['stopping/DONE', 'stopped/DONE']);
    expect(drive(view({ status: 'stopped', desiredStatus: 'starting' }))).toEqual(['starting/DONE', 'started/DONE']);
    expect(drive(view({ status: 'stopped', desiredStatus: 'deleting' }))).toEqual(['deleting/DONE', 'deleted/DONE']);
    expect(drive(view({ status: 'unknown', desiredStatus: 'deleting', statusBeforeFault: 'provisioning' }))).toEqual([
      'deleting/DONE',
      'deleted/DONE',
    ]);
  });

  it('is at rest when started or stopped without intent, upgrades started clusters and defers stopped ones', () => {
    expect(nextReconcileStep(view({}))).toBeNull();
    expect(nextReconcileStep(view({ status: 'stopped' }))).toBeNull();
    expect(nextReconcileStep(view({ status: 'deleted' }))).toBeNull();
    expect(nextReconcileStep(view({ version: '1.31.6' }))).toEqual({ kind: 'upgrade', step: 'upgrade', toVersion: '1.31.6', auditType: 'CLUSTER_UPGRADED' });
    expect(nextReconcileStep(view({ status: 'stopped', version: '1.31.6' }))).toEqual({ kind: 'idle' });
    expect(nextReconcileStep(view({ status: 'unknown', statusBeforeFault: 'started' }))).toMatchObject({ kind: 'recover' });
  });

  it('allows requests only from settled states', () => {
    const table = Object.fromEntries(CLUSTER_STATUSES.map((s) => [s, [...allowedRequests(s)]]));
    expect(table).toEqual({
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
    });
  });

  it('decides requests: allowed, no-op repeats, refusals naming the state, delete protection', () => {
    expect(decideRequest(view({}), 'stopping')).toEqual({ ok: true, desiredStatus: 'stopping', noop: false });
    expect(decideRequest(view({ desiredStatus: 'stopping' }), 'stopping')).toEqual({ ok: true, desiredStatus: 'stopping', noop: true });
    const refused = decideRequest(view({}), 'starting');
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.message).toContain("The cluster is 'started'");
    expect(!refused.ok && refused.message).toContain("'stopping', 'deleting'");
    expect(decideRequest(view({ status: 'provisioning', desiredStatus: 'starting' }), 'deleting').ok).toBe(false);
    expect(decideRequest(view({ status: 'new', desiredStatus: 'starting' }), 'stopping').ok).toBe(false);
    const prot = decideRequest(view({ deleteProtection: true }), 'deleting');
    expect(!prot.ok && prot.message).toContain('deleteProtection');
    expect(decideRequest(view({ desiredStatus: 'stopping' }), 'deleting')).toEqual({ ok: true, desiredStatus: 'deleting', noop: false });
    for (const s of ['starting', 'stopping'] as ClusterDesiredStatus[]) {
      expect(decideRequest(view({ status: 'deleting', desiredStatus: null }), s).ok).toBe(false);
    }
    // deleting a cluster that is already being deleted is an idempotent no-op
    expect(decideRequest(view({ status: 'deleting', desiredStatus: null }), 'deleting')).toMatchObject({ ok: true, noop: true });
  });

  it('computes upgrade and downgrade targets with semver', () => {
    const available = ['1.29.13', '1.30.6', '1.30.8', '1.30.9', '1.31.3', '1.31.4', '1.31.5', '1.31.6', '1.32.0', '1.32.1', '1.33.0'];
    expect(upgradeTargets('1.31.4', available)).toEqual(['1.31.5', '1.31.6', '1.32.0', '1.32.1']);
    expect(downgradeTargets('1.31.4', available)).toEqual(['1.31.3']);
    expect(upgradeTargets('1.30.10', ['1.30.9', '1.31.3', '1.30.11'])).toEqual(['1.30.11', '1.31.3']);
    expect(upgradeTargets('not-a-version', available)).toEqual([]);
  });

  it('backs off exponentially up to five minutes', () => {
    expect([1, 2, 3, 4, 10, 50].map(retryDelaySeconds)).toEqual([5, 10, 20, 40, 300, 300]);
  });

  it('detects overlapping CIDRs', () => {
    expect(cidrsOverlap('10.0.0.0/8', '10.96.0.0/12')).toBe(true);
    expect(cidrsOverlap('10.96.0.0/12', '10.0.0.0/8')).toBe(true);
    expect(cidrsOverlap('10.244.0.0/16', '10.96.0.0/12')).toBe(false);
    expect(cidrsOverlap('10.0.0.0/8', 'fd00::/8')).toBe(false);
  });

  it('selects the cluster driver by CLUSTER_DRIVER (default simulated) and refuses unknown names', () => {
    const simulated = { name: 'simulated' } as ClusterDriver;
    expect(loadConfig({}).CLUSTER_DRIVER).toBe('simulated');
    expect(() => loadConfig({ CLUSTER_DRIVER: 'cloud-x' })).toThrow(/CLUSTER_DRIVER/);
    expect(selectDriver('simulated', { simulated })).toBe(simulated);
    expect(() => selectDriver('cloud-x', { simulated })).toThrow(/CLUSTER_DRIVER="cloud-x": unknown cluster driver/);
  });

  it('property: any mix of requests, version changes, driver successes and failures keeps the machine consistent and live', () => {
    const EDGES = new Set([
      'new>provisioning',
      'provisioning>provisioning',
      'provisioning>provisioned',
      'provisioned>starting',
      'starting>started',
      'started>stopping',
      'stopping>stopped',
      'stopped>starting',
      'started>started', // upgrade
      'provisioned>deleting',
      'started>deleting',
      'stopped>deleting',
      'unknown>deleting',
      'deleting>deleted',
    ]);
    const action = fc.oneof(
      fc.record({ kind: fc.constant('request' as const), s: fc.constantFrom<ClusterDesiredStatus>('starting', 'stopping', 'deleting') }),
      fc.record({ kind: fc.constant('version' as const), v: fc.constantFrom('1.31.5', '1.31.6', '1.32.0') }),
      fc.record({ kind: fc.constant('step' as const), ok: fc.boolean() }),
    );
    fc.assert(
      fc.property(fc.array(action, { maxLength: 80 }), fc.boolean(), (actions, protectedCluster) => {
        let c: StateView = {
          status: 'new',
          provisionStatus: 'ACCEPTED',
          desiredStatus: 'starting',
          version: '1.31.5',
          observedVersion: null,
          statusBeforeFault: null,
          deleteProtection: protectedCluster,
        };
        const step = (ok: boolean): boolean => {
          const next = nextReconcileStep(c);
          if (!next || next.kind === 'idle') return false;
          if (next.kind === 'recover') {
            if (ok) c = { ...c, ...afterRecovery(c) };
            return true;
          }
          if (!ok) {
            c = { ...c, ...afterFailure(c) };
            return true;
          }
          const before = c;
          const change = afterStep(c, next);
          expect(EDGES.has(`${before.status}>${change.status}`)).toBe(true);
          expect(PROVISION_STATUSES.indexOf(change.provisionStatus)).toBeGreaterThanOrEqual(PROVISION_STATUSES.indexOf(before.provisionStatus));
          if (change.deleted) expect(before.status).toBe('deleting');
          c = { ...c, ...change };
          return true;
        };
        for (const a of actions) {
          if (a.kind === 'request') {
            const d = decideRequest(c, a.s);
            if (d.ok && !d.noop) {
              if (a.s === 'deleting') {
                expect(SETTLED_STATUSES).toContain(c.status);
                expect(c.deleteProtection).toBe(false);
              }
              c = { ...c, desiredStatus: d.desiredStatus };
            }
          } else if (a.kind === 'version') {
            if (VERSION_CHANGE_STATUSES.includes(c.status)) c = { ...c, version: a.v };
          } else {
            step(a.ok);
          }
          expect(CLUSTER_STATUSES).toContain(c.status);
          expect(c.status === 'unknown').toBe(c.statusBeforeFault != null);
          if (c.status === 'deleted') expect(nextReconcileStep(c)).toBeNull();
        }
        // liveness: with a healthy driver and no more requests the cluster comes to rest quickly
        let moves = 0;
        while (step(true)) expect(++moves).toBeLessThan(15);
        const rest: ClusterStatus[] = ['started', 'stopped', 'deleted'];
        expect(rest).toContain(c.status);
        expect(c.desiredStatus).toBeNull();
        if (c.status === 'started') expect(c.observedVersion).toBe(c.version);
      }),
      { numRuns: 500 },
    );
  });
});
