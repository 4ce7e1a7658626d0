import { startTestApp, TestApp } from '../support/test-app';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, settle } from './cluster-fixtures';

/** Generations: every desired-state change bumps the cluster's generation in its own transaction; answers show them. */
describe('cluster generations and conditions', () => {
  let t: TestApp;
  let f: OrgFixture;
  let path: string;

  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
    path = `${clustersPath(f)}/gen`;
    const res = await t
      .as(f.users.member.token)
      .post(clustersPath(f))
      .send(clusterBody(f, { name: 'gen', nodePools: [{ name: 'a', nodeSize: 'm5.large', minSize: 1, maxSize: 2 }, { name: 'b', nodeSize: 'm5.large', minSize: 1, maxSize: 2 }] }));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ generation: 1, observedGeneration: null });
    expect(res.body.conditions.map((c: { type: string; status: string }) => [c.type, c.status])).toEqual([
      ['Ready', 'False'],
      ['Reconciling', 'True'],
      ['Degraded', 'False'],
    ]);
  });
  afterAll(() => t.close());

  const get = async () => (await t.as(f.users.viewer.token).get(path)).body;
  const pools = async () => (await t.as(f.users.viewer.token).get(`${path}/pools`)).body as { name: string; identity: string; generation: number; observedGeneration: number | null }[];

  it('a new cluster and its pools are generation 1; once provisioned it is Ready at generation 1', async () => {
    expect((await pools()).map((p) => [p.name, p.generation, p.observedGeneration])).toEqual([
      ['a', 1, null],
      ['b', 1, null],
    ]);
    await settle(t);
    const c = await get();
    expect(c).toMatchObject({ status: 'started', generation: 1, observedGeneration: 1 });
    expect(c.conditions).toEqual([
      { type: 'Ready', status: 'True', reason: 'Applied', message: 'Generation 1 is applied', lastTransitionTime: expect.any(String), observedGeneration: 1 },
      { type: 'Reconciling', status: 'False', reason: 'Applied', message: 'Generation 1 is applied', lastTransitionTime: expect.any(String), observedGeneration: 1 },
      { type: 'Degraded', status: 'False', reason: 'NoError', message: '', lastTransitionTime: expect.any(String), observedGeneration: 1 },
    ]);
    expect((await pools()).map((p) => [p.name, p.generation, p.observedGeneration])).toEqual([
      ['a', 1, 1],
      ['b', 1, 1],
    ]);
  });

  it('each desired-state change bumps the generation once; other changes and no-ops do not', async () => {
    const patch = async (body: object) => {
      const res = await t.as(f.users.member.token).patch(path).send(body);
      expect(res.status).toBe(200);
      return res.body;
    };
    const gen = async () => Number((await t.db.query(`SELECT generation FROM clusters WHERE organisation_id = $1 AND slug = 'gen'`, [f.orgId]))[0].generation);
    expect(await gen()).toBe(1);
    // Not part of the infrastructure: name, description, delete protection, maintenance.
    await patch({ name: 'Gen', description: 'x', deleteProtection: true });
    expect(await gen()).toBe(1);
    // One PATCH with several desired-state fields: one generation.
    const b = await patch({ enableHighAvailability: true, enableNetworkEncryption: true, ipWhitelist: [{ cidr: { ipRange: '203.0.113.0/24' }, description: 'office' }] });
    expect(b).toMatchObject({ generation: 2, observedGeneration: 1 });
    expect(b.conditions.find((c: { type: string }) => c.type === 'Reconciling')).toMatchObject({ status: 'True', reason: 'SpecChanged', observedGeneration: 2 });
    await patch({ addons: { 'cert-manager': { enabled: true } } });
    expect(await gen()).toBe(3);
    await patch({ podSecurityStandardsProfile: 'restricted' });
    await patch({ clusterAutoscalerSettings: { 'scale-down-unneeded-time': '5m' } });
    expect(await gen()).toBe(5);
    // Repeating the same values changes nothing.
    await patch({ enableHighAvailability: true, podSecurityStandardsProfile: 'restricted' });
    expect(await gen()).toBe(5);
    // A stop request is a change of the desired state.
    await patch({ status: 'stopping' });
    expect(await gen()).toBe(6);
  });

  it('node pool create, update and delete bump the cluster generation; the pool carries the generation of its last change', async () => {
    const gen = async () => (await get()).generation as number;
    const before = await gen();
    const created = await t.as(f.users.member.token).post(`${path}/pools`).send({ name: 'c', nodeSize: 'm5.large', minSize: 1, maxSize: 3 });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ generation: before + 1, observedGeneration: null });
    const [a] = await pools();
    const put = await t.as(f.users.member.token).put(`${path}/pools/${a.identity}`).send({ name: 'a', nodeSize: 'm5.large', minSize: 2, maxSize: 2 });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ generation: before + 2, observedGeneration: 1 });
    expect(put.body.conditions[1]).toMatchObject({ type: 'Reconciling', status: 'True' });
    // The same definition again: no change, no generation.
    expect((await t.as(f.users.member.token).put(`${path}/pools/${a.identity}`).send({ name: 'a', nodeSize: 'm5.large', minSize: 2, maxSize: 2 })).body.generation).toBe(before + 2);
    expect(await gen()).toBe(before + 2);
    expect((await t.as(f.users.member.token).delete(`${path}/pools/${created.body.identity}`)).status).toBe(204);
    expect(await gen()).toBe(before + 3);
    const rows = await t.db.query(`SELECT p.name, p.generation FROM cluster_node_pools p JOIN clusters c ON c.id = p.cluster_id WHERE c.slug = 'gen' AND c.organisation_id = $1 ORDER BY p.name`, [f.orgId]);
    expect(rows.map((r: { name: string; generation: string }) => [r.name, Number(r.generation)])).toEqual([
      ['a', before + 2],
      ['b', 1],
    ]);
  });

  it('pools written in the transaction that creates their cluster keep it at generation 1; a later one bumps it', async () => {
    const columns: { column_name: string }[] = await t.db.query(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'clusters'
          AND column_name NOT IN ('id', 'identity', 'slug', 'name', 'generation', 'observed_generation', 'conditions', 'observed_at')`,
    );
    const list = columns.map((c) => c.column_name).join(', ');
    const runner = t.db.createQueryRunner();
    let id: string;
    try {
      await runner.startTransaction();
      [{ id }] = await runner.query(
        `INSERT INTO clusters (slug, name, ${list}) SELECT 'bulk', 'bulk', ${list} FROM clusters WHERE organisation_id = $1 AND slug = 'gen' RETURNING id`,
        [f.orgId],
      );
      await runner.query(
        `INSERT INTO cluster_node_pools (cluster_id, name, node_size, min_size, max_size, created_at, modified_at)
         SELECT $1, 'p' || g, 'm5.large', 1, 1, now(), now() FROM generate_series(1, 3) g`,
        [id],
      );
      await runner.commitTransaction();
    } finally {
      await runner.release();
    }
    const gens = async () => {
      const [row] = await t.db.query(
        `SELECT generation::int AS generation, (SELECT array_agg(generation::int ORDER BY name) FROM cluster_node_pools WHERE cluster_id = $1) AS pools FROM clusters WHERE id = $1`,
        [id],
      );
      return row;
    };
    expect(await gens()).toEqual({ generation: 1, pools: [1, 1, 1] });
    await t.db.query(`INSERT INTO cluster_node_pools (cluster_id, name, node_size, min_size, max_size, created_at, modified_at) VALUES ($1, 'p4', 'm5.large', 1, 1, now(), now())`, [id]);
    expect(await gens()).toEqual({ generation: 2, pools: [1, 1, 1, 2] });
  });

  it('a version change made outside the API (the scheduler, an administrator) bumps the generation too', async () => {
    const [row] = await t.db.query(`SELECT id, generation FROM clusters WHERE organisation_id = $1 AND slug = 'gen'`, [f.orgId]);
    await t.db.query(`UPDATE clusters SET version = '1.31.6' WHERE id = $1`, [row.id]);
    const [after] = await t.db.query(`SELECT generation, next_attempt_at FROM clusters WHERE id = $1`, [row.id]);
    expect(Number(after.generation)).toBe(Number(row.generation) + 1);
    expect(after.next_attempt_at).toBeNull();
  });
});
