import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { ClusterNodePoolEntity } from './cluster-node-pool.entity';
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

  nodePool(p: ClusterNodePoolEntity): NodePoolResponse {
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
      createdAt: iso(p.createdAt)!,
      modifiedAt: iso(p.modifiedAt)!,
    };
  }
}
