import { clusterBody, clustersPath, createOrgFixture, OrgFixture, reconciler, settle } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';
import { ledgerIntervalsCte } from '../../src/metering/usage-sql';

/**
 * The usage ledger (issue 41 step 1, docs/metering.md): the triggers of migration UsageLedger close and open
 * usage intervals in the transaction of every change to a cluster or node pool, at the time the application's
 * clock wrote on the row. The clock is frozen and moved by hand, so every boundary is asserted exactly.
 */
const T0 = Date.parse('2026-03-02T08:00:00Z');
const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString();

interface Row {
  kind: string;
  pool: string | null;
  nodeType: string | null;
  nodes: number | null;
  ha: boolean | null;
  from: string;
  to: string | null;
}

async function intervals(t: TestApp, clusterId: string): Promise<Row[]> {
  const rows = await t.db.query(
    `WITH ${ledgerIntervalsCte('ui.cluster_identity = $1')}
     SELECT kind, node_pool_name, node_type, node_count, highly_available, started_at, ended_at
       FROM ledger ORDER BY kind, node_pool_name NULLS FIRST, started_at`,
    [clusterId],
  );
  return rows.map((r: Record<string, any>) => ({
    kind: r.kind,
    pool: r.node_pool_name,
    nodeType: r.node_type,
    nodes: r.node_count === null ? null : Number(r.node_count),
    ha: r.highly_available,
    from: r.started_at.toISOString(),
    to: r.ended_at ? r.ended_at.toISOString() : null,
  }));
}

const cp = (ha: boolean, from: number, to: number | null): Row => ({ kind: 'CONTROL_PLANE', pool: null, nodeType: null, nodes: null, ha, from: at(from), to: to === null ? null : at(to) });
const nodes = (pool: string, nodeType: string, n: number, from: number, to: number | null): Row => ({
  kind: 'NODES',
  pool,
  nodeType,
  nodes: n,
  ha: null,
  from: at(from),
  to: to === null ? null : at(to),
});

