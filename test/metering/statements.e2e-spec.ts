import { StatementCloser } from '../../src/metering/statement-closer.service';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, settle } from '../clusters/cluster-fixtures';
import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { parseFocusCsv, validateFocus } from './focus-validator';

/**
 * Issue 41 step 3: a month driven by the clock (March 2026, UTC) with clusters created, scaled, upgraded, stopped
 * across a worker crash and deleted, across a price change on the 16th. The statement equals the hand-computed total
 * to the cent; reading it again, and closing again, gives the same bytes; a late change becomes a correction line.
 *
 * Prices (BUSINESS organisation; list in brackets), per hour:
 *   control plane standard 0.08 (0.10), HA 0.25 (0.30); m5.large node 0.09 (0.096) until 03-16, 0.11 (0.12) from
 *   03-16 00:00; m5.xlarge node: list only, 0.192.
 * alpha: created 03-01 00:00, standard, pool workers 2 x m5.large; scaled to 3 at 03-10 12:00; upgraded 03-12; runs on.
 *   control plane 744 h x 0.08 = 59.52 (74.40)
 *   workers at the first price: 2 x 228 h + 3 x 132 h = 852 node hours x 0.09 = 76.68 (x 0.096 = 81.792 -> 81.79)
 *   workers at the second price: 3 x 384 h = 1152 node hours x 0.11 = 126.72 (x 0.12 = 138.24)
 * bravo: created 03-05 06:00, HA, pool big 1 x m5.xlarge; stop asked 03-20 18:00, a worker dies mid-stop (rolled back),
 *   the next completes it at 18:30; deleted 03-25 while stopped.
 *   control plane 372.5 h x 0.25 = 93.125 -> 93.13 (x 0.30 = 111.75)
 *   big: 372.5 node hours x 0.192 = 71.52 (71.52)
 * Total 427.57 (list 477.70).
 */
const at = (s: string) => new Date(`2026-${s}Z`);

