import { TransactionHost } from '@nestjs-cls/transactional';
import { isUuid } from '../common/uuid';
import { nodePoolAuditEntry } from './node-pool-audit';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { auditDiff } from '../audit/audit-diff';
import { AuditRecorder } from '../audit/audit-recorder';
import { In } from 'typeorm';
import { Clock } from '../common/clock';
import { isByon } from './byon/byon-rules';
import { NodePoolNodeEntity } from './byon/node-pool-node.entity';
import type { EnvironmentRef } from './cluster-read';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { ClusterLookup } from './cluster-lookup';
import { ClusterNodePoolEntity, NodePoolUpgradeStrategy } from './cluster-node-pool.entity';
import { ClusterRules } from './cluster-rules';
import type { ClusterEntity } from './cluster.entity';
import { ClusterView } from './cluster-view';
import { ClusterChangeGate } from './cluster-change-gate';
import { applyPoolDefaults, type CreateClusterNodePoolDto, type NodePoolResponse, type UpdateNodePoolDto } from './dto/node-pool.dto';

const AUDITED = [
  'name',
  'nodeSize',
  'availabilityZone',
  'autoScaling',
  'minSize',
  'maxSize',
  'enableNodeAutoReplacement',
  'enableNodeReboots',
  'upgradeStrategy',
  'annotations',
  'labels',
  'taints',
] as const;


