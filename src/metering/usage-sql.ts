/**
 * The SQL that prices the usage ledger (docs/metering.md, ADR 0201). Every amount is computed here, on `numeric`:
 * no JavaScript number ever holds money.
 *
 * Parameters of every statement built here: $1 organisation id (ignored for the platform scope), $2 from, $3 to,
 * $4 as of (open intervals end there), $5 organisation type to price with (null: the organisation's current type).
 */

/** The price book as a timeline per key: every entry's period, and the gaps between them (identity null: no price). */
const TIMELINE = `
  timeline AS (
    SELECT kind, cloud_provider, region, node_type, highly_available, identity, currency, list_price_per_hour, organisation_type_prices,
           effective_from AS f, valid_to AS t
      FROM price_book_periods
    UNION ALL
    SELECT kind, cloud_provider, region, node_type, highly_available, NULL, NULL, NULL, NULL, prev_to, effective_from
      FROM (SELECT *, COALESCE(LAG(valid_to) OVER (PARTITION BY kind, cloud_provider, region, node_type, highly_available ORDER BY effective_from),
                               '-infinity'::timestamptz) AS prev_to
              FROM price_book_periods) g
     WHERE prev_to < effective_from
    UNION ALL
    SELECT kind, cloud_provider, region, node_type, highly_available, NULL, NULL, NULL, NULL, valid_to, 'infinity'::timestamptz
      FROM (SELECT *, LEAD(effective_from) OVER (PARTITION BY kind, cloud_provider, region, node_type, highly_available ORDER BY effective_from) AS next_from
              FROM price_book_periods) g
     WHERE next_from IS NULL AND valid_to < 'infinity'::timestamptz
  )`;

/** usage_intervals' columns but the three a piece of an interval has of its own (started_at, ended_at, node_count). */
const INTERVAL_COLUMNS = [
  'id', 'kind', 'organisation_id', 'environment_id', 'environment_slug', 'cluster_id', 'cluster_identity', 'cluster_slug', 'cluster_name',
  'cloud_provider', 'region', 'highly_available', 'node_pool_id', 'node_pool_identity', 'node_pool_name', 'node_type',
];

/**
 * The ledger as intervals (docs/metering.md, ADR 0210): usage_intervals, each pool interval cut at the resizes recorded
 * in it (usage_pool_resizes: from each, the pool ran that many nodes), which are the intervals a resize used to end and
 * open. CTEs `iv` (the intervals that `filter`, a condition on `ui`, selects), `cuts` and `ledger`: usage_intervals'
 * columns, with started_at, ended_at and node_count those of each piece, and `extra`'s. A piece keeps its interval's
 * id. Only open intervals hold recorded resizes (the general way writes them out before it changes any), so the cuts
 * are few: the intervals are read once and the resizes joined to them.
 */
export function ledgerIntervalsCte(filter: string, extra?: { columns: string[]; select: string; join: string }): string {
  const columns = [...INTERVAL_COLUMNS, ...(extra?.columns ?? [])];
  const list = (alias: string) => columns.map((c) => `${alias}.${c}`).join(', ');
  return `iv AS NOT MATERIALIZED (
    SELECT ui.*${extra ? `, ${extra.select}` : ''} FROM usage_intervals ui ${extra?.join ?? ''} WHERE ${filter}
  ),
  cuts AS (
    SELECT iv.*, r.resized_at, r.id AS resize_id, r.node_count AS resized_count
      FROM iv JOIN usage_pool_resizes r ON r.node_pool_id = iv.node_pool_id
     WHERE iv.kind = 'NODES' AND r.resized_at > iv.started_at AND (iv.ended_at IS NULL OR r.resized_at < iv.ended_at)
  ),
  ledger AS (
    SELECT * FROM (
      SELECT ${list('iv')}, iv.node_count, iv.started_at, COALESCE(f.first_cut, iv.ended_at) AS ended_at
        FROM iv LEFT JOIN (SELECT id, min(resized_at) AS first_cut FROM cuts GROUP BY id) f ON f.id = iv.id
      UNION ALL
      SELECT ${list('c')}, c.resized_count, c.resized_at,
             COALESCE(lead(c.resized_at) OVER (PARTITION BY c.id ORDER BY c.resized_at, c.resize_id), c.ended_at)
        FROM cuts c
    ) pieces
    WHERE pieces.ended_at IS NULL OR pieces.ended_at > pieces.started_at
  )`;
}

