import { clusterBody, clustersPath, createOrgFixture, settle } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

/** A policy applies to the operations it names (ADR 0172); naming none, to every operation. */
describe('cluster policies name their operations', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t.close());

  it('a Deny naming CREATE refuses creates only; one naming no operation refuses deletes too; operations are validated and audited', async () => {
    const f = await createOrgFixture(t);
    const admin = t.as(f.users.admin.token);
    const member = t.as(f.users.member.token);
    const policies = `/api/v1/orgs/${f.orgSlug}/cluster-policies`;
    expect((await member.post(clustersPath(f)).send(clusterBody(f, { name: 'web' }))).status).toBe(200);
    await settle(t);

    const bad = await admin.post(policies).send({ name: 'x', expression: 'true', message: 'm', action: 'Deny', operations: ['REMOVE'] });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0]).toMatchObject({ field: 'operations', message: 'operations entries must be one of: CREATE, UPDATE, DELETE' });

    const created = await admin.post(policies).send({ name: 'ha', expression: 'object.highlyAvailable', message: 'must be HA', action: 'Deny', operations: ['CREATE'] });
    expect(created.status).toBe(200);
    expect(created.body.operations).toEqual(['CREATE']);
    // CREATE is refused; an UPDATE (a node pool) and the DELETE are not judged.
    const refused = await member.post(clustersPath(f)).send(clusterBody(f, { name: 'api' }));
    expect(refused.status).toBe(400);
    expect(refused.body.message).toContain('policy ha: must be HA');
    expect((await member.post(`${clustersPath(f)}/web/pools`).send({ name: 'batch', nodeSize: 'm5.large', minSize: 1, maxSize: 2 })).status).toBe(200);

    // Without operations the same policy refuses the delete too.
    const everywhere = await admin.patch(`${policies}/${created.body.identity}`).send({ operations: null });
    expect(everywhere.status).toBe(200);
    expect(everywhere.body.operations).toBeNull();
    const [audit] = await t.db.query(`SELECT details FROM audit_events WHERE type = 'CLUSTER_POLICY_UPDATED' ORDER BY id DESC LIMIT 1`);
    expect(audit.details.operations).toEqual({ old: ['CREATE'], new: null });
    expect((await member.delete(`${clustersPath(f)}/web`)).status).toBe(400);
    // Naming CREATE and UPDATE: the delete goes through.
    expect((await admin.patch(`${policies}/${created.body.identity}`).send({ operations: ['CREATE', 'UPDATE'] })).status).toBe(200);
    const deleted = await member.delete(`${clustersPath(f)}/web`);
    expect(deleted.status).toBeLessThan(300);
  });
});
