import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { ClusterEntity } from '../clusters/cluster.entity';
import { AppConfig } from '../config/app-config';
import { byonStepIsImmediate } from '../clusters/byon/byon-rules';
import type { ClusterDriver, ControlPlaneAccess, DriverObservation, DriverOutcome } from './cluster-driver';
import { createSelfSignedCa } from './self-signed-ca';

/** Simulated control planes answer under this domain (nothing listens there). */
export const SIMULATED_API_DOMAIN = 'clusters.example.net';

/** A simulated API server: a per-cluster host name and a freshly generated self-signed CA. */
export function simulatedControlPlane(cluster: Pick<ClusterEntity, 'identity' | 'slug' | 'region'>, now: Date): ControlPlaneAccess {
  const host = `${cluster.slug.replace(/_/g, '-')}-${cluster.identity.slice(0, 8)}.${cluster.region}.${SIMULATED_API_DOMAIN}`;
  return { endpoint: `https://${host}:6443`, caCertificate: createSelfSignedCa(`kubernetes-ca ${host}`, now).certificatePem };
}

const LOST_CONTACT = 'Simulated driver lost contact with the cluster';

/**
 * The default driver (`CLUSTER_DRIVER=simulated`): a step completes once PROVISIONING_STEP_SECONDS
 * have passed since it started (`step_started_at`). A `simulated_driver_faults` row for the cluster
 * and step makes the step fail (`remaining` times); step `observe` makes observations fail (in a batch
 * observation too, per cluster). Faults live in the database so every replica sees them. Every call
 * (a batch observation is one call) takes SIMULATED_DRIVER_LATENCY_MS, like a provider's API would.
 * The CLUSTER_PROVISIONED step reports a simulated API endpoint and a real self-signed CA; a
 * bring-your-own-node cluster completes the steps after it at once.
 */
@Injectable()
export class SimulatedClusterDriver implements ClusterDriver {
  readonly name = 'simulated';

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly config: AppConfig,
  ) {}

  async advance(cluster: ClusterEntity, step: string, now: Date): Promise<DriverOutcome> {
    const startedAt = cluster.stepStartedAt ?? cluster.modifiedAt;
    const readyAt = new Date(startedAt.getTime() + this.config.PROVISIONING_STEP_SECONDS * 1000);
    if (readyAt.getTime() > now.getTime() && !byonStepIsImmediate(cluster, step)) {
      await this.latency();
      return { outcome: 'pending', retryAt: readyAt };
    }
    // The fault lookup is this simulation's own bookkeeping, not part of a provider's call: it runs during the
    // latency, so a call takes SIMULATED_DRIVER_LATENCY_MS, not that plus a database round trip.
    const [faulted] = await Promise.all([this.consumeFault(cluster.id, step), this.latency()]);
    if (faulted) return { outcome: 'failed', error: `Simulated driver failure in step ${step}` };
    if (step === 'CLUSTER_PROVISIONED') return { outcome: 'done', controlPlane: simulatedControlPlane(cluster, now) };
    return { outcome: 'done' };
  }

  async observe(cluster: ClusterEntity): Promise<DriverObservation> {
    const [faulted] = await Promise.all([this.consumeFault(cluster.id, 'observe'), this.latency()]);
    if (faulted) return { ok: false, error: LOST_CONTACT };
    return this.healthy(cluster);
  }

  async observeMany(clusters: ClusterEntity[]): Promise<Map<number, DriverObservation>> {
    const answer = new Map<number, DriverObservation>();
    if (!clusters.length) return answer;
    await this.latency();
    // One matching fault per cluster is consumed, in one statement.
    const hits: { cluster_id: string }[] = await this.txHost.tx.query(
      `WITH hit AS (
         UPDATE simulated_driver_faults f SET remaining = f.remaining - 1
          WHERE f.id IN (SELECT min(id) FROM simulated_driver_faults
                          WHERE cluster_id = ANY($1::bigint[]) AND step = 'observe' AND remaining > 0 GROUP BY cluster_id)
            AND f.remaining > 0
          RETURNING f.cluster_id)
       SELECT cluster_id FROM hit`,
      [clusters.map((c) => c.id)],
    );
    const lost = new Set(hits.map((h) => Number(h.cluster_id)));
    for (const c of clusters) answer.set(Number(c.id), lost.has(Number(c.id)) ? { ok: false, error: LOST_CONTACT } : this.healthy(c));
    return answer;
  }

  private healthy(cluster: ClusterEntity): DriverObservation {
    return { ok: true, status: cluster.statusBeforeFault ?? cluster.status, version: cluster.observedVersion };
  }

  private async latency(): Promise<void> {
    const ms = this.config.SIMULATED_DRIVER_LATENCY_MS;
    if (ms > 0) await new Promise((r) => setTimeout(r, ms));
  }

  /** Decrements one matching fault; true when the step must fail. */
  private async consumeFault(clusterId: number, step: string): Promise<boolean> {
    const rows: unknown[] = await this.txHost.tx.query(
      `WITH hit AS (
         UPDATE simulated_driver_faults SET remaining = remaining - 1
          WHERE id = (SELECT id FROM simulated_driver_faults WHERE cluster_id = $1 AND step = $2 AND remaining > 0
                       ORDER BY id LIMIT 1 FOR UPDATE)
          RETURNING id)
       SELECT id FROM hit`,
      [clusterId, step],
    );
    return rows.length > 0;
  }
}
