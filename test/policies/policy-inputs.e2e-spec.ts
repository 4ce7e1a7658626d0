import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsService } from 'nestjs-cls';
import { CLUSTER_SELECT, clusterSelect, type ClusterRow } from '../../src/clusters/cluster-read';
import { PolicyInputs } from '../../src/policies/policy-inputs';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, settle } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * A scan under a policy's projection reads only the columns the projected fields are made of (clusterSelect, the
 * others NULL) and hands over only those fields: for every field of a cluster's policy object, the projected object
 * carries exactly that field, with the value the whole object has.
 */
describe('policy inputs under a projection', () => {
  let t: TestApp;
  let f: OrgFixture;
  beforeAll(async () => {
    t = await startTestApp();
    f = await createOrgFixture(t);
    const created = await t
      .as(f.users.member.token)
      .post(clustersPath(f))
      .send(clusterBody(f, { description: 'the shop', ipWhitelist: [{ cidr: '10.0.0.0/8', description: 'office' }] }));
    expect(created.status).toBe(200);
    // Running: conditions, observed generation and node counts are filled in.
    await settle(t);
    // And one just created: its conditions are not stored yet (the view makes them from the generation and the
    // last change).
    expect((await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'api' }))).status).toBe(200);
  });
  afterAll(async () => {
    await t.close();
  });

  const read = (select: string, fields: Set<string> | null) =>
    t.get(ClsService).run(async () => {
      const txHost = t.get(TransactionHost) as TransactionHost<TransactionalAdapterTypeOrm>;
      const rows = (await txHost.tx.query(`SELECT ${select} FROM clusters c WHERE c.organisation_id = $1 ORDER BY c.id`, [f.orgId])) as ClusterRow[];
      return (await t.get(PolicyInputs).objects(rows, fields)) as unknown as Record<string, unknown>[];
    });

  it('carries each field, alone, with the value of the whole object', async () => {
    const whole = await read(CLUSTER_SELECT, null);
    expect(whole).toEqual([
      expect.objectContaining({ description: 'the shop', status: 'started', nodePools: [expect.objectContaining({ name: 'workers' })] }),
      expect.objectContaining({ name: 'api', status: 'new' }),
    ]);
    const fields = Object.keys(whole[0]);
    expect(fields.length).toBeGreaterThan(40);
    for (const field of fields) {
      const only = new Set([field]);
      const projected = await read(clusterSelect(only), only);
      expect(projected.map((o) => ({ field, keys: Object.keys(o), value: o[field] }))).toEqual(whole.map((o) => ({ field, keys: [field], value: o[field] })));
    }
  });

  it('reads NULL for the columns no projected field is made of, and every column without a projection or for an unknown field', () => {
    const region = clusterSelect(new Set(['region']));
    expect(region).toContain('c.region');
    expect(region).toContain('NULL AS "conditions"');
    expect(region).toContain('NULL AS "addons"');
    // What a scan's answer and node pools need is read whatever the projection.
    for (const column of ['c.id', 'c.identity', 'c.slug', 'c.environment_id AS "environmentId"', 'c.cloud_provider AS "cloudProvider"']) expect(region).toContain(column);
    expect(clusterSelect(null)).toBe(CLUSTER_SELECT);
    expect(clusterSelect(new Set(['region', 'noSuchField']))).toBe(CLUSTER_SELECT);
  });
});
