import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { randomBytes } from 'crypto';
import { isByon } from '../clusters/byon/byon-rules';
import { ClusterAccessEntity, clusterOidcSecretContext } from '../clusters/cluster-access.entity';
import type { ClusterEntity } from '../clusters/cluster.entity';
import { SecretBox } from '../common/secret-box';
import type { ClusterObservation } from '../cluster-drivers/driver-contract';

/** The API server of a cluster as the driver built it. */
export interface ControlPlaneAccess {
  /** https URL of the Kubernetes API server. */
  endpoint: string;
  /** PEM of the CA that signed the API server's certificate. */
  caCertificate: string;
}

/** The OIDC client id of a cluster (unique: it carries the cluster identity). */
export const clusterOidcClientId = (clusterIdentity: string) => `cluster-${clusterIdentity}`;

/**
 * What a completed provisioning step leaves behind besides the cluster row, written in the reconciler's
 * transaction right after the step:
 * - OIDC_PROVISIONED creates the cluster's OIDC client (random secret, sealed at rest);
 * - a step whose observation reports a ready control plane with its CA (CLUSTER_PROVISIONED, or any later one whose
 *   driver reports it again) stores its endpoint and CA;
 * - INITIAL_NODE_POOLS_PROVISIONED of a bring-your-own-node cluster leaves its pools ACCEPTED until a node
 *   registers into them (a registration marks its pool DONE).
 * Kept out of the reconciler so its loop stays about claiming and stepping.
 */
@Injectable()
export class ClusterStepEffects {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly secrets: SecretBox,
  ) {}

  async afterStep(cluster: ClusterEntity, step: string, observation: ClusterObservation, now: Date): Promise<void> {
    if (step === 'OIDC_PROVISIONED') await this.ensureAccess(cluster, now);
    const cp = observation.controlPlane;
    if (cp?.ready && cp.endpoint && cp.caCertificate) await this.ensureAccess(cluster, now, { endpoint: cp.endpoint, caCertificate: cp.caCertificate });
    if (step === 'INITIAL_NODE_POOLS_PROVISIONED' && isByon(cluster.cloudProvider)) {
      await this.txHost.tx.query(
        `UPDATE cluster_node_pools p
            SET provision_status = CASE WHEN EXISTS (SELECT 1 FROM node_pool_nodes n WHERE n.node_pool_id = p.id) THEN 'DONE' ELSE 'ACCEPTED' END
          WHERE p.cluster_id = $1`,
        [cluster.id],
      );
    }
  }

  /** Creates the cluster's access row (with its OIDC client) when missing; records the control plane when given. */
  private async ensureAccess(cluster: ClusterEntity, now: Date, controlPlane?: ControlPlaneAccess): Promise<void> {
    const repo = this.txHost.tx.getRepository(ClusterAccessEntity);
    const existing = await repo.findOne({ where: { clusterId: cluster.id } });
    if (!existing) {
      const secret = randomBytes(32).toString('base64url');
      await repo.insert({
        clusterId: cluster.id,
        oidcClientId: clusterOidcClientId(cluster.identity),
        oidcClientSecretCiphertext: this.secrets.seal(secret, clusterOidcSecretContext(cluster.identity)),
        apiEndpoint: controlPlane?.endpoint ?? null,
        caCertificate: controlPlane?.caCertificate ?? null,
        createdAt: now,
        modifiedAt: now,
      });
      return;
    }
    if (controlPlane) {
      await repo.update({ clusterId: cluster.id }, { apiEndpoint: controlPlane.endpoint, caCertificate: controlPlane.caCertificate, modifiedAt: now });
    }
  }
}
