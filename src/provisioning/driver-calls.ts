import { Inject, Injectable } from '@nestjs/common';
import type { ClusterEntity } from '../clusters/cluster.entity';
import type { ReconcileStep } from '../clusters/cluster-state-machine';
import { AppConfig } from '../config/app-config';
import { CLUSTER_DRIVER, ClusterDriver, DriverObservation, DriverOutcome } from './cluster-driver';

/** A driver call given up on after half the lease; it may still be running. */
export class DriverTimeoutError extends Error {}

/** What the driver answered, or nothing when the step needs no driver call. */
export type DriverAnswer = { kind: 'none' } | { kind: 'observe'; seen: DriverObservation } | { kind: 'advance'; outcome: DriverOutcome };

/**
 * The reconciler's calls to the cluster driver: made while no transaction is open and the claim holds the lease,
 * and given up after half the lease (RECONCILE_LEASE_SECONDS), so the record still holds it.
 */
@Injectable()
export class DriverCalls {
  constructor(
    private readonly config: AppConfig,
    @Inject(CLUSTER_DRIVER) private readonly driver: ClusterDriver,
  ) {}

  /** The driver's answer for the planned step: an observation for a recovery, an advance for a step, else none. */
  async forStep(c: ClusterEntity, planned: ReconcileStep | null, now: Date): Promise<DriverAnswer> {
    if (planned?.kind === 'recover') return { kind: 'observe', seen: await this.bounded('observe', () => this.driver.observe(c, now)) };
    if (planned && planned.kind !== 'idle') {
      return { kind: 'advance', outcome: await this.bounded(planned.step, () => this.driver.advance(c, planned.step, now)) };
    }
    return { kind: 'none' };
  }

  /** One observation call for a batch of settled clusters. */
  observeMany(clusters: ClusterEntity[], now: Date): Promise<Map<number, DriverObservation>> {
    return this.bounded('a batch observation', () => this.driver.observeMany(clusters, now));
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
