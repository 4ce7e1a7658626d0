import { TransactionHost } from '@nestjs-cls/transactional';
import type { RateLimitState } from '../../auth/request-rate-limits';
import { nodePoolAuditEntry } from '../node-pool-audit';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable, UnauthorizedException } from '@nestjs/common';
import { createHash, randomBytes } from 'crypto';
import { auditDiff } from '../../audit/audit-diff';
import { AuditRecorder } from '../../audit/audit-recorder';
import type { Principal } from '../../identity/principal';
import { RequestRateLimits } from '../../auth/request-rate-limits';
import { Clock } from '../../common/clock';
import { AppConfig } from '../../config/app-config';
import type { OrganisationEntity } from '../../identity/organisation.entity';
import { ClusterAccessEntity } from '../cluster-access.entity';
import { ClusterLookup } from '../cluster-lookup';
import { ClusterNodePoolEntity } from '../cluster-node-pool.entity';
import type { ClusterRow, EnvironmentRef } from '../cluster-read';
import { ClusterEntity } from '../cluster.entity';
import type { JoinTokensRevokedResponse, NodePoolJoinConfigResponse, NodeRegistrationRequest, NodeRegistrationResponse } from '../dto/byon.dto';
import { NodePoolsService } from '../node-pools.service';
import { BYON_PROVIDER, isByon } from './byon-rules';
import { NodeJoinTokenEntity } from './node-join-token.entity';
import {
  CLOUD_INIT_VERSION,
  cloudInitUserData,
  componentsFor,
  installScript,
  joinCommand,
  kubeletConfig,
  NodeJoinInputs,
  upgradeScript,
} from './node-join-content';
import { NodePoolNodeEntity } from './node-pool-node.entity';

/** Prefix of node join tokens (recognisable by secret scanners, distinct from `cms_` personal access tokens). */
export const JOIN_TOKEN_PREFIX = 'cmsjoin_';
export const generateJoinToken = () => JOIN_TOKEN_PREFIX + randomBytes(32).toString('base64url');
export const hashJoinToken = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const iso = (d: Date) => new Date(d).toISOString();

/**
 * Bring-your-own-node pools: join configs (install/upgrade scripts, kubelet config, cloud-init and a join
 * command carrying a fresh bootstrap token of that pool), token revocation, and the registration the join
 * command makes. Rules in docs/adr/0070-node-join-configs-and-registration.md.
 */
