import { AMOUNTS, segmentsCte } from '../../src/metering/usage-sql';
import { createOrgFixture, OrgFixture } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';
import { seededRandom } from '../support/seeded-random';

/**
 * The usage by UTC day counts the whole days of a segment instead of generating a row for each (src/metering/usage-sql.ts,
 * segmentsCte with byDay). It must give, day for day and to the last digit, what cutting every segment at every
 * midnight gives: the reference below is that formulation (generate_series per segment, as the service did before),
 * over a pseudo-random ledger (seeded, so a failure repeats) of control planes and node pools of several sizes, open
 * and closed, starting before the window and ending after it, at any second, across a price change, with priced and
 * unpriced node types, for windows on and off midnight and an "as of" in the middle of a day.
 */
const SEED = 41;
const INTERVALS = 400;

describe('usage by day', () => {
  let t: TestApp;
  let f: OrgFixture;

  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
    t.clock.set(new Date('2026-03-20T09:00:00Z'));
    const price = async (body: Record<string, unknown>) => {
      const res = await t.admin().post('/admin/v1/price-book').send({ cloudProvider: 'platform_1', region: 'eu-central-1', currency: 'EUR', ...body });
      expect(res.status).toBe(200);
    };
    await price({ kind: 'CONTROL_PLANE', highlyAvailable: false, listPricePerHour: '0.10', organisationTypePrices: { BUSINESS: '0.08' }, effectiveFrom: '2026-04-01T00:00:00Z' });
    await price({ kind: 'CONTROL_PLANE', highlyAvailable: true, listPricePerHour: '0.30', effectiveFrom: '2026-04-01T00:00:00Z' });
    await price({ kind: 'NODE', nodeType: 'm5.large', listPricePerHour: '0.096', organisationTypePrices: { BUSINESS: '0.09' }, effectiveFrom: '2026-04-01T00:00:00Z' });
    await price({ kind: 'NODE', nodeType: 'm5.large', listPricePerHour: '0.12', organisationTypePrices: { BUSINESS: '0.11' }, effectiveFrom: '2026-04-16T07:30:00Z' });
    await price({ kind: 'NODE', nodeType: 'm5.xlarge', listPricePerHour: '0.192', effectiveFrom: '2026-04-01T00:00:00Z' });

    const random = seededRandom(SEED);
    const base = Date.parse('2026-03-25T00:00:00Z');
    const span = 45 * 86_400_000;
    const rows: unknown[][] = [];
    for (let i = 1; i <= INTERVALS; i++) {
      const nodes = random() < 0.6;
      // Whole seconds, whole hours and whole days, so that segments also start and end at midnight.
      const grain = [1000, 3_600_000, 86_400_000][Math.floor(random() * 3)];
      const start = base + Math.floor((random() * span) / grain) * grain;
      const length = Math.ceil((random() * 20 * 86_400_000) / grain) * grain;
      const end = random() < 0.2 ? null : new Date(start + length);
      rows.push([
        nodes ? 'NODES' : 'CONTROL_PLANE',
        700000 + i,
        nodes ? null : random() < 0.3,
        nodes ? 800000 + i : null,
        nodes ? ['m5.large', 'm5.xlarge', 'c5.large'][Math.floor(random() * 3)] : null,
        nodes ? 1 + Math.floor(random() * 5) : null,
        new Date(start),
        end,
      ]);
    }
    for (const [kind, cluster, ha, pool, nodeType, count, startedAt, endedAt] of rows) {
      await t.db.query(
        `INSERT INTO usage_intervals (kind, organisation_id, environment_id, environment_slug, cluster_id, cluster_identity, cluster_slug, cluster_name,
                                      cloud_provider, region, highly_available, node_pool_id, node_pool_identity, node_pool_name, node_type, node_count,
                                      started_at, ended_at)
         VALUES ($1, $2, $3, $4, $5::bigint, gen_random_uuid(), 'c-' || $5::text, 'c-' || $5::text, 'platform_1', 'eu-central-1', $6, $7::bigint,
                 CASE WHEN $7::bigint IS NOT NULL THEN gen_random_uuid() END, CASE WHEN $7::bigint IS NOT NULL THEN 'p' END, $8, $9, $10, $11)`,
        [kind, f.orgId, f.envId, f.envSlug, cluster, ha, pool, nodeType, count, startedAt, endedAt],
      );
    }
  });

  afterAll(() => t.close());

  /** Each segment cut at every midnight by generate_series, summed per day: the reference. */
  const reference = async (from: string, to: string, asOf: string) => {
    const rows: Record<string, string>[] = await t.db.query(
      `${segmentsCte('organisation', false)},
       cut AS (
         SELECT p.*, GREATEST(p.ps, d.d) AS sps, LEAST(p.pe, d.d + interval '1 day') AS spe, (d.d AT TIME ZONE 'UTC')::date AS day
           FROM priced p
           CROSS JOIN LATERAL generate_series(date_trunc('day', p.ps, 'UTC'), p.pe - interval '1 microsecond', interval '1 day') AS d(d)
       ),
       daily AS (
         SELECT cut.*, extract(epoch FROM cut.spe) - extract(epoch FROM cut.sps) AS seconds, COALESCE(cut.node_count, 1) AS units
           FROM cut WHERE cut.spe > cut.sps
       )
       SELECT to_char(day, 'YYYY-MM-DD') AS day, q.control_plane_hours::text AS cp, q.node_hours::text AS nodes, q.billed_cost::text AS billed,
              q.list_cost::text AS list, q.unpriced_quantity::text AS unpriced
         FROM (SELECT day, ${AMOUNTS} FROM daily GROUP BY day) q ORDER BY day`,
      [f.orgId, from, to, asOf, null],
    );
    return rows.map((r) => ({ day: r.day, controlPlaneHours: r.cp, nodeHours: r.nodes, billedCost: r.billed, listCost: r.list, unpricedHours: r.unpriced }));
  };

  const byDay = async (from: string, to: string) => {
    const res = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/usage?from=${from}&to=${to}&groupBy=day`);
    expect(res.status).toBe(200);
    return res.body as { to: string; groups: Record<string, string>[] };
  };

  it.each([
    ['a calendar month, over by now (as of the middle of a day)', '2026-04-01T00:00:00Z', '2026-05-01T00:00:00Z', '2026-04-23T14:27:13Z'],
    ['a month that is over', '2026-04-01T00:00:00Z', '2026-05-01T00:00:00Z', '2026-06-02T00:00:00Z'],
    ['a window off midnight, across the price change', '2026-04-03T05:17:00Z', '2026-04-18T07:29:59Z', '2026-06-02T00:00:00Z'],
    ['a window within one day', '2026-04-10T01:00:00Z', '2026-04-10T22:00:00Z', '2026-06-02T00:00:00Z'],
  ])('%s: day for day what cutting every segment at midnight gives', async (_name, from, to, now) => {
    t.clock.set(new Date(now));
    const res = await byDay(from, to);
    const expected = await reference(from, to, res.to);
    expect(expected.length).toBeGreaterThan(0);
    expect(res.groups.map((g) => ({ day: g.day, controlPlaneHours: g.controlPlaneHours, nodeHours: g.nodeHours, billedCost: g.billedCost, listCost: g.listCost, unpricedHours: g.unpricedHours }))).toEqual(expected);
  });
});
