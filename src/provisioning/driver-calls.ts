import { Inject, Injectable } from '@nestjs/common';
import { ClusterDriverResolver } from '../cluster-drivers/cluster-driver-resolver';
import { DriverCallError } from '../cluster-drivers/driver-call-error';
import {
  applyKey,
  deleteKey,
  type ClusterDriver,
  type ClusterObservation,
  type DriverError,
  type DriverOperation,
  type ObserveRequest,
} from '../cluster-drivers/driver-contract';
import type { ReconcileStep } from '../clusters/cluster-state-machine';
import type { ClusterEntity } from '../clusters/cluster.entity';
import { AppConfig } from '../config/app-config';
import { CLUSTER_DRIVER } from './cluster-driver';
import { DesiredSpecs, DriverSubject } from './desired-specs';
import { CallingStep, isDeleteStep, operationKind } from './step-outcome';

/** A driver call given up on after half the lease; it may still be running. */
export class DriverTimeoutError extends Error {}

/**
 * What the driver answered for a step, or nothing when the step needs no driver call:
 * - `observed`: the driver's observation, answering a call with the spec of `generation` (`spec`: that spec, without
 *   the cloud account: the credentials never leave the call);
 * - `error`: the call failed with a driver error (a DriverCallError: the driver unreachable, timing out, refusing the
 *   request, or its own error).
 */
export type DriverAnswer =
  | { kind: 'none' }
  | { kind: 'observed'; observation: ClusterObservation; spec: DriverSubject['spec'] }
  | { kind: 'error'; error: DriverError };

/**
 * The reconciler's calls to cluster drivers: made while no transaction is open and the claim holds the lease, and
 * given up after half the lease (RECONCILE_LEASE_SECONDS), so the record still holds it. Each call reads the cluster's
 * full desired spec (DesiredSpecs, with the cloud account's credentials opened for this call only) and goes to the
 * driver registered for the cluster's cloud profile or provider (ClusterDriverResolver), else to the default one.
 */
@Injectable()
export class DriverCalls {
  constructor(
    private readonly config: AppConfig,
    @Inject(CLUSTER_DRIVER) private readonly defaultDriver: ClusterDriver,
    private readonly resolver: ClusterDriverResolver,
    private readonly specs: DesiredSpecs,
  ) {}

  /** The driver's answer for the planned step: an observation for a recovery, an apply or delete for a step, else none. */
  async forStep(c: ClusterEntity, planned: ReconcileStep | null, now: Date): Promise<DriverAnswer> {
    if (!planned || planned.kind === 'idle') return { kind: 'none' };
    const subject = (await this.specs.load([c])).get(Number(c.id));
    if (!subject) throw new Error(`Cluster ${c.identity} has no organisation, environment or cloud account to build its spec from`);
    const driver = await this.driverFor(subject);
    const { spec, cloudAccount } = subject;
    try {
      if (planned.kind === 'recover') {
        const observation = await this.bounded('observe', () => driver.observe({ cluster: spec, cloudAccount }));
        return { kind: 'observed', observation, spec };
      }
      const operation: DriverOperation = { kind: operationKind(planned), step: planned.step, startedAt: stepStartedAt(c, planned).toISOString() };
      const observation = isDeleteStep(planned)
        ? await this.bounded(planned.step, () => driver.delete({ idempotencyKey: deleteKey(spec.identity, spec.generation), operation, cluster: spec, cloudAccount }))
        : await this.bounded(planned.step, () => driver.apply({ idempotencyKey: applyKey(spec.identity, spec.generation), operation, cluster: spec, cloudAccount }));
      return { kind: 'observed', observation, spec };
    } catch (err) {
      if (err instanceof DriverCallError) return { kind: 'error', error: err.driverError };
      throw err;
    }
  }

  /**
   * One observation call per driver for a batch of settled clusters, answered by cluster id; a cluster missing from
   * the answer was not reachable. A driver whose call failed leaves its clusters `unreachable` (nothing is known about
   * them; the others are answered).
   */
  async observeMany(clusters: ClusterEntity[]): Promise<{ seen: Map<number, ClusterObservation>; unreachable: Set<number>; failed: unknown[] }> {
    const subjects = await this.specs.load(clusters, { warnUnreadable: false });
    type Group = { ids: Map<string, number>; requests: ObserveRequest[] };
    const groups = new Map<ClusterDriver, Group>();
    for (const [id, subject] of subjects) {
      const driver = await this.driverFor(subject);
      const group: Group = groups.get(driver) ?? { ids: new Map<string, number>(), requests: [] };
      group.ids.set(subject.spec.identity, id);
      group.requests.push({ cluster: subject.spec, cloudAccount: subject.cloudAccount });
      groups.set(driver, group);
    }
    const seen = new Map<number, ClusterObservation>();
    const unreachable = new Set<number>();
    const failed: unknown[] = [];
    await Promise.all(
      [...groups].map(async ([driver, group]) => {
        try {
          const answer = await this.bounded('a batch observation', () => driver.observeMany(group.requests));
          for (const [identity, observation] of answer) {
            const id = group.ids.get(identity);
            if (id !== undefined) seen.set(id, observation);
          }
        } catch (err) {
          failed.push(err);
          for (const id of group.ids.values()) unreachable.add(id);
        }
      }),
    );
    return { seen, unreachable, failed };
  }

  private async driverFor(subject: DriverSubject): Promise<ClusterDriver> {
    return (await this.resolver.resolve(subject.target)) ?? this.defaultDriver;
  }

  private async bounded<T>(what: string, call: () => Promise<T>): Promise<T> {
    const ms = this.config.RECONCILE_LEASE_SECONDS * 500;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DriverTimeoutError(`The cluster driver did not answer ${what} within ${ms / 1000} s`)), ms);
    });
    const answer = call();
    // A call given up on may still fail later: that must not become an unhandled rejection.
    answer.catch(() => undefined);
    try {
      return await Promise.race([answer, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * When the step began (the same on every call of the step): the last step's end; for an update, when the pending
 * generation first appeared (the Reconciling condition's transition) if that is later.
 */
export function stepStartedAt(c: ClusterEntity, step: CallingStep): Date {
  const since = new Date(c.stepStartedAt ?? c.modifiedAt);
  if (step.kind !== 'update') return since;
  const reconciling = (c.conditions ?? []).find((x) => x.type === 'Reconciling' && x.status === 'True');
  const changed = reconciling ? new Date(reconciling.lastTransitionTime) : null;
  return changed && changed.getTime() > since.getTime() ? changed : since;
}
