import { ApiProperty } from '@nestjs/swagger';
import { Secret, SecretOptions } from '../../common/secret-fields';

/** The cluster's OIDC client secret: MEMBER and above, through a credential that may write. */
export const CLUSTER_OIDC_SECRET: SecretOptions = { readableFrom: 'MEMBER' };

/** ClusterMetadataResponse of the original client: how to reach a cluster and log in to it with OIDC. */
export class ClusterOidcConfigResponse {
  @ApiProperty({ example: 'https://web-1a2b3c4d.eu-central-1.clusters.example.net:6443', description: "The cluster's Kubernetes API server" })
  endpoint: string;

  @ApiProperty({ example: '-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n', description: "PEM of the CA that signed the API server's certificate" })
  caCertificate: string;

  @ApiProperty({ example: 'cluster-0b7e0c1e-4f55-4b9a-9e51-0f1f3a9d2c11', description: "The cluster's OIDC client id" })
  clientId: string;

  @ApiProperty({ example: '<secret>', description: 'The OIDC client secret' })
  @Secret(CLUSTER_OIDC_SECRET)
  clientSecret: string;

  @ApiProperty({ example: 'https://login.example.com', description: 'The OIDC issuer users log in with (OIDC_ISSUER_URL)' })
  issuerUrl: string;
}
