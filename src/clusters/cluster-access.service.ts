import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable } from '@nestjs/common';
import { stringify } from 'yaml';
import { SecretBox } from '../common/secret-box';
import { AppConfig } from '../config/app-config';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { ClusterAccessEntity, clusterOidcSecretContext } from './cluster-access.entity';
import { ClusterLookup } from './cluster-lookup';
import type { ClusterRow } from './cluster-read';
import type { ClusterOidcConfigResponse } from './dto/cluster-access.dto';

/** Issuer answered when OIDC_ISSUER_URL is not configured (docs/adr/0071-cluster-oidc-configuration-and-kubeconfig.md). */
export const DEFAULT_CLUSTER_OIDC_ISSUER = 'https://login.example.com';

export interface ResolvedAccess {
  cluster: ClusterRow;
  endpoint: string;
  caCertificate: string;
  clientId: string;
  clientSecret: string;
  issuerUrl: string;
}

/** How clients reach a provisioned cluster: its endpoint, CA and OIDC client, and a kubeconfig built from them. */
@Injectable()
export class ClusterAccessService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly lookup: ClusterLookup,
    private readonly secrets: SecretBox,
    private readonly config: AppConfig,
  ) {}

  get issuerUrl(): string {
    return (this.config.OIDC_ISSUER_URL ?? DEFAULT_CLUSTER_OIDC_ISSUER).replace(/\/$/, '');
  }

  /** Endpoint, CA and OIDC client of the cluster; 409 until its control plane is provisioned. */
  async resolve(org: OrganisationEntity, envSlug: string, clusterSlug: string): Promise<ResolvedAccess> {
    const { cluster } = await this.lookup.cluster(org, envSlug, clusterSlug);
    const access = await this.txHost.tx.getRepository(ClusterAccessEntity).findOne({ where: { clusterId: cluster.id } });
    if (!access?.apiEndpoint || !access.caCertificate) {
      throw new ConflictException(
        `Cluster '${envSlug}/${clusterSlug}' has no provisioned control plane yet (status '${cluster.status}', provisionStatus '${cluster.provisionStatus}'); ` +
          'its OIDC configuration is available once provisioning has passed CLUSTER_PROVISIONED.',
      );
    }
    return {
      cluster,
      endpoint: access.apiEndpoint,
      caCertificate: access.caCertificate,
      clientId: access.oidcClientId,
      clientSecret: this.secrets.open(access.oidcClientSecretCiphertext, clusterOidcSecretContext(cluster.identity)),
      issuerUrl: this.issuerUrl,
    };
  }

  /** The answer holds the client secret; SecretResponseInterceptor shows it only to whom its declaration allows. */
  async oidcConfig(org: OrganisationEntity, envSlug: string, clusterSlug: string): Promise<ClusterOidcConfigResponse> {
    const a = await this.resolve(org, envSlug, clusterSlug);
    return {
      endpoint: a.endpoint,
      caCertificate: a.caCertificate,
      clientId: a.clientId,
      clientSecret: a.clientSecret,
      issuerUrl: a.issuerUrl,
    };
  }

  /** A kubeconfig (YAML) whose user logs in through the `kubectl oidc-login` exec plugin. */
  async kubeconfig(org: OrganisationEntity, envSlug: string, clusterSlug: string): Promise<string> {
    const a = await this.resolve(org, envSlug, clusterSlug);
    const name = `${org.slug}-${envSlug}-${clusterSlug}`;
    const user = `oidc-${name}`;
    return stringify(
      {
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name, cluster: { server: a.endpoint, 'certificate-authority-data': Buffer.from(a.caCertificate, 'utf8').toString('base64') } }],
        users: [
          {
            name: user,
            user: {
              exec: {
                apiVersion: 'client.authentication.k8s.io/v1beta1',
                command: 'kubectl',
                args: [
                  'oidc-login',
                  'get-token',
                  `--oidc-issuer-url=${a.issuerUrl}`,
                  `--oidc-client-id=${a.clientId}`,
                  `--oidc-client-secret=${a.clientSecret}`,
                ],
                interactiveMode: 'IfAvailable',
                provideClusterInfo: false,
              },
            },
          },
        ],
        contexts: [{ name, context: { cluster: name, user } }],
        'current-context': name,
        preferences: {},
      },
      { lineWidth: 0 },
    );
  }
}
