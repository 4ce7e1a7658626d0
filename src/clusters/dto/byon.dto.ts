import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsIP, IsOptional, IsString, IsUUID, Length, Matches, Max, MaxLength, Min } from 'class-validator';

/** NodeJoinConfigVersions of the original client. */
export class NodeJoinConfigVersionsDto {
  @ApiProperty({ example: '24.1', description: 'Oldest cloud-init release the user data is written for' }) cloudInit: string;
  @ApiProperty({ example: '1.31.5', description: "The version the cluster's control plane runs (the kubelet installed); the new one once an upgrade is done" }) kubernetes: string;
  @ApiProperty({ example: '1.7.24' }) containerd: string;
  @ApiProperty({ example: '1.31.1' }) crictl: string;
}

/** NodePoolJoinConfig of the original client. Carries a fresh bootstrap token: shown once, never again. */
export class NodePoolJoinConfigResponse {
  @ApiProperty({ type: NodeJoinConfigVersionsDto }) versions: NodeJoinConfigVersionsDto;

  @ApiProperty({ description: 'base64 of cloud-init user data (#cloud-config) that writes and runs the install script, then the join command' })
  cloudInitUserDataBase64: string;

  @ApiProperty({ description: 'base64 of a bash script installing containerd, runc, crictl and the kubelet of these versions' })
  installScriptBase64: string;

  @ApiProperty({ description: "base64 of a bash script upgrading an installed node to these versions (follows the cluster's version)" })
  upgradeScriptBase64: string;

  @ApiProperty({
    example: "sudo /usr/local/bin/cms-node-join --api-url 'https://cms.example.com' --node-pool '7f0c...' --token 'cmsjoin_...'",
    description: 'Registers the machine in this node pool and starts the kubelet; contains the bootstrap token',
  })
  joinCommand: string;

  @ApiProperty({ description: 'base64 of the KubeletConfiguration (YAML) the install script writes' })
  kubeletConfigBase64: string;
}

/** DNS-1123 subdomain: a valid Kubernetes node name. */
export const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const KUBELET_VERSION = /^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]{1,64})?$/;

/** Body of a node registration (sent by the join command). */
export class NodeRegistrationRequest {
  @ApiProperty({ example: 'worker-01', maxLength: 253, description: 'Kubernetes node name (DNS-1123 subdomain); unique per node pool' })
  @IsString() @Length(1, 253) @Matches(NODE_NAME, { message: 'name must be a lowercase DNS-1123 subdomain (letters, digits, - and .)' })
  name: string;

  @ApiProperty({ example: '10.20.0.11', maxLength: 45, description: 'IPv4 or IPv6 address of the node' })
  @IsString() @MaxLength(45) @IsIP(undefined, { message: 'address must be an IPv4 or IPv6 address' })
  address: string;

  @ApiProperty({ example: 'v1.31.5', description: 'What `kubelet --version` reports' })
  @IsString() @Length(5, 80) @Matches(KUBELET_VERSION, { message: 'kubeletVersion must look like v1.31.5' })
  kubeletVersion: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'The node pool the token was issued for; when given it must match the token. Left out: the token\'s pool' })
  @IsOptional() @IsUUID()
  nodePoolIdentity?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 4096, description: 'Cores of the node (counted in compute). Left out: unknown (null), counted as 0' })
  @IsOptional() @IsInt() @Min(1) @Max(4096)
  cpu?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 64 * 1024 * 1024, description: 'Memory of the node in MiB (counted in compute). Left out: unknown (null), counted as 0' })
  @IsOptional() @IsInt() @Min(1) @Max(64 * 1024 * 1024)
  memory?: number;
}

export class NodeRegistrationResponse {
  @ApiProperty({ format: 'uuid' }) identity: string;
  @ApiProperty() name: string;
  @ApiProperty() address: string;
  @ApiProperty() kubeletVersion: string;
  @ApiProperty({ type: 'integer', nullable: true }) cpu: number | null;
  @ApiProperty({ type: 'integer', format: 'int64', nullable: true }) memory: number | null;
  @ApiProperty({ format: 'date-time' }) joinedAt: string;
  @ApiProperty({ format: 'date-time' }) lastRegisteredAt: string;
  @ApiProperty({ format: 'uuid' }) nodePoolIdentity: string;
  @ApiProperty({ format: 'uuid' }) clusterIdentity: string;
  @ApiProperty({ description: 'false when an already registered node of this name was updated' }) created: boolean;
}

export class JoinTokensRevokedResponse {
  @ApiProperty({ type: 'integer' }) revoked: number;
}
