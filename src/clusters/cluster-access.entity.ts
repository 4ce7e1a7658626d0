import { Column, Entity, PrimaryColumn } from 'typeorm';

/** How clients reach a cluster: API endpoint and CA (from the driver) and the cluster's OIDC client. */
@Entity('cluster_access')
export class ClusterAccessEntity {
  @PrimaryColumn({ type: 'bigint' }) clusterId: number;
  @Column({ type: 'text' }) oidcClientId: string;
  /** SecretBox envelope bound to the cluster identity (see CLUSTER_OIDC_SECRET_CONTEXT). */
  @Column({ type: 'text' }) oidcClientSecretCiphertext: string;
  @Column({ type: 'text', nullable: true }) apiEndpoint: string | null;
  /** PEM. */
  @Column({ type: 'text', nullable: true }) caCertificate: string | null;
  @Column({ type: 'timestamptz' }) createdAt: Date;
  @Column({ type: 'timestamptz' }) modifiedAt: Date;
}

/** SecretBox context of a cluster's OIDC client secret. */
export const clusterOidcSecretContext = (clusterIdentity: string) => `cluster-oidc-client:${clusterIdentity}`;