export type UsageScope = 'organisation' | 'platform';

/**
 * Priced segments: each interval of the ledger clipped to [from, to) and to "as of", cut where its price changes
 * (a part no price covers has price_identity null). Columns: the interval's, plus ps/pe (the segment), seconds
 * (exact), units (node count, 1 for a control plane), price_identity, currency, unit_price (the organisation type's,
 * else the list price), list_unit_price.
 *
 * With `byDay`, for the usage by UTC day, rows of kind, price_identity, unit_price, list_unit_price, units, day and
 * seconds only, with the same sums per day as each segment cut at every midnight: a segment's part of its first and
 * of its last day is a row of its own, and the whole days between are counted, not generated: each segment adds its
 * units from its second day and takes them away from its last, a running sum over the window's days gives each
 * day's units per price, and a whole day is one row of 86,400 seconds times those units. A month of 40,000
 * intervals makes some 80,000 rows instead of one per interval and day (1.2 million).
 */
export function segmentsCte(scope: UsageScope, byDay: boolean): string {
  const where = scope === 'organisation' ? 'ui.organisation_id = $1 AND' : '$1::bigint IS NULL AND';
  return `WITH ${TIMELINE},
  ${ledgerIntervalsCte(
    `${where} ui.started_at < $3::timestamptz AND (ui.ended_at IS NULL OR ui.ended_at > $2::timestamptz)`,
    { columns: ['org_type'], select: 'COALESCE($5::text, o.type) AS org_type', join: 'LEFT JOIN organisations o ON o.id = ui.organisation_id' },
  )},
  u AS (
    SELECT l.*, GREATEST(l.started_at, $2::timestamptz) AS s,
           LEAST(COALESCE(l.ended_at, 'infinity'::timestamptz), $4::timestamptz, $3::timestamptz) AS e
      FROM ledger l
  ),
  priced AS (
    SELECT u.*, tl.identity AS price_identity, tl.currency,
           GREATEST(u.s, tl.f) AS ps, LEAST(u.e, tl.t) AS pe,
           CASE WHEN tl.identity IS NULL THEN NULL
                ELSE COALESCE((tl.organisation_type_prices ->> u.org_type)::numeric, tl.list_price_per_hour) END AS unit_price,
           tl.list_price_per_hour AS list_unit_price
      FROM u LEFT JOIN timeline tl
        ON tl.kind = CASE u.kind WHEN 'NODES' THEN 'NODE' ELSE 'CONTROL_PLANE' END
       AND tl.cloud_provider = u.cloud_provider AND tl.region = u.region
       AND tl.node_type IS NOT DISTINCT FROM u.node_type
       AND tl.highly_available IS NOT DISTINCT FROM (CASE WHEN u.kind = 'CONTROL_PLANE' THEN u.highly_available END)
       AND tl.f < u.e AND tl.t > u.s
     WHERE u.e > u.s
  ),
  ${
    byDay
      ? `cut AS (
    SELECT p.kind, p.price_identity, p.unit_price, p.list_unit_price, COALESCE(p.node_count, 1) AS units, p.ps, p.pe,
           date_trunc('day', p.ps, 'UTC') AS d0, date_trunc('day', p.pe - interval '1 microsecond', 'UTC') AS d1
      FROM priced p WHERE p.pe > p.ps
  ),
  pieces AS (
    SELECT kind, price_identity, unit_price, list_unit_price, units, d0 AS d, ps AS sps, LEAST(pe, d0 + interval '24 hours') AS spe FROM cut
    UNION ALL
    SELECT kind, price_identity, unit_price, list_unit_price, units, d1, d1, pe FROM cut WHERE d1 > d0
  ),
  deltas AS (
    SELECT kind, price_identity, unit_price, list_unit_price, d0 + interval '24 hours' AS d, units AS delta FROM cut WHERE d1 > d0 + interval '24 hours'
    UNION ALL
    SELECT kind, price_identity, unit_price, list_unit_price, d1, -units FROM cut WHERE d1 > d0 + interval '24 hours'
  ),
  whole AS (
    SELECT k.kind, k.price_identity, k.unit_price, k.list_unit_price, c.d,
           sum(COALESCE(x.delta, 0)) OVER (PARTITION BY k.kind, k.price_identity, k.unit_price, k.list_unit_price ORDER BY c.d) AS units
      FROM (SELECT DISTINCT kind, price_identity, unit_price, list_unit_price FROM deltas) k
      CROSS JOIN generate_series(date_trunc('day', $2::timestamptz, 'UTC'), $3::timestamptz, interval '24 hours') AS c(d)
      LEFT JOIN (SELECT kind, price_identity, unit_price, list_unit_price, d, sum(delta) AS delta FROM deltas GROUP BY 1, 2, 3, 4, 5) x
        ON x.kind = k.kind AND x.price_identity IS NOT DISTINCT FROM k.price_identity AND x.unit_price IS NOT DISTINCT FROM k.unit_price
       AND x.list_unit_price IS NOT DISTINCT FROM k.list_unit_price AND x.d = c.d
  ),
  segments AS (
    SELECT kind, price_identity, unit_price, list_unit_price, units, (d AT TIME ZONE 'UTC')::date AS day,
           extract(epoch FROM spe) - extract(epoch FROM sps) AS seconds
      FROM pieces WHERE spe > sps
    UNION ALL
    SELECT kind, price_identity, unit_price, list_unit_price, units, (d AT TIME ZONE 'UTC')::date, 86400
      FROM whole WHERE units <> 0
  )`
      : `segments AS (
    SELECT priced.*, priced.ps AS sps, priced.pe AS spe, NULL::date AS day,
           extract(epoch FROM priced.pe) - extract(epoch FROM priced.ps) AS seconds, COALESCE(priced.node_count, 1) AS units
      FROM priced WHERE priced.pe > priced.ps
  )`
  }`;
}