describe('usage and statements over a month', () => {
  let t: TestApp;
  let f: OrgFixture;
  let other: OrgFixture;
  const prices: Record<string, string> = {};

  const moveTo = (s: string) => t.clock.set(at(s));
  const price = async (body: Record<string, unknown>) => {
    const res = await t.admin().post('/admin/v1/price-book').send({ cloudProvider: 'platform_1', region: 'eu-central-1', currency: 'EUR', ...body });
    expect(res.status).toBe(200);
    return res.body.identity as string;
  };

  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
    other = await createOrgFixture(t);
    moveTo('02-20T09:00:00');
    prices.cp = await price({ kind: 'CONTROL_PLANE', highlyAvailable: false, listPricePerHour: '0.10', organisationTypePrices: { BUSINESS: '0.08' }, effectiveFrom: '2026-03-01T00:00:00Z' });
    prices.ha = await price({ kind: 'CONTROL_PLANE', highlyAvailable: true, listPricePerHour: '0.30', organisationTypePrices: { BUSINESS: '0.25' }, effectiveFrom: '2026-03-01T00:00:00Z' });
    prices.large1 = await price({ kind: 'NODE', nodeType: 'm5.large', listPricePerHour: '0.096', organisationTypePrices: { BUSINESS: '0.09' }, effectiveFrom: '2026-03-01T00:00:00Z' });
    prices.large2 = await price({ kind: 'NODE', nodeType: 'm5.large', listPricePerHour: '0.12', organisationTypePrices: { BUSINESS: '0.11' }, effectiveFrom: '2026-03-16T00:00:00Z' });
    prices.xlarge = await price({ kind: 'NODE', nodeType: 'm5.xlarge', listPricePerHour: '0.192', effectiveFrom: '2026-03-01T00:00:00Z' });

    const member = t.as(f.users.member.token);
    moveTo('03-01T00:00:00');
    expect((await member.post(clustersPath(f)).send(clusterBody(f, { name: 'alpha' }))).status).toBe(200);
    // Another organisation's cluster, running all month: never in this organisation's usage.
    expect((await t.as(other.users.member.token).post(clustersPath(other)).send(clusterBody(other, { name: 'elsewhere' }))).status).toBe(200);
    await settle(t);

    moveTo('03-05T06:00:00');
    const bravo = clusterBody(f, { name: 'bravo', enableHighAvailability: true, nodePools: [{ name: 'big', nodeSize: 'm5.xlarge', minSize: 1, maxSize: 1 }] });
    expect((await member.post(clustersPath(f)).send(bravo)).status).toBe(200);
    await settle(t);

    moveTo('03-10T12:00:00');
    const pools = (await member.get(`${clustersPath(f)}/alpha/pools`)).body;
    const workers = (Array.isArray(pools) ? pools : pools.content)[0].identity;
    expect((await member.put(`${clustersPath(f)}/alpha/pools/${workers}`).send({ nodeSize: 'm5.large', minSize: 3, maxSize: 4 })).status).toBe(200);

    moveTo('03-12T03:00:00');
    expect((await member.patch(`${clustersPath(f)}/alpha`).send({ version: '1.31.6' })).status).toBe(200);
    await settle(t);

    moveTo('03-20T18:00:00');
    expect((await member.patch(`${clustersPath(f)}/bravo`).send({ status: 'stopping' })).status).toBe(200);
    // A worker records the stop at 18:10 and dies before committing: nothing of it stays.
    const runner = t.db.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    await runner.query(`UPDATE clusters SET status = 'stopped', desired_status = NULL, modified_at = $2 WHERE slug = 'bravo' AND organisation_id = $1`, [
      f.orgId,
      at('03-20T18:10:00'),
    ]);
    await runner.rollbackTransaction();
    await runner.release();
    moveTo('03-20T18:30:00');
    await settle(t);

    moveTo('03-25T10:00:00');
    expect((await member.delete(`${clustersPath(f)}/bravo`)).status).toBeLessThan(300);
    await settle(t);
  });
  afterAll(() => t.close());

  const statement = (period = '2026-03') => t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/statements/${period}`);

  /** March's statement read in pages of 2 lines (and one past the end): the same lines, count and totals as `whole`. */
  async function expectPagesOfTwo(whole: { lines: { lineNumber: number }[]; totals: object; lineCount: number }) {
    const lines: { lineNumber: number }[] = [];
    for (const [page, length] of [[0, 2], [1, 2], [2, 1], [3, 0]]) {
      const res = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/statements/2026-03?page=${page}&size=2`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ lineCount: whole.lineCount, page, size: 2, totals: whole.totals });
      expect(res.body.lines).toHaveLength(length);
      lines.push(...res.body.lines);
    }
    expect(lines).toEqual(whole.lines);
    expect(lines.map((l) => l.lineNumber)).toEqual([1, 2, 3, 4, 5]);
    // Above the largest page: clamped to it.
    const big = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/statements/2026-03?size=100000`);
    expect(big.body).toMatchObject({ size: 500, lineCount: whole.lineCount });
  }

  it('the usage of the month, grouped by cluster, node type and day, priced once per group', async () => {
    moveTo('04-01T00:30:00');
    const usage = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/usage?from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z&groupBy=cluster`);
    expect(usage.status).toBe(200);
    expect(usage.body).toMatchObject({ organisation: f.orgSlug, groupBy: 'cluster', timeZone: 'UTC', currency: 'EUR', to: '2026-04-01T00:00:00.000Z' });
    expect(usage.body.groups.map((g: Record<string, string>) => [g.clusterName, g.controlPlaneHours, g.nodeHours, g.billedCost, g.listCost])).toEqual([
      ['alpha', '744.000000', '2004.000000', '262.92', '294.43'],
      ['bravo', '372.500000', '372.500000', '164.65', '183.27'],
    ]);
    expect(usage.body.total).toEqual({ controlPlaneHours: '1116.500000', nodeHours: '2376.500000', billedCost: '427.57', listCost: '477.70', unpricedHours: '0.000000' });

    const byType = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/usage?from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z&groupBy=nodeType`);
    expect(byType.body.groups.map((g: Record<string, unknown>) => [g.resource, g.nodeType, g.highlyAvailable, g.billedCost])).toEqual([
      ['CONTROL_PLANE', null, false, '59.52'],
      ['CONTROL_PLANE', null, true, '93.13'],
      ['NODES', 'm5.large', null, '203.40'],
      ['NODES', 'm5.xlarge', null, '71.52'],
    ]);
    const byDay = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/usage?from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z&groupBy=day`);
    expect(byDay.body.groups).toHaveLength(31);
    expect(byDay.body.groups[0]).toMatchObject({ day: '2026-03-01', controlPlaneHours: '24.000000', nodeHours: '48.000000', billedCost: '6.24' });
    expect(byDay.body.groups[15]).toMatchObject({ day: '2026-03-16', nodeHours: '96.000000' });

    const bad = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/usage?from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z`);
    expect(bad.status).toBe(400);
    expectErrorBody(bad.body, 400);
    const tooLong = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/usage?from=2025-01-01T00:00:00Z&to=2026-03-01T00:00:00Z`);
    expect(tooLong.status).toBe(400);
    const badGroup = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/usage?groupBy=team`);
    expect(badGroup.status).toBe(400);
  });

  it('no organisation sees another one’s usage', async () => {
    const own = await t.as(other.users.viewer.token).get(`/api/v1/orgs/${other.orgSlug}/usage?from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z`);
    expect(own.body.groups.map((g: { clusterName: string }) => g.clusterName)).toEqual(['elsewhere']);
    const mine = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/usage?from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z`);
    expect(mine.body.groups.map((g: { clusterName: string }) => g.clusterName)).not.toContain('elsewhere');
    for (const path of ['usage', 'statements', 'statements/2026-03']) {
      const res = await t.as(f.users.owner.token).get(`/api/v1/orgs/${other.orgSlug}/${path}`);
      expect(res.status).toBe(403);
    }
  });

  it('the statement equals the hand-computed total to the cent, open and once closed, and a second run gives the same bytes', async () => {
    moveTo('04-01T00:30:00');
    const open = await statement();
    expect(open.status).toBe(200);
    expect(open.body).toMatchObject({ period: '2026-03', status: 'OPEN', timeZone: 'UTC', asOf: '2026-04-01T00:00:00.000Z', organisationType: 'BUSINESS', currency: 'EUR' });
    const summary = (lines: Record<string, string>[]) =>
      lines.map((l) => [l.clusterName, l.resource, l.nodePoolName, l.skuId, l.priceEntryIdentity, l.unitPrice, l.quantity, l.unit, l.billedCost, l.listCost]);
    const expected = [
      ['alpha', 'CONTROL_PLANE', null, 'control-plane/platform_1/eu-central-1/standard', prices.cp, '0.08', '744.000000', 'Hours', '59.52', '74.40'],
      ['alpha', 'NODES', 'workers', 'node/platform_1/eu-central-1/m5.large', prices.large1, '0.09', '852.000000', 'Node-Hours', '76.68', '81.79'],
      ['alpha', 'NODES', 'workers', 'node/platform_1/eu-central-1/m5.large', prices.large2, '0.11', '1152.000000', 'Node-Hours', '126.72', '138.24'],
      ['bravo', 'CONTROL_PLANE', null, 'control-plane/platform_1/eu-central-1/ha', prices.ha, '0.25', '372.500000', 'Hours', '93.13', '111.75'],
      ['bravo', 'NODES', 'big', 'node/platform_1/eu-central-1/m5.xlarge', prices.xlarge, '0.192', '372.500000', 'Node-Hours', '71.52', '71.52'],
    ];
    expect(summary(open.body.lines)).toEqual(expected);
    expect(open.body.totals).toEqual({ billedCost: '427.57', listCost: '477.70', corrections: '0.00' });
    expect(open.body.lines[2]).toMatchObject({ chargePeriodStart: '2026-03-16T00:00:00.000Z', chargePeriodEnd: '2026-04-01T00:00:00.000Z' });
    // Up to 500 lines come whole; smaller pages put together are the statement, with the whole one's count and totals.
    expect(open.body).toMatchObject({ lineCount: 5, page: 0, size: 500 });
    await expectPagesOfTwo(open.body);

    // Within the grace hour nothing closes; after it the job closes the period.
    expect(await t.get(StatementCloser).runOnce()).toEqual({ closed: 0, corrections: 0 });
    moveTo('04-01T01:00:00');
    expect(await t.get(StatementCloser).runOnce()).toEqual({ closed: 2, corrections: 0 }); // February (empty) and March
    const closed = await statement();
    expect(closed.body).toMatchObject({ status: 'CLOSED', closedAt: '2026-04-01T01:00:00.000Z', asOf: '2026-04-01T00:00:00.000Z' });
    expect(summary(closed.body.lines)).toEqual(expected);
    expect(closed.body.totals).toEqual(open.body.totals);
    await expectPagesOfTwo(closed.body);
    const strip = (b: Record<string, any>) => JSON.stringify({ ...b, status: null, closedAt: null, lines: b.lines.map((l: object) => ({ ...l, recordedAt: null })) });
    expect(strip(closed.body)).toBe(strip(open.body));

    // A second run: the job again, the statement again (and later, with the organisation's type changed): the same bytes.
    moveTo('04-15T00:00:00');
    expect(await t.get(StatementCloser).runOnce()).toEqual({ closed: 0, corrections: 0 });
    await t.db.query(`UPDATE organisations SET type = 'ENTERPRISE' WHERE id = $1`, [f.orgId]);
    const again = await statement();
    expect(again.text).toBe(closed.text);
    await t.db.query(`UPDATE organisations SET type = 'BUSINESS' WHERE id = $1`, [f.orgId]);

    const list = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/statements`);
    expect(list.status).toBe(200);
    expect(list.body.content.map((s: Record<string, string>) => [s.period, s.status, s.billedCost])).toEqual([
      ['2026-04', 'OPEN', expect.any(String)],
      ['2026-03', 'CLOSED', '427.57'],
    ]);
  });

  it('a later change to a closed period becomes a correction line; the closed lines stay as they were', async () => {
    const before = await statement();
    // A change that reaches the ledger late (a replica whose clock lagged): bravo's control plane ran one hour longer.
    await t.db.query(
      `UPDATE usage_intervals SET ended_at = ended_at + interval '1 hour' WHERE cluster_slug = 'bravo' AND kind = 'CONTROL_PLANE' AND organisation_id = $1`,
      [f.orgId],
    );
    moveTo('04-15T02:00:00');
    expect(await t.get(StatementCloser).runOnce()).toEqual({ closed: 0, corrections: 1 });
    expect(await t.get(StatementCloser).runOnce()).toEqual({ closed: 0, corrections: 0 });
    const after = await statement();
    expect(after.body.lines.slice(0, 5)).toEqual(before.body.lines);
    expect(after.body.lines[5]).toMatchObject({
      lineNumber: 6,
      chargeClass: 'Correction',
      recordedAt: '2026-04-15T02:00:00.000Z',
      clusterName: 'bravo',
      skuId: 'control-plane/platform_1/eu-central-1/ha',
      quantity: '1.000000',
      billedCost: '0.25',
      listCost: '0.30',
    });
    expect(after.body.totals).toEqual({ billedCost: '427.82', listCost: '478.00', corrections: '0.25' });
  });

  it('the FOCUS export of the month validates against the column requirements; a broken row fails the check', async () => {
    const csv = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/usage/export?period=2026-03&format=focus-csv`);
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    expect(csv.headers['content-disposition']).toBe(`attachment; filename="focus-1.1-${f.orgSlug}-2026-03.csv"`);
    const { columns, rows } = parseFocusCsv(csv.text);
    expect(validateFocus(columns, rows)).toEqual([]);
    expect(rows).toHaveLength(6); // five lines and the correction
    expect(rows.map((r) => [r.ResourceName, r.ChargeClass, r.BilledCost, r.ListCost, r.PricingQuantity, r.SkuPriceId])).toEqual([
      ['alpha', null, '59.52', '74.40', '744.000000', prices.cp],
      ['alpha/workers', null, '76.68', '81.79', '852.000000', prices.large1],
      ['alpha/workers', null, '126.72', '138.24', '1152.000000', prices.large2],
      ['bravo', null, '93.13', '111.75', '372.500000', prices.ha],
      ['bravo/big', null, '71.52', '71.52', '372.500000', prices.xlarge],
      ['bravo', 'Correction', '0.25', '0.30', '1.000000', prices.ha],
    ]);
    expect(rows[0]).toMatchObject({
      BillingAccountName: `Acme ${f.orgSlug.split('-')[1]}`,
      BillingCurrency: 'EUR',
      BillingPeriodStart: '2026-03-01T00:00:00.000Z',
      BillingPeriodEnd: '2026-04-01T00:00:00.000Z',
      ChargeCategory: 'Usage',
      ServiceCategory: 'Compute',
      RegionId: 'eu-central-1',
      RegionName: 'Frankfurt (EU Central 1)',
      SubAccountId: `${f.orgSlug}/production`,
      Tags: { 'cms/environment': 'production', 'cms/cluster': 'alpha' },
    });

    const json = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/usage/export?period=2026-03&format=focus-json`);
    expect(json.status).toBe(200);
    const parsed = JSON.parse(json.text) as Record<string, string | null>[];
    expect(validateFocus(Object.keys(parsed[0]), parsed)).toEqual([]);
    expect(parsed).toEqual(rows);

    // Broken rows fail the check: a missing value, a wrong type, a value outside the allowed ones, a cost that does not add up.
    const broken = [
      { ...rows[0], BilledCost: null },
      { ...rows[1], ChargePeriodStart: '2026-03-01' },
      { ...rows[2], ChargeCategory: 'Usages' },
      { ...rows[3], ListCost: '99.99' },
    ];
    expect(validateFocus(columns, broken)).toEqual([
      'row 1: BilledCost is null',
      "row 2: ChargePeriodStart '2026-03-01' is not an ISO 8601 date-time in UTC",
      'row 2: ChargePeriodStart is not before ChargePeriodEnd',
      'row 2: the charge period is not within the billing period',
      "row 3: ChargeCategory 'Usages' is not one of Usage, Purchase, Tax, Credit, Adjustment",
      'row 4: PricingQuantity x ListUnitPrice does not match ListCost (to half a cent)',
    ]);
    expect(validateFocus(columns.filter((c) => c !== 'BillingCurrency'), rows)).toContain('column BillingCurrency (Mandatory) is missing');
  });

  it('the platform-wide export (administrators only) holds every organisation; an open month is computed from the ledger', async () => {
    const res = await t.admin().get('/admin/v1/usage/export?period=2026-03&format=focus-csv');
    expect(res.status).toBe(200);
    const { columns, rows } = parseFocusCsv(res.text);
    expect(validateFocus(columns, rows)).toEqual([]);
    expect(new Set(rows.map((r) => r.SubAccountId))).toEqual(new Set([`${f.orgSlug}/production`, `${other.orgSlug}/production`]));
    expect(rows.filter((r) => r.SubAccountId === `${other.orgSlug}/production`).map((r) => r.ResourceName)).toEqual([
      'elsewhere',
      'elsewhere/workers', // before the price change
      'elsewhere/workers', // after
    ]);
    // April is open (now is 04-15 02:00): its rows come from the ledger as of now.
    const open = parseFocusCsv((await t.admin().get('/admin/v1/usage/export?period=2026-04&format=focus-csv')).text);
    expect(validateFocus(open.columns, open.rows)).toEqual([]);
    const alpha = open.rows.filter((r) => r.ResourceName === 'alpha')[0];
    expect(alpha).toMatchObject({ ChargePeriodStart: '2026-04-01T00:00:00.000Z', ChargePeriodEnd: '2026-04-15T02:00:00.000Z', PricingQuantity: '338.000000', BilledCost: '27.04' });
    expect((await t.as(f.users.owner.token).get('/admin/v1/usage/export?period=2026-03&format=focus-csv')).status).toBe(403);
    const bad = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/usage/export?period=2026-3&format=focus-csv`);
    expect(bad.status).toBe(400);
    expect((await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/usage/export?period=2026-03&format=xlsx`)).status).toBe(400);
    expect((await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/usage/export?period=2099-01&format=focus-json`)).status).toBe(404);
  });

  it('answers 404 for a period that is not a month or has not begun', async () => {
    for (const p of ['2026-13', 'march', '2099-01']) {
      const res = await statement(p);
      expect(res.status).toBe(404);
      expectErrorBody(res.body, 404);
    }
  });
});
