import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, settle } from './cluster-fixtures';

describe('node pools', () => {
  let t: TestApp;
  let f: OrgFixture;
  let pools: string;

  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
    const res = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'web' }));
    expect(res.status).toBe(200);
    pools = `${clustersPath(f)}/web/pools`;
  });
  afterAll(() => t.close());

  const full = {
    name: 'gpu',
    nodeSize: 'm5.xlarge',
    minSize: 1,
    maxSize: 3,
    availabilityZone: 'eu-central-1a',
    autoScaling: true,
    enableNodeAutoReplacement: false,
    enableNodeReboots: true,
    upgradeStrategy: 'INPLACE_WITHOUT_DRAIN',
    annotations: { owner: 'ml' },
    labels: { accelerator: 'none' },
    taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }],
  };

  it('lists the pools created with the cluster; the reconciler marks them provisioned', async () => {
    const res = await t.as(f.users.viewer.token).get(pools);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      {
        id: expect.any(Number),
        identity: expect.any(String),
        name: 'workers',
        availabilityZone: null,
        nodeSize: 'm5.large',
        autoScaling: false,
        minSize: 2,
        maxSize: 4,
        enableNodeAutoReplacement: true,
        enableNodeReboots: false,
        upgradeStrategy: 'REPLACE',
        annotations: {},
        labels: {},
        taints: [],
        provisionStatus: 'ACCEPTED',
        nodeCount: 2,
        nodes: [],
        createdAt: expect.any(String),
        modifiedAt: expect.any(String),
        generation: 1,
        observedGeneration: null,
        conditions: [
          expect.objectContaining({ type: 'Ready', status: 'False', observedGeneration: 1 }),
          expect.objectContaining({ type: 'Reconciling', status: 'True', observedGeneration: 1 }),
          expect.objectContaining({ type: 'Degraded', status: 'False' }),
        ],
      },
    ]);
    await settle(t);
    expect((await t.as(f.users.viewer.token).get(pools)).body[0].provisionStatus).toBe('DONE');
  });

  it('creates a pool with every field, audited, and it counts in compute', async () => {
    const res = await t.as(f.users.member.token).post(pools).send(full);
    expect(res.status).toBe(200);
    // Accepted until the cluster driver reports the generation that created it applied.
    expect(res.body).toMatchObject({ ...full, provisionStatus: 'ACCEPTED' });
    const [audit] = await t.db.query(`SELECT type, cluster_node_pool_name, cluster_node_pool_id, cluster_slug, details FROM audit_events WHERE type = 'NODE_POOL_CREATED'`);
    expect(audit).toMatchObject({ cluster_node_pool_name: 'gpu', cluster_slug: 'web' });
    expect(Number(audit.cluster_node_pool_id)).toBe(res.body.id);
    expect(audit.details.nodeSize).toEqual({ old: null, new: 'm5.xlarge' });
    const [activity] = await t.db.query(`SELECT message FROM activity_events WHERE type = 'NODE_POOL_CREATED'`);
    expect(activity.message).toBe(`${f.users.member.username} created node pool gpu of cluster production/web`);
    // 2 x m5.large (2 cpu, 8192 MiB) + 1 x m5.xlarge (4 cpu, 16384 MiB)
    const c = await t.as(f.users.viewer.token).get(`${clustersPath(f)}/web?show-compute=true`);
    expect(c.body).toMatchObject({ cpu: 8, memory: 32768 });
    t.clock.advance(10_000);
    await settle(t);
    const provisioned = (await t.as(f.users.viewer.token).get(pools)).body.find((p: { name: string }) => p.name === 'gpu');
    expect(provisioned).toMatchObject({ provisionStatus: 'DONE', generation: res.body.generation, observedGeneration: res.body.generation });
  });

  it('refuses bad sizes, node types, zones and duplicate names', async () => {
    const bad = async (body: object, status: number, field?: string) => {
      const res = await t.as(f.users.member.token).post(`${pools}?fieldValidation=Strict`).send({ ...full, name: 'extra', ...body });
      expect({ body, status: res.status }).toEqual({ body, status });
      expectErrorBody(res.body, status);
      if (field) expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      return res;
    };
    await bad({ minSize: 4, maxSize: 3 }, 400, 'minSize');
    await bad({ minSize: -1 }, 400, 'minSize');
    await bad({ maxSize: 1001 }, 400, 'maxSize');
    await bad({ maxSize: '3' }, 400, 'maxSize');
    await bad({ nodeSize: 'cx22' }, 400, 'nodeSize');
    await bad({ availabilityZone: 'us-east-1a' }, 400, 'availabilityZone');
    await bad({ name: 'UPPER' }, 400, 'name');
    await bad({ name: 'x'.repeat(26) }, 400, 'name');
    await bad({ taints: [{ key: '', value: 'v', effect: 'NoSchedule' }] }, 400, 'taints.0.key');
    await bad({ unexpected: true }, 400, 'unexpected');
    const dup = await bad({ name: 'gpu' }, 409);
    expect(dup.body.message).toContain("'gpu'");
    expect((await t.as(f.users.member.token).post(pools).send({ ...full, name: 'x'.repeat(25), minSize: 0, maxSize: 0 })).status).toBe(200);
  });

  it('replaces a pool with PUT (by identity), with the same rules', async () => {
    const list = (await t.as(f.users.viewer.token).get(pools)).body as { identity: string; name: string }[];
    const gpu = list.find((p) => p.name === 'gpu')!;
    const res = await t.as(f.users.member.token).put(`${pools}/${gpu.identity}`).send({ name: 'gpu-large', nodeSize: 'm5.2xlarge', minSize: 2, maxSize: 6 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ identity: gpu.identity, name: 'gpu-large', nodeSize: 'm5.2xlarge', minSize: 2, maxSize: 6, autoScaling: false, taints: [], availabilityZone: null });
    const [audit] = await t.db.query(`SELECT details FROM audit_events WHERE type = 'NODE_POOL_UPDATED'`);
    expect(audit.details.name).toEqual({ old: 'gpu', new: 'gpu-large' });
    expect(audit.details.minSize).toEqual({ old: 1, new: 2 });

    const put = (body: object) => t.as(f.users.member.token).put(`${pools}/${gpu.identity}`).send({ name: 'gpu-large', nodeSize: 'm5.2xlarge', minSize: 2, maxSize: 6, ...body });
    expect((await put({ minSize: 7 })).status).toBe(400);
    expect((await put({ nodeSize: 'nope' })).status).toBe(400);
    expect((await put({ name: 'workers' })).status).toBe(409);
    expect((await put({ name: 'gpu-large' })).status).toBe(200); // keeping its own name is fine
    expect((await t.as(f.users.member.token).put(`${pools}/00000000-0000-4000-8000-000000000000`).send(full)).status).toBe(404);
    expect((await t.as(f.users.member.token).put(`${pools}/not-a-uuid`).send(full)).status).toBe(404);
    expect((await t.as(f.users.member.token).put(`${pools}/99999999`).send(full)).status).toBe(404);

    // By numeric id, without a name (or with ""): the name is kept.
    const [{ id }] = await t.db.query(`SELECT id FROM cluster_node_pools WHERE identity = $1`, [gpu.identity]);
    const { name: _n, ...nameless } = full as Record<string, unknown>;
    const byId = await t.as(f.users.member.token).put(`${pools}/${id}`).send({ ...nameless, maxSize: 8 });
    expect(byId.status).toBe(200);
    expect(byId.body).toMatchObject({ identity: gpu.identity, name: 'gpu-large', maxSize: 8 });
    const emptyName = await t.as(f.users.member.token).put(`${pools}/${id}`).send({ ...nameless, name: '', maxSize: 9 });
    expect(emptyName.body).toMatchObject({ name: 'gpu-large', maxSize: 9 });
  });

  it('deletes pools (204), the last one too (a cluster may run without pools)', async () => {
    const list = (await t.as(f.users.viewer.token).get(pools)).body as { identity: string; name: string }[];
    expect(list.length).toBe(3);
    for (const p of list.slice(1)) {
      const res = await t.as(f.users.member.token).delete(`${pools}/${p.identity}`);
      expect(res.status).toBe(204);
    }
    expect((await t.as(f.users.member.token).delete(`${pools}/${list[1].identity}`)).status).toBe(404);
    // The last one, by its numeric id as the original clients address it.
    const [{ id }] = await t.db.query(`SELECT id FROM cluster_node_pools WHERE identity = $1`, [list[0].identity]);
    const last = await t.as(f.users.member.token).delete(`${pools}/${id}`).set('Content-Type', 'application/json');
    expect(last.status).toBe(204);
    expect((await t.as(f.users.viewer.token).get(pools)).body).toEqual([]);
    const deleted = await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE type = 'NODE_POOL_DELETED'`);
    expect(deleted[0].n).toBe(3);
  });

  it('role matrix; 404 for unknown clusters; no changes while the cluster is being deleted', async () => {
    for (const [who, status] of [
      ['owner', 200],
      ['admin', 200],
      ['member', 200],
      ['viewer', 403],
      ['outsider', 403],
    ] as const) {
      const res = await t.as(f.users[who].token).post(pools).send({ ...full, name: `by-${who}` });
      expect({ who, status: res.status }).toEqual({ who, status });
    }
    expect((await t.as(f.users.outsider.token).get(pools)).status).toBe(403);
    expect((await t.http().get(pools)).status).toBe(401);
    expect((await t.http().post(pools).send(full)).status).toBe(401);
    expect((await t.as(f.users.viewer.token).get(`${clustersPath(f)}/ghost/pools`)).status).toBe(404);
    expect((await t.as(f.users.member.token).post(`${clustersPath(f)}/ghost/pools`).send(full)).status).toBe(404);

    const list = (await t.as(f.users.viewer.token).get(pools)).body as { identity: string }[];
    expect((await t.as(f.users.viewer.token).delete(`${pools}/${list[1].identity}`)).status).toBe(403);
    expect((await t.as(f.users.member.token).patch(`${clustersPath(f)}/web`).send({ status: 'deleting' })).status).toBe(200);
    const refused = await t.as(f.users.member.token).post(pools).send({ ...full, name: 'late' });
    expect(refused.status).toBe(409);
    expect((await t.as(f.users.member.token).delete(`${pools}/${list[1].identity}`)).status).toBe(409);
  });
});