describe('usage ledger', () => {
  let t: TestApp;
  let f: OrgFixture;
  let minutes = 0;
  const moveTo = (m: number) => {
    minutes = m;
    t.clock.set(new Date(T0 + m * 60_000));
  };

  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
  });
  afterAll(() => t.close());

  it('records control-plane and node intervals through create, scale, HA, stop, start, upgrade, pool add/delete and delete, exactly', async () => {
    const member = t.as(f.users.member.token);
    moveTo(0);
    const created = await member.post(clustersPath(f)).send(clusterBody(f, { name: 'ledger' }));
    expect(created.status).toBe(200);
    const id = created.body.identity as string;
    const path = `${clustersPath(f)}/ledger`;
    expect(await intervals(t, id)).toEqual([cp(false, 0, null), nodes('workers', 'm5.large', 2, 0, null)]);

    // Provisioning and starting change the status but not what is billed: no new interval.
    moveTo(5);
    await settle(t);
    expect((await member.get(path)).body.status).toBe('started');
    expect(await intervals(t, id)).toEqual([cp(false, 0, null), nodes('workers', 'm5.large', 2, 0, null)]);

    // Scale the pool: the 2-node interval ends, a 3-node one begins, at the PUT's time.
    moveTo(60);
    const pools = (await member.get(`${path}/pools`)).body;
    const poolId = (Array.isArray(pools) ? pools : pools.content)[0].identity;
    const scaled = await member.put(`${path}/pools/${poolId}`).send({ nodeSize: 'm5.large', minSize: 3, maxSize: 4 });
    expect(scaled.status).toBe(200);
    // A change to what is not billed (maxSize) splits nothing.
    moveTo(70);
    expect((await member.put(`${path}/pools/${poolId}`).send({ nodeSize: 'm5.large', minSize: 3, maxSize: 5 })).status).toBe(200);
    // The resize is one recorded row in the open interval (ADR 0210), which the ledger's readers cut there.
    expect(await t.db.query(`SELECT node_count::int AS n, resized_at FROM usage_pool_resizes`)).toEqual([{ n: 3, resized_at: new Date(at(60)) }]);
    expect(await intervals(t, id)).toEqual([cp(false, 0, null), nodes('workers', 'm5.large', 2, 0, 60), nodes('workers', 'm5.large', 3, 60, null)]);

    // High availability on: the control plane interval splits.
    moveTo(120);
    expect((await member.patch(path).send({ enableHighAvailability: true })).status).toBe(200);

    // A second pool, deleted again later.
    moveTo(150);
    const added = await member.post(`${path}/pools`).send({ name: 'batch', nodeSize: 'm5.xlarge', minSize: 1, maxSize: 1 });
    expect(added.status).toBe(200);
    moveTo(170);
    expect((await member.delete(`${path}/pools/${added.body.identity}`)).status).toBe(204);

    // Stop: asked at 180, stopped by the reconciler at 190: usage ends when the cluster is stopped.
    moveTo(180);
    expect((await member.patch(path).send({ status: 'stopping' })).status).toBe(200);
    moveTo(190);
    await settle(t);
    expect((await member.get(path)).body.status).toBe('stopped');

    // Start: asked at 300, the reconciler starts it at 310: usage starts again then.
    moveTo(300);
    expect((await member.patch(path).send({ status: 'starting' })).status).toBe(200);
    moveTo(310);
    await settle(t);
    expect((await member.get(path)).body.status).toBe('started');

    // Upgrade: the version is not priced, so no interval changes.
    moveTo(400);
    expect((await member.patch(path).send({ version: '1.31.6' })).status).toBe(200);
    await settle(t);
    expect((await t.db.query(`SELECT observed_version FROM clusters WHERE identity = $1`, [id]))[0].observed_version).toBe('1.31.6');

    // Delete: asked at 500, deleted by the reconciler at 505.
    moveTo(500);
    expect((await member.delete(path)).status).toBeLessThan(300);
    moveTo(505);
    await settle(t);

    const expected = [
      cp(false, 0, 120),
      cp(true, 120, 190),
      cp(true, 310, 505),
      nodes('batch', 'm5.xlarge', 1, 150, 170),
      nodes('workers', 'm5.large', 2, 0, 60),
      nodes('workers', 'm5.large', 3, 60, 190),
      nodes('workers', 'm5.large', 3, 310, 505),
    ];
    expect(await intervals(t, id)).toEqual(expected);

    // Usage of a deleted cluster stays, even once retention removes the cluster's row.
    await t.db.query(`DELETE FROM clusters WHERE identity = $1`, [id]);
    const kept = await t.db.query(`SELECT count(*)::int AS n FROM usage_intervals WHERE cluster_identity = $1`, [id]);
    expect(kept[0].n).toBe(expected.length);
    expect(minutes).toBe(505);
  });

  it('a driver fault (unknown) neither stops nor doubles usage, and a change that rolls back leaves the ledger as it was', async () => {
    const member = t.as(f.users.member.token);
    moveTo(1000);
    const created = await member.post(clustersPath(f)).send(clusterBody(f, { name: 'crashy' }));
    const id = created.body.identity as string;
    await settle(t);
    // The driver loses the cluster in its next step (it goes to unknown, remembering started).
    await t.db.query(
      `INSERT INTO simulated_driver_faults (cluster_id, step, remaining, created_at) SELECT id, 'stopped', 1, now() FROM clusters WHERE identity = $1`,
      [id],
    );
    moveTo(1010);
    expect((await member.patch(`${clustersPath(f)}/crashy`).send({ status: 'stopping' })).status).toBe(200);
    await reconciler(t).runOnce(); // started -> stopping
    await reconciler(t).runOnce(); // stopping -> stopped fails: unknown
    const [row] = await t.db.query(`SELECT status, status_before_fault FROM clusters WHERE identity = $1`, [id]);
    expect(row).toMatchObject({ status: 'unknown', status_before_fault: 'stopping' });
    expect(await intervals(t, id)).toEqual([cp(false, 1000, null), nodes('workers', 'm5.large', 2, 1000, null)]);

    // A worker that dies mid-transaction: the status change and the ledger change roll back together.
    const runner = t.db.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    await runner.query(`UPDATE clusters SET status = 'stopped', status_before_fault = NULL, modified_at = $2 WHERE identity = $1`, [id, at(1020)]);
    expect((await runner.query(`SELECT count(*)::int AS n FROM usage_intervals WHERE cluster_identity = $1 AND ended_at IS NULL`, [id]))[0].n).toBe(0);
    await runner.rollbackTransaction();
    await runner.release();
    expect(await intervals(t, id)).toEqual([cp(false, 1000, null), nodes('workers', 'm5.large', 2, 1000, null)]);

    // Recovery completes the stop: usage ends at the recovery's commit, once.
    moveTo(1100);
    await settle(t);
    expect((await t.db.query(`SELECT status FROM clusters WHERE identity = $1`, [id]))[0].status).toBe('stopped');
    expect(await intervals(t, id)).toEqual([cp(false, 1000, 1100), nodes('workers', 'm5.large', 2, 1000, 1100)]);
  });

  it('allows at most one open interval per control plane and per pool', async () => {
    moveTo(2000);
    const created = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'single' }));
    const [row] = await t.db.query(`SELECT * FROM usage_intervals WHERE ended_at IS NULL AND kind = 'CONTROL_PLANE' AND cluster_identity = $1`, [
      created.body.identity,
    ]);
    await expect(
      t.db.query(
        `INSERT INTO usage_intervals (kind, organisation_id, environment_id, environment_slug, cluster_id, cluster_identity, cluster_slug, cluster_name,
                                      cloud_provider, region, highly_available, started_at)
         VALUES ('CONTROL_PLANE', $1, $2, 'x', $3, $4, 'x', 'x', 'x', 'x', false, now())`,
        [row.organisation_id, row.environment_id, row.cluster_id, row.cluster_identity],
      ),
    ).rejects.toThrow(/usage_intervals_open_control_plane_uq/);
  });
});
