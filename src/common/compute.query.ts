import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';

export interface ComputeTotals {
  totalClusters: number;
  totalCpu: number;
  totalMemory: number;
}

export interface ClusterCompute {
  cpu: number;
  memory: number;
}

/**
 * Pool compute per cluster: cpu (cores) and memory (MiB) times each pool's minSize for cloud pools, plus
 * what the registered nodes of bring-your-own-node pools reported (their pools have no catalog node type,
 * so the first branch finds nothing for them). Callers append `WHERE ... GROUP BY p.cluster_id`.
 */
export const POOL_COMPUTE_SQL = `
    SELECT p.cluster_id, SUM(p.cpu)::bigint AS cpu, SUM(p.memory)::bigint AS memory
      FROM (SELECT cp_pool.cluster_id, nt.cpu * cp_pool.min_size AS cpu, nt.memory * cp_pool.min_size AS memory
              FROM cluster_node_pools cp_pool
              JOIN clusters cp_c ON cp_c.id = cp_pool.cluster_id
              JOIN cloud_providers cp ON cp.type = cp_c.cloud_provider
              JOIN cloud_provider_node_types nt ON nt.provider_id = cp.id AND nt.type = cp_pool.node_size
            UNION ALL
            SELECT n.cluster_id, COALESCE(n.cpu, 0), COALESCE(n.memory, 0) FROM node_pool_nodes n) p
      JOIN clusters c ON c.id = p.cluster_id`;

type Sql = (text: string, params: unknown[]) => Promise<Record<string, any>[]>;

/** cpu/memory of each given cluster (0 when it has no pools); framework-free so the benchmark baseline shares it. */
export async function computeByCluster(sql: Sql, clusterIds: number[]): Promise<Map<number, ClusterCompute>> {
  const out = new Map<number, ClusterCompute>();
  for (const id of clusterIds) out.set(id, { cpu: 0, memory: 0 });
  if (!clusterIds.length) return out;
  const rows = await sql(`${POOL_COMPUTE_SQL} WHERE p.cluster_id = ANY($1) AND c.id = ANY($1) GROUP BY p.cluster_id`, [clusterIds]);
  for (const r of rows) out.set(Number(r.cluster_id), { cpu: Number(r.cpu), memory: Number(r.memory) });
  return out;
}

/**
 * Compute of docs/conventions.md ("Clusters and node pools"): over non-deleted clusters, node type cpu (cores) and memory (MiB) times
 * each pool's current size (minSize until autoscaling is simulated). Written once, used by
 * organisations, environments and clusters.
 */
@Injectable()
export class ComputeQuery {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async totals(scope: { organisationId: number; environmentId?: number }): Promise<ComputeTotals> {
    const params: number[] = [scope.organisationId];
    let where = 'c.organisation_id = $1 AND c.deleted_at IS NULL';
    if (scope.environmentId !== undefined) {
      params.push(scope.environmentId);
      where += ' AND c.environment_id = $2';
    }
    const [row] = await this.txHost.tx.query(
      `SELECT count(*)::bigint AS "totalClusters",
              COALESCE(SUM(pc.cpu), 0)::bigint AS "totalCpu",
              COALESCE(SUM(pc.memory), 0)::bigint AS "totalMemory"
         FROM clusters c
         LEFT JOIN (${POOL_COMPUTE_SQL} GROUP BY p.cluster_id) pc ON pc.cluster_id = c.id
        WHERE ${where}`,
      params,
    );
    return { totalClusters: Number(row.totalClusters), totalCpu: Number(row.totalCpu), totalMemory: Number(row.totalMemory) };
  }

  /** Per-environment totals for a list page, in one query. */
  async totalsByEnvironment(environmentIds: number[]): Promise<Map<number, ComputeTotals>> {
    const out = new Map<number, ComputeTotals>();
    if (!environmentIds.length) return out;
    const rows: { environment_id: number; totalClusters: number; totalCpu: number; totalMemory: number }[] =
      await this.txHost.tx.query(
        `SELECT c.environment_id, count(*)::bigint AS "totalClusters",
                COALESCE(SUM(pc.cpu), 0)::bigint AS "totalCpu", COALESCE(SUM(pc.memory), 0)::bigint AS "totalMemory"
           FROM clusters c
           LEFT JOIN (${POOL_COMPUTE_SQL} WHERE p.cluster_id IN (SELECT id FROM clusters WHERE environment_id = ANY($1)) GROUP BY p.cluster_id) pc
             ON pc.cluster_id = c.id
          WHERE c.environment_id = ANY($1) AND c.deleted_at IS NULL
          GROUP BY c.environment_id`,
        [environmentIds],
      );
    for (const id of environmentIds) out.set(id, { totalClusters: 0, totalCpu: 0, totalMemory: 0 });
    for (const r of rows)
      out.set(Number(r.environment_id), {
        totalClusters: Number(r.totalClusters),
        totalCpu: Number(r.totalCpu),
        totalMemory: Number(r.totalMemory),
      });
    return out;
  }

  /** cpu/memory of each given cluster (0 when it has no pools). */
  byCluster(clusterIds: number[]): Promise<Map<number, ClusterCompute>> {
    return computeByCluster((text, params) => this.txHost.tx.query(text, params), clusterIds);
  }
}