/** Node pools of a cluster: list, add, replace (PUT), remove. */
@Injectable()
export class NodePoolsService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly lookup: ClusterLookup,
    private readonly rules: ClusterRules,
    private readonly view: ClusterView,
    private readonly auditRecorder: AuditRecorder,
    private readonly policies: ClusterChangeGate,
  ) {}

  private get repo() {
    return this.txHost.tx.getRepository(ClusterNodePoolEntity);
  }

  async list(org: OrganisationEntity, envSlug: string, clusterSlug: string): Promise<NodePoolResponse[]> {
    const { cluster } = await this.lookup.cluster(org, envSlug, clusterSlug);
    const pools = await this.repo.find({ where: { clusterId: cluster.id }, order: { id: 'ASC' } });
    return this.views(cluster, pools);
  }

  async create(org: OrganisationEntity, envSlug: string, clusterSlug: string, body: CreateClusterNodePoolDto): Promise<NodePoolResponse> {
    const { environment, cluster } = await this.lookup.cluster(org, envSlug, clusterSlug, true);
    this.assertChangeable(cluster);
    const taken = new Set((await this.repo.find({ where: { clusterId: cluster.id }, select: { name: true } })).map((p) => p.name));
    applyPoolDefaults(body, taken);
    await this.rules.checkPool(body, cluster.cloudProvider, cluster.region);
    await this.assertNameFree(cluster, body.name);
    const policySnapshot = await this.policies.before(cluster);
    const now = this.clock.now();
    // ACCEPTED until the cluster driver reports the generation that created it applied (the reconciler marks it DONE);
    // a bring-your-own-node pool once a node registered into it.
    const inserted = await this.repo.insert({
      clusterId: cluster.id,
      ...this.fields(body),
      provisionStatus: 'ACCEPTED',
      createdAt: now,
      modifiedAt: now,
    });
    const pool = await this.repo.findOneByOrFail({ id: Number(inserted.identifiers[0].id) });
    await this.policies.enforce({ clusterId: Number(cluster.id), operation: 'UPDATE', resource: 'nodePools', before: policySnapshot });
    this.record('NODE_POOL_CREATED', org, environment, cluster, pool, auditDiff(null, pick(pool)));
    return (await this.views(cluster, [pool]))[0];
  }

  async update(
    org: OrganisationEntity,
    envSlug: string,
    clusterSlug: string,
    nodePoolId: string,
    update: UpdateNodePoolDto,
  ): Promise<NodePoolResponse> {
    const { environment, cluster } = await this.lookup.cluster(org, envSlug, clusterSlug, true);
    const pool = await this.find(cluster, nodePoolId);
    this.assertChangeable(cluster);
    const body: CreateClusterNodePoolDto = { ...update, name: update.name ?? pool.name };
    applyPoolDefaults(body, new Set());
    await this.rules.checkPool(body, cluster.cloudProvider, cluster.region);
    if (body.name !== pool.name) await this.assertNameFree(cluster, body.name);
    const before = pick(pool);
    const policySnapshot = await this.policies.before(cluster);
    const now = this.clock.now();
    await this.repo.update({ id: pool.id }, { ...this.fields(body), modifiedAt: now });
    await this.policies.enforce({ clusterId: Number(cluster.id), operation: 'UPDATE', resource: 'nodePools', before: policySnapshot });
    const after = await this.repo.findOneByOrFail({ id: pool.id });
    this.record('NODE_POOL_UPDATED', org, environment, cluster, after, auditDiff(before, pick(after)));
    return (await this.views(cluster, [after]))[0];
  }

  async remove(org: OrganisationEntity, envSlug: string, clusterSlug: string, nodePoolId: string): Promise<void> {
    const { environment, cluster } = await this.lookup.cluster(org, envSlug, clusterSlug, true);
    const pool = await this.find(cluster, nodePoolId);
    // A cluster may run without node pools (they are often managed as separate resources, e.g. by Terraform).
    this.assertChangeable(cluster);
    const policySnapshot = await this.policies.before(cluster);
    // The delete's time for the usage ledger (its trigger takes the deleted row's modified_at; docs/metering.md).
    await this.repo.update({ id: pool.id }, { modifiedAt: this.clock.now() });
    await this.repo.delete({ id: pool.id });
    await this.policies.enforce({ clusterId: Number(cluster.id), operation: 'UPDATE', resource: 'nodePools', before: policySnapshot });
    this.record('NODE_POOL_DELETED', org, environment, cluster, pool, auditDiff(pick(pool), null));
  }

  /** Responses for pools of one cluster, with the registered nodes of bring-your-own-node pools. */
  private async views(cluster: ClusterEntity, pools: ClusterNodePoolEntity[]): Promise<NodePoolResponse[]> {
    const byon = isByon(cluster.cloudProvider);
    const nodes = byon && pools.length
      ? await this.txHost.tx.getRepository(NodePoolNodeEntity).find({ where: { nodePoolId: In(pools.map((p) => p.id)) }, order: { name: 'ASC' } })
      : [];
    return pools.map((p) => this.view.nodePool(p, byon, nodes.filter((n) => Number(n.nodePoolId) === Number(p.id))));
  }

  /** The pool addressed by identity (uuid) or numeric id, or 404. */
  findPool(cluster: ClusterEntity, nodePoolId: string): Promise<ClusterNodePoolEntity> {
    return this.find(cluster, nodePoolId);
  }

  private fields(body: CreateClusterNodePoolDto) {
    return {
      name: body.name,
      nodeSize: body.nodeSize,
      availabilityZone: body.availabilityZone ?? null,
      autoScaling: body.autoScaling ?? false,
      minSize: body.minSize,
      maxSize: body.maxSize,
      enableNodeAutoReplacement: body.enableNodeAutoReplacement ?? true,
      enableNodeReboots: body.enableNodeReboots ?? false,
      upgradeStrategy: (body.upgradeStrategy ?? 'REPLACE') as NodePoolUpgradeStrategy,
      annotations: body.annotations ?? {},
      labels: body.labels ?? {},
      taints: (body.taints ?? []).map((t) => ({ key: t.key, value: t.value, effect: t.effect as never })),
    };
  }

  private async find(cluster: ClusterEntity, nodePoolId: string): Promise<ClusterNodePoolEntity> {
    // Addressed by identity (uuid) or by the numeric id the original clients use.
    const where = isUuid(nodePoolId)
      ? { clusterId: cluster.id, identity: nodePoolId }
      : /^[1-9][0-9]{0,15}$/.test(nodePoolId)
        ? { clusterId: cluster.id, id: Number(nodePoolId) }
        : null;
    const pool = where ? await this.repo.findOne({ where }) : null;
    if (!pool) throw new NotFoundException(`Node pool '${nodePoolId}' was not found in cluster '${cluster.slug}'.`);
    return pool;
  }

  private assertChangeable(cluster: ClusterEntity): void {
    if (cluster.status === 'deleting' || cluster.status === 'deleted' || cluster.desiredStatus === 'deleting') {
      throw new ConflictException(`The cluster is being deleted; its node pools cannot change.`);
    }
  }

  private async assertNameFree(cluster: ClusterEntity, name: string): Promise<void> {
    if (await this.repo.exists({ where: { clusterId: cluster.id, name } })) {
      throw new ConflictException(`A node pool named '${name}' already exists in cluster '${cluster.slug}'; choose another name.`);
    }
  }

  private record(
    type: string,
    org: OrganisationEntity,
    env: EnvironmentRef,
    cluster: ClusterEntity,
    pool: ClusterNodePoolEntity,
    details: ReturnType<typeof auditDiff>,
  ): void {
    this.auditRecorder.record(nodePoolAuditEntry(type, org, env, cluster, pool, details));
  }
}

function pick(p: ClusterNodePoolEntity): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of AUDITED) {
    const v = (p as unknown as Record<string, unknown>)[k];
    out[k] = k === 'minSize' || k === 'maxSize' ? Number(v) : v;
  }
  return out;
}
