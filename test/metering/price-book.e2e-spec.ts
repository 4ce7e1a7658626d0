import { expectErrorBody, startTestApp, TestApp, TestUser } from '../support/test-app';

/** The price book under /admin/v1/price-book (issue 41 step 2, ADR 0201). */
const NOW = Date.parse('2026-03-10T12:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();
const HOUR = 3_600_000;
const BASE = '/admin/v1/price-book';

describe('price book', () => {
  let t: TestApp;
  let owner: TestUser;

  const node = (extra: Record<string, unknown> = {}) => ({
    kind: 'NODE',
    cloudProvider: 'platform_1',
    region: 'eu-central-1',
    nodeType: 'm5.large',
    currency: 'EUR',
    listPricePerHour: '0.0960',
    organisationTypePrices: { ENTERPRISE: '0.08' },
    ...extra,
  });
  const audits = (identity: string) =>
    t.db.query(`SELECT type, actor_username, organisation_id, details FROM audit_events WHERE referenced_entity_identity = $1 ORDER BY id`, [identity]);

  beforeAll(async () => {
    t = await startTestApp();
    t.clock.set(new Date(NOW));
    owner = await t.createUser('pb-owner');
    await t.insertOrganisation('pb-org', [{ user: owner, role: 'OWNER' }]);
  });
  afterAll(() => t.close());

  it('only platform administrators read or change the price book', async () => {
    for (const res of [
      await t.as(owner.token).get(BASE),
      await t.as(owner.token).post(BASE).send(node()),
      await t.as(owner.token).get(`${BASE}/6f1c7a2e-4b0d-4f7e-9d3a-2c5b8e1f0a47`),
      await t.as(owner.token).patch(`${BASE}/6f1c7a2e-4b0d-4f7e-9d3a-2c5b8e1f0a47`).send({ effectiveTo: null }),
      await t.as(owner.token).delete(`${BASE}/6f1c7a2e-4b0d-4f7e-9d3a-2c5b8e1f0a47`),
    ]) {
      expect(res.status).toBe(403);
      expectErrorBody(res.body, 403);
    }
    expect((await t.http().get(BASE)).status).toBe(401);
  });

  it('creates node and control-plane prices from now on, with exact decimals, and audits them', async () => {
    const created = await t.admin().post(BASE).send(node());
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      kind: 'NODE',
      nodeType: 'm5.large',
      highlyAvailable: null,
      currency: 'EUR',
      listPricePerHour: '0.096',
      organisationTypePrices: { ENTERPRISE: '0.08' },
      effectiveFrom: iso(NOW),
      effectiveTo: null,
      appliesUntil: null,
      state: 'IN_EFFECT',
    });
    const cp = await t.admin().post(BASE).send({ kind: 'CONTROL_PLANE', cloudProvider: 'platform_1', region: 'eu-central-1', highlyAvailable: true, currency: 'EUR', listPricePerHour: '0.25' });
    expect(cp.status).toBe(200);
    expect(cp.body).toMatchObject({ kind: 'CONTROL_PLANE', highlyAvailable: true, nodeType: null, listPricePerHour: '0.25', organisationTypePrices: {} });
    expect(await audits(created.body.identity)).toEqual([
      expect.objectContaining({ type: 'PRICE_BOOK_ENTRY_CREATED', actor_username: 'admin', organisation_id: null }),
    ]);
    const got = await t.admin().get(`${BASE}/${created.body.identity}`);
    expect(got.body).toEqual(created.body);
    const page = await t.admin().get(`${BASE}?sort=kind,asc`);
    expect(page.status).toBe(200);
    expect(page.body.content.map((e: { kind: string }) => e.kind)).toEqual(['CONTROL_PLANE', 'NODE']);
  });

  it('refuses the past, fields that do not fit the kind, unknown catalog entries, a second currency and a duplicate start', async () => {
    const bad = async (body: Record<string, unknown>, status: number, text: RegExp) => {
      const res = await t.admin().post(BASE).send(body);
      expect(res.status).toBe(status);
      expectErrorBody(res.body, status);
      expect(JSON.stringify(res.body)).toMatch(text);
    };
    await bad(node({ effectiveFrom: iso(NOW - 1000) }), 400, /effectiveFrom .* is in the past/);
    await bad(node({ effectiveFrom: iso(NOW + HOUR), effectiveTo: iso(NOW + HOUR) }), 400, /effectiveTo must be after effectiveFrom/);
    await bad(node({ nodeType: undefined }), 400, /nodeType is required/);
    await bad(node({ highlyAvailable: true }), 400, /highlyAvailable is only for CONTROL_PLANE/);
    await bad({ ...node({ kind: 'CONTROL_PLANE' }), nodeType: undefined }, 400, /highlyAvailable is required/);
    await bad(node({ region: 'mars-1' }), 400, /region 'mars-1' is not a region/);
    await bad(node({ nodeType: 'z9.huge' }), 400, /nodeType 'z9.huge' is not a node type/);
    await bad(node({ cloudProvider: 'nope' }), 400, /not a cloud provider/);
    await bad(node({ listPricePerHour: '1e-3' }), 400, /listPricePerHour must be a decimal string/);
    await bad(node({ listPricePerHour: 0.5 }), 400, /listPricePerHour/);
    await bad(node({ organisationTypePrices: { TRIAL: '-1' } }), 400, /TRIAL must be a decimal string/);
    await bad(node({ currency: 'USD', effectiveFrom: iso(NOW + HOUR) }), 409, /The price book is in EUR/);
    await bad(node(), 409, /same key and effectiveFrom/);
  });

  it('a scheduled entry changes or goes; one in effect only closes; a later entry bounds the earlier', async () => {
    const later = await t.admin().post(BASE).send(node({ effectiveFrom: iso(NOW + 24 * HOUR), listPricePerHour: '0.1' }));
    expect(later.status).toBe(200);
    expect(later.body.state).toBe('SCHEDULED');
    const [current] = (await t.admin().get(`${BASE}?sort=effectiveFrom,asc`)).body.content.filter((e: { kind: string }) => e.kind === 'NODE');
    expect(current.appliesUntil).toBe(iso(NOW + 24 * HOUR));

    const changed = await t.admin().patch(`${BASE}/${later.body.identity}`).send({ listPricePerHour: '0.11', organisationTypePrices: { BUSINESS: '0.105' } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ listPricePerHour: '0.11', organisationTypePrices: { BUSINESS: '0.105' } });
    const same = await t.admin().patch(`${BASE}/${later.body.identity}`).send({ listPricePerHour: '0.110' });
    expect(same.status).toBe(200);
    expect((await audits(later.body.identity)).map((a: { type: string }) => a.type)).toEqual(['PRICE_BOOK_ENTRY_CREATED', 'PRICE_BOOK_ENTRY_UPDATED']);

    const reprice = await t.admin().patch(`${BASE}/${current.identity}`).send({ listPricePerHour: '0.5' });
    expect(reprice.status).toBe(409);
    expect(reprice.body.message).toMatch(/never changes the past/);
    const backdate = await t.admin().patch(`${BASE}/${later.body.identity}`).send({ effectiveFrom: iso(NOW - HOUR) });
    expect(backdate.status).toBe(400);
    const closeInPast = await t.admin().patch(`${BASE}/${current.identity}`).send({ effectiveTo: iso(NOW - HOUR) });
    expect(closeInPast.status).toBe(400);
    const closed = await t.admin().patch(`${BASE}/${current.identity}`).send({ effectiveTo: iso(NOW + 2 * HOUR) });
    expect(closed.status).toBe(200);
    expect(closed.body).toMatchObject({ effectiveTo: iso(NOW + 2 * HOUR), appliesUntil: iso(NOW + 2 * HOUR), state: 'IN_EFFECT' });

    const begun = await t.admin().delete(`${BASE}/${current.identity}`);
    expect(begun.status).toBe(409);
    expect((await t.admin().delete(`${BASE}/${later.body.identity}`)).status).toBe(204);
    expect((await t.admin().get(`${BASE}/${later.body.identity}`)).status).toBe(404);
    expect((await audits(later.body.identity)).map((a: { type: string }) => a.type)).toEqual([
      'PRICE_BOOK_ENTRY_CREATED',
      'PRICE_BOOK_ENTRY_UPDATED',
      'PRICE_BOOK_ENTRY_DELETED',
    ]);

    t.clock.set(new Date(NOW + 3 * HOUR));
    const ended = await t.admin().get(`${BASE}/${current.identity}`);
    expect(ended.body.state).toBe('ENDED');
    expect((await t.admin().patch(`${BASE}/${current.identity}`).send({ effectiveTo: iso(NOW + 5 * HOUR) })).status).toBe(409);
    expect((await t.admin().get(`${BASE}/not-a-uuid`)).status).toBe(404);
  });
});
