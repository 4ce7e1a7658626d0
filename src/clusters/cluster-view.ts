import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { NodePoolNodeEntity } from './byon/node-pool-node.entity';
import type { ClusterNodePoolEntity } from './cluster-node-pool.entity';
import { conditionsView } from './cluster-conditions';
import { clusterViews, ClusterRow, ViewOptions } from './cluster-read';
import type { ClusterResponse } from './dto/cluster.dto';
import type { NodePoolResponse } from './dto/node-pool.dto';

export type { ViewOptions } from './cluster-read';

const iso = (d: Date | null | undefined): string | null => (d ? new Date(d).toISOString() : null);

/** ClusterResponse and NodePoolResponse views, read inside the request transaction (SQL in cluster-read.ts). */
@Injectable()
export class ClusterView {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async one(c: ClusterRow, opts: ViewOptions = {}): Promise<ClusterResponse> {
    return (await this.many([c], opts))[0];
  }

  many(clusters: ClusterRow[], opts: ViewOptions = {}): Promise<ClusterResponse[]> {
    return clusterViews((text, params) => this.txHost.tx.query(text, params), clusters, opts);
  }

  /** `nodes` are the registered nodes of a bring-your-own-node pool (`byon`); cloud pools count minSize. */
  nodePool(p: ClusterNodePoolEntity, byon = false, nodes: NodePoolNodeEntity[] = []): NodePoolResponse {
    return {
      id: Number(p.id),
      identity: p.identity,
      name: p.name,
      availabilityZone: p.availabilityZone,
      nodeSize: p.nodeSize,
      autoScaling: p.autoScaling,
      minSize: Number(p.minSize),
      maxSize: Number(p.maxSize),
      enableNodeAutoReplacement: p.enableNodeAutoReplacement,
      enableNodeReboots: p.enableNodeReboots,
      upgradeStrategy: p.upgradeStrategy,
      annotations: p.annotations ?? {},
      labels: p.labels ?? {},
      taints: p.taints ?? [],
      provisionStatus: p.provisionStatus,
      nodeCount: byon ? nodes.length : Number(p.minSize),
      nodes: nodes.map((n) => ({
        identity: n.identity,
        name: n.name,
        address: n.address,
        kubeletVersion: n.kubeletVersion,
        cpu: n.cpu,
        memory: n.memory === null ? null : Number(n.memory),
        joinedAt: iso(n.joinedAt)!,
        lastRegisteredAt: iso(n.lastRegisteredAt)!,
      })),
      createdAt: iso(p.createdAt)!,
      modifiedAt: iso(p.modifiedAt)!,
      generation: Number(p.generation ?? 1),
      observedGeneration: p.observedGeneration == null ? null : Number(p.observedGeneration),
      conditions: conditionsView(p.conditions, Number(p.generation ?? 1), p.observedGeneration == null ? null : Number(p.observedGeneration), p.modifiedAt),
    };
  }
}