@Injectable()
export class NodeJoinService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly lookup: ClusterLookup,
    private readonly pools: NodePoolsService,
    private readonly auditRecorder: AuditRecorder,
    private readonly limits: RequestRateLimits,
  ) {}

  /** The pool, its cluster and environment, after checking the cluster is a BYON cluster that is not being deleted. */
  private async byonPool(org: OrganisationEntity, envSlug: string, clusterSlug: string, nodePoolId: string, lock = false) {
    const { environment, cluster } = await this.lookup.cluster(org, envSlug, clusterSlug, lock);
    const pool = await this.pools.findPool(cluster, nodePoolId);
    if (!isByon(cluster.cloudProvider)) {
      throw new ConflictException(
        `Node pool '${pool.name}' belongs to cluster '${envSlug}/${clusterSlug}' on cloud provider ${cluster.cloudProvider}, whose nodes the platform provisions; ` +
          `join configs exist only for bring-your-own-node (${BYON_PROVIDER}) clusters.`,
      );
    }
    if (cluster.status === 'deleting' || cluster.status === 'deleted' || cluster.desiredStatus === 'deleting') {
      throw new ConflictException(`Cluster '${envSlug}/${clusterSlug}' is being deleted; no node can join it.`);
    }
    return { environment, cluster, pool };
  }

  async createJoinConfig(
    org: OrganisationEntity,
    principal: Principal,
    envSlug: string,
    clusterSlug: string,
    nodePoolId: string,
  ): Promise<NodePoolJoinConfigResponse> {
    const { environment, cluster, pool } = await this.byonPool(org, envSlug, clusterSlug, nodePoolId);
    const access = await this.txHost.tx.getRepository(ClusterAccessEntity).findOne({ where: { clusterId: cluster.id } });
    if (!access?.apiEndpoint || !access.caCertificate) {
      throw new ConflictException(
        `Cluster '${envSlug}/${clusterSlug}' has no provisioned control plane yet (provisionStatus '${cluster.provisionStatus}'); ` +
          'nodes can join once provisioning has passed CLUSTER_PROVISIONED.',
      );
    }

    const now = this.clock.now();
    const token = generateJoinToken();
    const maxNodes = Math.max(1, Number(pool.maxSize));
    const expiresAt = new Date(now.getTime() + this.config.NODE_JOIN_TOKEN_TTL_MINUTES * 60_000);
    const repo = this.txHost.tx.getRepository(NodeJoinTokenEntity);
    const inserted = await repo.insert({
      clusterId: cluster.id,
      nodePoolId: pool.id,
      tokenHash: hashJoinToken(token),
      maxNodes,
      registeredNodes: 0,
      createdBy: principal.user.username,
      createdAt: now,
      expiresAt,
      revokedAt: null,
      lastUsedAt: null,
    });
    const row = await repo.findOneByOrFail({ id: Number(inserted.identifiers[0].id) });

    const inputs = this.inputs(org, environment, cluster, pool, access);
    this.record('NODE_POOL_JOIN_CONFIG_CREATED', org, environment, cluster, pool, {
      // The token itself is never recorded: its identity, expiry and node budget are.
      joinTokenIdentity: { old: null, new: row.identity },
      expiresAt: { old: null, new: iso(expiresAt) },
      maxNodes: { old: null, new: maxNodes },
      kubernetesVersion: { old: null, new: inputs.kubernetesVersion },
    });
    return {
      versions: {
        cloudInit: CLOUD_INIT_VERSION,
        kubernetes: inputs.kubernetesVersion,
        containerd: inputs.components.containerd,
        crictl: inputs.components.crictl,
      },
      cloudInitUserDataBase64: b64(cloudInitUserData(inputs, token)),
      installScriptBase64: b64(installScript(inputs)),
      upgradeScriptBase64: b64(upgradeScript(inputs)),
      joinCommand: joinCommand(inputs, token),
      kubeletConfigBase64: b64(kubeletConfig(inputs)),
    };
  }

  private inputs(
    org: OrganisationEntity,
    env: EnvironmentRef,
    cluster: ClusterRow,
    pool: ClusterNodePoolEntity,
    access: ClusterAccessEntity,
  ): NodeJoinInputs {
    // The version the control plane runs: while an upgrade is under way nodes keep the old one (a kubelet must
    // not be newer than its API server); once it is done the join config and upgrade script follow.
    const version = cluster.observedVersion ?? cluster.version;
    return {
      clusterName: `${org.slug}/${env.slug}/${cluster.slug}`,
      nodePoolName: pool.name,
      nodePoolIdentity: pool.identity,
      kubernetesVersion: version,
      components: componentsFor(version),
      apiEndpoint: access.apiEndpoint!,
      caCertificate: access.caCertificate!,
      serviceSubnet: cluster.serviceSubnet,
      labels: pool.labels ?? {},
      taints: pool.taints ?? [],
      registrationUrl: this.config.PUBLIC_API_URL.replace(/\/$/, ''),
    };
  }

  /** Revokes every token of the pool that is not revoked yet (expired ones included, harmlessly). */
  async revokeTokens(org: OrganisationEntity, envSlug: string, clusterSlug: string, nodePoolId: string): Promise<JoinTokensRevokedResponse> {
    const { environment, cluster, pool } = await this.byonPool(org, envSlug, clusterSlug, nodePoolId);
    const now = this.clock.now();
    // Expired tokens are closed too, without counting them as revoked.
    const [{ n }]: { n: number }[] = await this.txHost.tx.query(
      `WITH closed AS (UPDATE node_join_tokens SET revoked_at = $2 WHERE node_pool_id = $1 AND revoked_at IS NULL RETURNING expires_at)
       SELECT count(*) FILTER (WHERE expires_at > $2)::int AS n FROM closed`,
      [pool.id, now],
    );
    this.record('NODE_POOL_JOIN_TOKENS_REVOKED', org, environment, cluster, pool, { revokedTokens: { old: n, new: 0 } });
    return { revoked: n };
  }

  /**
   * A node registers with its pool's bootstrap token (`Authorization: Bearer <token>`). 401 for a missing,
   * unknown, revoked, expired or used-up token, or one of another pool than `nodePoolIdentity`; failures count
   * against the caller's address like failed logins. Re-registering a name updates the node.
   */
  /** `onBudget` receives the join token's rate-limit budget once it is counted (the controller reports it in headers). */
  async register(
    ip: string,
    authorization: string | undefined,
    body: NodeRegistrationRequest,
    onBudget: (state: RateLimitState) => void = () => undefined,
  ): Promise<NodeRegistrationResponse> {
    await this.limits.assertMayAuthenticate(ip);
    const refuse = async (reason: string, message: string): Promise<never> => {
      await this.limits.recordFailure(ip, reason);
      throw new UnauthorizedException(message);
    };
    const match = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
    if (!match) return refuse('missing', 'A node join token is required: Authorization: Bearer <token> (from the join command).');
    const tx = this.txHost.tx;
    const tokens = tx.getRepository(NodeJoinTokenEntity);
    const found = await tokens.findOne({ where: { tokenHash: hashJoinToken(match[1]) } });
    if (!found) return refuse('unknown', 'Unknown node join token; create a join config for the node pool to get one.');
    // Lock order pool -> token, as deleting a pool (which cascades to its tokens) takes them.
    await tx.query(`SELECT id FROM cluster_node_pools WHERE id = $1 FOR UPDATE`, [found.nodePoolId]);
    const token = await tokens.createQueryBuilder('t').where('t.id = :id', { id: found.id }).setLock('pessimistic_write').getOne();
    if (!token) return refuse('unknown', 'Unknown node join token; create a join config for the node pool to get one.');
    const now = this.clock.now();
    if (token.revokedAt) return refuse('revoked', 'This node join token was revoked; create a new join config for the node pool.');
    if (token.expiresAt.getTime() <= now.getTime()) return refuse('expired', 'This node join token expired; create a new join config for the node pool.');
    const pool = await tx.getRepository(ClusterNodePoolEntity).findOne({ where: { id: token.nodePoolId } });
    if (!pool) return refuse('unknown', 'The node pool of this join token no longer exists.');
    if (body.nodePoolIdentity && body.nodePoolIdentity !== pool.identity) {
      return refuse('unknown', `This node join token is not valid for node pool ${body.nodePoolIdentity}.`);
    }
    const budget = await this.limits.consumeNodeRegistration(`node-join-token:${token.id}`);
    if (budget) onBudget(budget);

    const cluster = await tx.getRepository(ClusterEntity).findOneByOrFail({ id: token.clusterId });
    if (cluster.deletedAt || cluster.status === 'deleting' || cluster.status === 'deleted' || cluster.desiredStatus === 'deleting') {
      throw new ConflictException(`Cluster '${cluster.slug}' is being deleted; no node can join it.`);
    }
    // The pool row lock taken above serialises registrations into one pool (same name twice, the maxSize count).
    const nodes = tx.getRepository(NodePoolNodeEntity);
    const existing = await nodes.findOne({ where: { nodePoolId: pool.id, name: body.name } });
    const fields = {
      address: body.address,
      kubeletVersion: body.kubeletVersion,
      cpu: body.cpu ?? null,
      memory: body.memory ?? null,
      joinTokenId: token.id,
      lastRegisteredAt: now,
    };
    let node: NodePoolNodeEntity;
    if (existing) {
      // The same machine again (a re-run of the join command, a reinstall): no new node, no budget spent.
      await nodes.update({ id: existing.id }, fields);
      node = await nodes.findOneByOrFail({ id: existing.id });
    } else {
      if (token.registeredNodes >= token.maxNodes) {
        return refuse('exhausted', `This node join token has already registered its ${token.maxNodes} node(s); create a new join config for more nodes.`);
      }
      const [{ n }] = await tx.query(`SELECT count(*)::int AS n FROM node_pool_nodes WHERE node_pool_id = $1`, [pool.id]);
      if (n >= Number(pool.maxSize)) {
        throw new ConflictException(
          `Node pool '${pool.name}' already has ${n} node(s), its maxSize; raise maxSize or remove a node before registering '${body.name}'.`,
        );
      }
      const inserted = await nodes.insert({ clusterId: cluster.id, nodePoolId: pool.id, name: body.name, joinedAt: now, ...fields });
      node = await nodes.findOneByOrFail({ id: Number(inserted.identifiers[0].id) });
      await tx.getRepository(NodeJoinTokenEntity).update({ id: token.id }, { registeredNodes: token.registeredNodes + 1 });
    }
    await tx.getRepository(NodeJoinTokenEntity).update({ id: token.id }, { lastUsedAt: now });
    if (pool.provisionStatus !== 'DONE') {
      await tx.getRepository(ClusterNodePoolEntity).update({ id: pool.id }, { provisionStatus: 'DONE', modifiedAt: now });
    }

    const [refs] = await tx.query(
      `SELECT o.slug AS org_slug, e.slug AS env_slug FROM organisations o JOIN environments e ON e.id = $2 WHERE o.id = $1`,
      [cluster.organisationId, cluster.environmentId],
    );
    const picked = (n: NodePoolNodeEntity | null) =>
      n ? { name: n.name, address: n.address, kubeletVersion: n.kubeletVersion, cpu: n.cpu, memory: n.memory === null ? null : Number(n.memory) } : null;
    this.auditRecorder.record({
      type: 'NODE_REGISTERED',
      organisation: { id: cluster.organisationId, slug: refs.org_slug },
      environment: { id: cluster.environmentId, slug: refs.env_slug },
      cluster: { id: cluster.id, slug: cluster.slug },
      nodePool: { id: Number(pool.id), name: pool.name },
      referencedEntityIdentity: node.identity,
      subject: `${node.name} in node pool ${pool.name} of cluster ${refs.env_slug}/${cluster.slug}`,
      message: `node ${node.name} ${existing ? 're-registered in' : 'joined'} node pool ${pool.name} of cluster ${refs.env_slug}/${cluster.slug}`,
      details: { ...auditDiff(picked(existing), picked(node)), joinTokenIdentity: { old: null, new: token.identity } },
    });
    return {
      identity: node.identity,
      name: node.name,
      address: node.address,
      kubeletVersion: node.kubeletVersion,
      cpu: node.cpu,
      memory: node.memory === null ? null : Number(node.memory),
      joinedAt: iso(node.joinedAt),
      lastRegisteredAt: iso(node.lastRegisteredAt),
      nodePoolIdentity: pool.identity,
      clusterIdentity: cluster.identity,
      created: !existing,
    };
  }

  private record(
    type: string,
    org: OrganisationEntity,
    env: EnvironmentRef,
    cluster: ClusterRow,
    pool: ClusterNodePoolEntity,
    details: Record<string, { old: unknown; new: unknown }>,
  ): void {
    this.auditRecorder.record(nodePoolAuditEntry(type, org, env, cluster, pool, details));
  }
}
