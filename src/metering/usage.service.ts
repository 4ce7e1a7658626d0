import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { ValidationFailedException } from '../common/errors';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { UsageAmounts, UsageGroup, UsageGroupBy, UsageQuery, UsageResponse } from './dto/usage.dto';
import { AMOUNTS, segmentsCte } from './usage-sql';

const DAY_MS = 86_400_000;
/** The longest window a usage query covers. */
export const MAX_USAGE_WINDOW_DAYS = 366;

const latest = (column: string) => `(array_agg(${column} ORDER BY started_at DESC))[1]`;

/** Per groupBy: the GROUP BY, the key columns and the order (stable: ties broken by ids). */
const GROUPS: Record<UsageGroupBy, { group: string; select: string; order: string }> = {
  environment: {
    group: 'environment_id',
    select: `environment_id, ${latest('environment_slug')} AS environment_slug`,
    order: 'environment_slug, environment_id',
  },
  cluster: {
    group: 'cluster_id',
    select: `cluster_id, ${latest('environment_slug')} AS environment_slug, ${latest('cluster_identity')} AS cluster_identity, ${latest('cluster_name')} AS cluster_name`,
    order: 'environment_slug, cluster_name, cluster_id',
  },
  nodePool: {
    group: 'cluster_id, kind, node_pool_id',
    select:
      `cluster_id, node_pool_id, ${latest('environment_slug')} AS environment_slug, ${latest('cluster_identity')} AS cluster_identity, ` +
      `${latest('cluster_name')} AS cluster_name, kind AS resource, ${latest('node_pool_identity')} AS node_pool_identity, ${latest('node_pool_name')} AS node_pool_name`,
    order: 'environment_slug, cluster_name, cluster_id, resource, node_pool_name NULLS FIRST, node_pool_id',
  },
  nodeType: {
    group: 'kind, node_type, highly_available',
    select: 'kind AS resource, node_type, highly_available',
    order: 'resource, node_type NULLS FIRST, highly_available',
  },
  day: { group: 'day', select: `to_char(day, 'YYYY-MM-DD') AS day`, order: 'day' },
};

/** Usage of an organisation over a window, grouped, priced with the price book (docs/metering.md). */
@Injectable()
export class UsageService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
  ) {}

  async usage(org: OrganisationEntity, q: UsageQuery): Promise<UsageResponse> {
    const now = this.clock.now();
    const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const from = q.from ? new Date(q.from) : monthStart;
    const requestedTo = q.to ? new Date(q.to) : now;
    if (requestedTo.getTime() <= from.getTime()) throw ValidationFailedException.forField('to', 'to must be after from');
    if (requestedTo.getTime() - from.getTime() > MAX_USAGE_WINDOW_DAYS * DAY_MS) {
      throw ValidationFailedException.forField('to', `the window from..to may cover at most ${MAX_USAGE_WINDOW_DAYS} days`);
    }
    const to = requestedTo.getTime() > now.getTime() ? now : requestedTo;
    const groupBy = q.groupBy ?? 'cluster';
    const g = GROUPS[groupBy];
    const rows: Record<string, any>[] =
      to.getTime() > from.getTime()
        ? await this.txHost.tx.query(
            // numeric travels as text (the driver parses numeric into a JavaScript number otherwise).
            `SELECT grouped.*, control_plane_hours::text AS cp_t, node_hours::text AS nodes_t, billed_cost::text AS billed_t,
                    list_cost::text AS list_t, unpriced_quantity::text AS unpriced_t,
                    (sum(control_plane_hours) OVER ())::text AS t_cp, (sum(node_hours) OVER ())::text AS t_nodes,
                    (sum(billed_cost) OVER ())::text AS t_billed, (sum(list_cost) OVER ())::text AS t_list,
                    (sum(unpriced_quantity) OVER ())::text AS t_unpriced
               FROM (${segmentsCte('organisation', groupBy === 'day')}
                     SELECT ${g.select}, ${AMOUNTS} FROM segments GROUP BY ${g.group}) grouped
              ORDER BY ${g.order}`,
            [org.id, from, to, now, null],
          )
        : [];
    const [{ currency }] = await this.txHost.tx.query(`SELECT min(currency) AS currency FROM price_book_entries`);
    const amounts = (r: Record<string, any>): UsageAmounts => ({
      controlPlaneHours: r.cp_t,
      nodeHours: r.nodes_t,
      billedCost: r.billed_t,
      listCost: r.list_t,
      unpricedHours: r.unpriced_t,
    });
    const groups: UsageGroup[] = rows.map((r) => ({
      environmentSlug: r.environment_slug ?? null,
      clusterIdentity: r.cluster_identity ?? null,
      clusterName: r.cluster_name ?? null,
      resource: r.resource ?? null,
      nodePoolIdentity: r.node_pool_identity ?? null,
      nodePoolName: r.node_pool_name ?? null,
      nodeType: r.node_type ?? null,
      highlyAvailable: groupBy === 'nodeType' && r.resource === 'CONTROL_PLANE' ? r.highly_available : null,
      day: r.day ?? null,
      ...amounts(r),
    }));
    const first = rows[0];
    const total: UsageAmounts = first
      ? { controlPlaneHours: first.t_cp, nodeHours: first.t_nodes, billedCost: first.t_billed, listCost: first.t_list, unpricedHours: first.t_unpriced }
      : { controlPlaneHours: '0.000000', nodeHours: '0.000000', billedCost: '0.00', listCost: '0.00', unpricedHours: '0.000000' };
    return {
      organisation: org.slug,
      from: from.toISOString(),
      to: to.getTime() > from.getTime() ? to.toISOString() : from.toISOString(),
      groupBy,
      timeZone: 'UTC',
      currency: currency ?? null,
      groups,
      total,
    };
  }
}
