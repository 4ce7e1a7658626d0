import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { In } from 'typeorm';
import { isByon } from '../clusters/byon/byon-rules';
import { NodePoolNodeEntity } from '../clusters/byon/node-pool-node.entity';
import { ClusterNodePoolEntity } from '../clusters/cluster-node-pool.entity';
import { clusterViews, ClusterRow, CLUSTER_SELECT } from '../clusters/cluster-read';
import { ClusterView } from '../clusters/cluster-view';
import { slugObject } from '../common/slug';
import type { PolicyClusterObject, PolicyEnvironmentVariable, PolicyOrganisationVariable } from './policy-variables';

export interface EnvironmentFacts {
  id: number;
  slug: string;
  type: string | null;
  variable: PolicyEnvironmentVariable;
}

/**
 * Builds the policy variables from the clusters' read models: the cluster response of cluster-read.ts (with the
 * update operation's extras and compute) plus the node pool responses of ClusterView, one statement per kind
 * for a whole batch of clusters.
 */
@Injectable()
export class PolicyInputs {
  private readonly view: ClusterView;

  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {
    this.view = new ClusterView(txHost);
  }

  private readonly sql = (text: string, params: unknown[]) => this.txHost.tx.query(text, params) as Promise<Record<string, any>[]>;

  async clusterRows(ids: number[]): Promise<ClusterRow[]> {
    if (!ids.length) return [];
    return (await this.sql(`SELECT ${CLUSTER_SELECT} FROM clusters c WHERE c.id = ANY($1::bigint[]) ORDER BY c.id`, [ids])) as ClusterRow[];
  }

  /**
   * The policy objects of these clusters, in their order. `fields` (a policy's projection, see
   * PolicyEvaluator.objectFields) limits what is read and what the objects carry: only those fields.
   */
  async objects(rows: ClusterRow[], fields: ReadonlySet<string> | null = null): Promise<PolicyClusterObject[]> {
    if (!rows.length) return [];
    const views = await clusterViews(this.sql, rows, { extended: true, showCompute: true, fields: fields ?? undefined });
    // Projected: only the fields the policy reads (the worker converts no others), not a copy of the whole view: a
    // dry-run shapes up to 500 clusters, and those copies were the largest allocation of its work on the event loop.
    if (fields && !fields.has('nodePools')) return views.map((view) => project(view, fields) as PolicyClusterObject);
    const ids = rows.map((r) => Number(r.id));
    const pools = await this.txHost.tx.getRepository(ClusterNodePoolEntity).find({ where: { clusterId: In(ids) }, order: { id: 'ASC' } });
    const rowById = new Map(rows.map((r) => [Number(r.id), r]));
    const byonPools = pools.filter((p) => isByon(rowById.get(Number(p.clusterId))!.cloudProvider));
    const nodes = byonPools.length
      ? await this.txHost.tx.getRepository(NodePoolNodeEntity).find({ where: { nodePoolId: In(byonPools.map((p) => p.id)) }, order: { name: 'ASC' } })
      : [];
    // Grouped once (a batch holds hundreds of clusters and their pools), order kept.
    const poolsOf = groupBy(pools, (p) => Number(p.clusterId));
    const nodesOf = groupBy(nodes, (n) => Number(n.nodePoolId));
    return rows.map((row, i) => {
      const byon = isByon(row.cloudProvider);
      const nodePools = (poolsOf.get(Number(row.id)) ?? []).map((p) => this.view.nodePool(p, byon, nodesOf.get(Number(p.id)) ?? []));
      if (fields) return { ...project(views[i], fields), nodePools } as PolicyClusterObject;
      const { actualState: _omit, ...view } = views[i];
      void _omit;
      return { ...view, nodePools } as PolicyClusterObject;
    });
  }

  async environments(ids: number[]): Promise<Map<number, EnvironmentFacts>> {
    const rows = ids.length
      ? await this.sql(`SELECT id, identity, name, slug, type, purpose, description FROM environments WHERE id = ANY($1::bigint[])`, [[...new Set(ids)]])
      : [];
    return new Map(
      rows.map((e) => [
        Number(e.id),
        {
          id: Number(e.id),
          slug: e.slug,
          type: e.type,
          variable: { identity: e.identity, name: e.name, slug: slugObject(e.slug), type: e.type, purpose: e.purpose, description: e.description },
        },
      ]),
    );
  }

  async organisation(id: number): Promise<PolicyOrganisationVariable & { id: number; slugValue: string }> {
    const [o] = await this.sql(`SELECT id, identity, name, slug, type, upgrade_soak_hours FROM organisations WHERE id = $1`, [id]);
    return {
      id: Number(o.id),
      slugValue: o.slug,
      identity: o.identity,
      name: o.name,
      slug: slugObject(o.slug),
      type: o.type,
      upgradeSoakHours: o.upgrade_soak_hours ?? 24,
    };
  }
}

/** The view's fields a policy reads (PolicyEvaluator.objectFields), and no others; `nodePools` is the caller's. */
function project(view: object, fields: ReadonlySet<string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) if (f !== 'nodePools' && f !== 'actualState' && Object.hasOwn(view, f)) out[f] = (view as Record<string, unknown>)[f];
  return out;
}

function groupBy<T>(xs: T[], key: (x: T) => number): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const x of xs) {
    const k = key(x);
    const list = out.get(k);
    if (list) list.push(x);
    else out.set(k, [x]);
  }
  return out;
}