/**
 * Exact amounts of a group of segments, then rounded once (ADR 0201). A control plane's units are 1, except in the
 * whole-day rows of the usage by day, which stand for as many control planes as ran that day.
 */
export const AMOUNTS = `
    round(sum(seconds * units) / 3600, 6) AS quantity,
    round(sum(CASE WHEN kind = 'CONTROL_PLANE' THEN seconds * units ELSE 0 END) / 3600, 6) AS control_plane_hours,
    round(sum(CASE WHEN kind = 'NODES' THEN seconds * units ELSE 0 END) / 3600, 6) AS node_hours,
    round(COALESCE(sum(seconds * units * unit_price) / 3600, 0), 2) AS billed_cost,
    round(COALESCE(sum(seconds * units * list_unit_price) / 3600, 0), 2) AS list_cost,
    round(sum(CASE WHEN price_identity IS NULL THEN seconds * units ELSE 0 END) / 3600, 6) AS unpriced_quantity`;

/**
 * Statement lines: one per cluster resource (control plane or node pool), SKU and price, over the window, ordered
 * stably. The names are the latest the ledger holds for the resource.
 */
export function linesSql(scope: UsageScope): string {
  return `${segmentsCte(scope, false)}
  SELECT organisation_id, kind, cluster_id, node_pool_id, cloud_provider, region, node_type, highly_available, price_identity,
         max(currency) AS currency, max(unit_price) AS unit_price, max(list_unit_price) AS list_unit_price,
         (array_agg(environment_id ORDER BY started_at DESC))[1] AS environment_id,
         (array_agg(environment_slug ORDER BY started_at DESC))[1] AS environment_slug,
         (array_agg(cluster_identity ORDER BY started_at DESC))[1] AS cluster_identity,
         (array_agg(cluster_slug ORDER BY started_at DESC))[1] AS cluster_slug,
         (array_agg(cluster_name ORDER BY started_at DESC))[1] AS cluster_name,
         (array_agg(node_pool_identity ORDER BY started_at DESC))[1] AS node_pool_identity,
         (array_agg(node_pool_name ORDER BY started_at DESC))[1] AS node_pool_name,
         min(sps) AS charge_period_start, max(spe) AS charge_period_end,
         ${AMOUNTS}
    FROM segments
   GROUP BY organisation_id, kind, cluster_id, node_pool_id, cloud_provider, region, node_type, highly_available, price_identity
   ORDER BY organisation_id, cluster_id, kind, node_pool_id NULLS FIRST, min(sps), price_identity NULLS FIRST`;
}
