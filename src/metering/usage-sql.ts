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

export type UsageScope = 'organisation' | 'platform';

/**
 * Priced segments: each interval of the ledger clipped to [from, to) and to "as of", cut where its price changes
 * (a part no price covers has price_identity null), and with `byDay` also cut at each UTC midnight. Columns: the
 * interval's, plus ps/pe (the segment), seconds (exact), units (node count, 1 for a control plane), price_identity,
 * currency, unit_price (the organisation type's, else the list price), list_unit_price, day (with byDay).
 */
export function segmentsCte(scope: UsageScope, byDay: boolean): string {
  const where = scope === 'organisation' ? 'ui.organisation_id = $1 AND' : '$1::bigint IS NULL AND';
  return `WITH ${TIMELINE},
  u AS (
    SELECT ui.*, GREATEST(ui.started_at, $2::timestamptz) AS s,
           LEAST(COALESCE(ui.ended_at, 'infinity'::timestamptz), $4::timestamptz, $3::timestamptz) AS e,
           COALESCE($5::text, o.type) AS org_type
      FROM usage_intervals ui LEFT JOIN organisations o ON o.id = ui.organisation_id
     WHERE ${where} ui.started_at < $3::timestamptz AND (ui.ended_at IS NULL OR ui.ended_at > $2::timestamptz)
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
      ? `seg AS (
    SELECT p.*, GREATEST(p.ps, d.d) AS sps, LEAST(p.pe, d.d + interval '1 day') AS spe, (d.d AT TIME ZONE 'UTC')::date AS day
      FROM priced p
      CROSS JOIN LATERAL generate_series(date_trunc('day', p.ps, 'UTC'), p.pe - interval '1 microsecond', interval '1 day') AS d(d)
  ),
  segments AS (
    SELECT seg.*, extract(epoch FROM seg.spe) - extract(epoch FROM seg.sps) AS seconds, COALESCE(seg.node_count, 1) AS units
      FROM seg WHERE seg.spe > seg.sps
  )`
      : `segments AS (
    SELECT priced.*, priced.ps AS sps, priced.pe AS spe, NULL::date AS day,
           extract(epoch FROM priced.pe) - extract(epoch FROM priced.ps) AS seconds, COALESCE(priced.node_count, 1) AS units
      FROM priced WHERE priced.pe > priced.ps
  )`
  }`;
}

/** Exact amounts of a group of segments, then rounded once (ADR 0201). */
export const AMOUNTS = `
    round(sum(seconds * units) / 3600, 6) AS quantity,
    round(sum(CASE WHEN kind = 'CONTROL_PLANE' THEN seconds ELSE 0 END) / 3600, 6) AS control_plane_hours,
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
