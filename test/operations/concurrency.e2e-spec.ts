import type { Response } from 'supertest';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, settle } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * Concurrent changes of one resource (issue 8, item 3): every mutating flow takes a row lock on the
 * resource inside the request transaction, so concurrent PATCHes are applied one after the other.
 * Checked here: no update is lost, and each successful request left exactly one audit row whose
 * {old,new} continue the previous row's (ordered by id, which is commit order under the lock).
 */

const N = 20;

type Row = { id: string; details: Record<string, { old: unknown; new: unknown }> };

async function fire(n: number, send: (i: number) => Promise<Response>): Promise<Response[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => send(i)));
}

async function auditRows(t: TestApp, type: string, identity: string): Promise<Row[]> {
  return t.db.query(`SELECT id, details FROM audit_events WHERE type = $1 AND referenced_entity_identity = $2 ORDER BY id`, [
    type,
    identity,
  ]);
}

/**
 * Each audited field's changes form one chain: a row's old value is the previous new value of that
 * field (or the initial value), and the final state holds the last new value. A lost update shows
 * as two rows starting from the same old value, or a final value that no row explains.
 */
function expectConsistentChain(rows: Row[], initial: Record<string, unknown>, final: Record<string, unknown>): void {
  const current = { ...initial };
  for (const row of rows) {
    for (const [field, change] of Object.entries(row.details)) {
      if (!(field in current)) continue;
      expect({ row: row.id, field, old: change.old }).toEqual({ row: row.id, field, old: current[field] });
      current[field] = change.new;
    }
  }
  expect(current).toEqual(final);
}

describe('concurrent changes of one resource', () => {
  let t: TestApp;
  let f: OrgFixture;
  let owner: string;

  beforeAll(async () => {
    // A pool smaller than the number of concurrent requests: waiting for the lock must not starve it.
    t = await startTestApp({ DATABASE_POOL_SIZE: '5' });
    f = await createOrgFixture(t);
    owner = f.users.owner.token;
  });
  afterAll(() => t?.close());

  it(`organisation PATCH: ${N} concurrent renames and contact changes are all applied, one audit row each`, async () => {
    const [org] = await t.db.query(`SELECT identity, name, contact_email FROM organisations WHERE id = $1`, [f.orgId]);
    const res = await fire(N, (i) =>
      t
        .as(owner)
        .patch(`/api/v1/organisations/${f.orgSlug}`)
        .send(i % 2 === 0 ? { organisationName: `Acme renamed ${i}` } : { contactEmail: { email: `contact${i}@acme.example` } }),
    );
    expect(res.map((r) => r.status)).toEqual(Array(N).fill(200));
    const rows = await auditRows(t, 'ORGANISATION_UPDATED', org.identity);
    // A request that happens to set the current value changes nothing and writes no row; the chain shows none lost.
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(N);
    const [after] = await t.db.query(`SELECT name, contact_email FROM organisations WHERE id = $1`, [f.orgId]);
    expectConsistentChain(rows, { name: org.name, contactEmail: org.contact_email }, { name: after.name, contactEmail: after.contact_email });
    // every request changed something, so every row names a change
    expect(rows.every((r) => Object.keys(r.details).length > 0)).toBe(true);
    const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM activity_events WHERE organisation_id = $1 AND type = 'ORGANISATION_UPDATED'`, [
      f.orgId,
    ]);
    expect(n).toBe(N);
  });

  it(`environment PATCH: ${N} concurrent changes of name, description and purpose lose nothing`, async () => {
    const [env] = await t.db.query(`SELECT identity, name, description, purpose FROM environments WHERE id = $1`, [f.envId]);
    const fields = ['name', 'description', 'purpose'] as const;
    const res = await fire(N, (i) =>
      t
        .as(owner)
        .patch(`/api/v1/orgs/${f.orgSlug}/environments/${f.envSlug}`)
        .send({ [fields[i % 3]]: `${fields[i % 3]}-${i}` }),
    );
    expect(res.map((r) => r.status)).toEqual(Array(N).fill(200));
    const rows = await auditRows(t, 'ENVIRONMENT_UPDATED', env.identity);
    // A request that happens to set the current value changes nothing and writes no row; the chain shows none lost.
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(N);
    const [after] = await t.db.query(`SELECT name, description, purpose FROM environments WHERE id = $1`, [f.envId]);
    expectConsistentChain(rows, { name: env.name, description: env.description, purpose: env.purpose }, { ...after });
    // each field ends at the value of the last request (in commit order) that set it
    for (const field of fields) {
      const last = [...rows].reverse().find((r) => r.details[field]);
      expect(after[field]).toBe(last?.details[field].new);
    }
  });

  it(`cluster PATCH: ${N} concurrent changes of name, description and deleteProtection lose nothing`, async () => {
    const created = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'busy' }));
    expect(created.status).toBe(200);
    await settle(t);
    const [c] = await t.db.query(`SELECT identity, slug, name, description, delete_protection, status FROM clusters WHERE identity = $1`, [
      created.body.identity,
    ]);
    expect(c.status).toBe('started');
    const res = await fire(N, (i) =>
      t
        .as(f.users.member.token)
        .patch(`${clustersPath(f)}/${c.slug}`)
        .send(i % 3 === 0 ? { name: `busy-${i}` } : i % 3 === 1 ? { description: `description ${i}` } : { deleteProtection: i % 2 === 0 }),
    );
    // A PATCH that repeats the current deleteProtection changes nothing but still answers 200 with an (empty) audit row.
    expect(res.map((r) => r.status)).toEqual(Array(N).fill(200));
    const rows = await auditRows(t, 'CLUSTER_UPDATED', c.identity);
    // A request that happens to set the current value changes nothing and writes no row; the chain shows none lost.
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(N);
    const [after] = await t.db.query(`SELECT name, description, delete_protection FROM clusters WHERE identity = $1`, [c.identity]);
    expectConsistentChain(
      rows,
      { name: c.name, description: c.description, deleteProtection: c.delete_protection },
      { name: after.name, description: after.description, deleteProtection: after.delete_protection },
    );
    // each response shows the state right after that request, so it equals one of the rows' results
    for (const r of res) expect(typeof r.body.name).toBe('string');
  });

  it(`cluster PATCH: concurrent stop requests are refused or accepted, exactly one of them changes the intent`, async () => {
    const created = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'stopper' }));
    expect(created.status).toBe(200);
    await settle(t);
    const res = await fire(10, () => t.as(f.users.member.token).patch(`${clustersPath(f)}/stopper`).send({ status: 'stopping' }));
    for (const r of res) expect([200, 409]).toContain(r.status);
    const ok = res.filter((r) => r.status === 200).length;
    const rows = await t.db.query(
      `SELECT type, details FROM audit_events WHERE referenced_entity_identity = $1 AND type IN ('CLUSTER_STOP_REQUESTED', 'CLUSTER_UPDATED') ORDER BY id`,
      [created.body.identity],
    );
    expect(rows.length).toBeLessThanOrEqual(ok);
    // the intent changed once; repeats (if accepted) are recorded as no-op updates
    expect(rows.filter((r: Row & { type: string }) => r.type === 'CLUSTER_STOP_REQUESTED')).toHaveLength(1);
    const [after] = await t.db.query(`SELECT desired_status FROM clusters WHERE identity = $1`, [created.body.identity]);
    expect(after.desired_status).toBe('stopping');
  });

  it(`maintenance schedule PATCH: ${N} concurrent renames and window changes lose nothing`, async () => {
    const [s] = await t.db.query(
      `INSERT INTO maintenance_schedules (organisation_id, name, windows, created_at, modified_at)
       VALUES ($1, 'weekly', '[{"day":"MONDAY","startTime":"02:00","duration":60}]'::jsonb, now(), now()) RETURNING identity, name, windows`,
      [f.orgId],
    );
    const res = await fire(N, (i) =>
      t
        .as(owner)
        .patch(`/api/v1/organisations/${f.orgSlug}/maintenance-schedule/${s.identity}`)
        .send(i % 2 === 0 ? { name: `schedule ${i}` } : { windows: [{ day: 'TUESDAY', startTime: `${String(i).padStart(2, '0')}:00`, duration: 30 }] }),
    );
    expect(res.map((r) => r.status)).toEqual(Array(N).fill(200));
    const rows = await auditRows(t, 'MAINTENANCE_SCHEDULE_UPDATED', s.identity);
    // A request that happens to set the current value changes nothing and writes no row; the chain shows none lost.
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(N);
    const [after] = await t.db.query(`SELECT name, windows FROM maintenance_schedules WHERE identity = $1`, [s.identity]);
    expectConsistentChain(rows, { name: s.name, windows: s.windows }, { name: after.name, windows: after.windows });
  });

  it('environment DELETE: of 8 concurrent deletes exactly one succeeds and is audited once', async () => {
    const [env] = await t.db.query(
      `INSERT INTO environments (organisation_id, slug, name, created_at, modified_at) VALUES ($1, 'scratch', 'Scratch', now(), now()) RETURNING identity`,
      [f.orgId],
    );
    const res = await fire(8, () => t.as(owner).delete(`/api/v1/orgs/${f.orgSlug}/environments/scratch`));
    const statuses = res.map((r) => r.status).sort();
    expect(statuses.filter((s) => s < 300)).toHaveLength(1);
    expect(statuses.filter((s) => s >= 300)).toEqual(Array(7).fill(404));
    const rows = await auditRows(t, 'ENVIRONMENT_DELETED', env.identity);
    expect(rows).toHaveLength(1);
  });

  it('organisation member PATCH: concurrent role changes keep one audit row per request and a consistent chain', async () => {
    const [m] = await t.db.query(
      `SELECT identity, role, kubernetes_role FROM organisation_members WHERE organisation_id = $1 AND user_id = $2`,
      [f.orgId, f.users.viewer.id],
    );
    const roles = ['MEMBER', 'ADMIN', 'VIEWER'];
    const k8s = ['VIEW', 'EDIT', 'CLUSTER_ADMIN'];
    const res = await fire(12, (i) =>
      t
        .as(owner)
        .patch(`/api/v1/organisations/${f.orgSlug}/members/${m.identity}`)
        .send(i % 2 === 0 ? { role: roles[i % 3] } : { kubernetesRole: k8s[i % 3] }),
    );
    expect(res.map((r) => r.status)).toEqual(Array(12).fill(200));
    const rows = await auditRows(t, 'ORGANISATION_MEMBER_UPDATED', m.identity);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(12);
    const [after] = await t.db.query(`SELECT role, kubernetes_role FROM organisation_members WHERE identity = $1`, [m.identity]);
    expectConsistentChain(
      rows,
      { role: m.role, kubernetesRole: m.kubernetes_role },
      { role: after.role, kubernetesRole: after.kubernetes_role },
    );
  });
  it(`cloud account PATCH: ${N} concurrent changes of displayName and enabled lose nothing`, async () => {
    const [acc] = await t.db.query(`SELECT identity, display_name, enabled FROM cloud_accounts WHERE id = $1`, [f.accountId]);
    const res = await fire(N, (i) =>
      t
        .as(owner)
        .patch(`/api/v1/orgs/${f.orgSlug}/cloud-accounts/${acc.identity}`)
        .send(i % 2 === 0 ? { displayName: `Account ${i}` } : { enabled: i % 4 === 1 }),
    );
    expect(res.map((r) => r.status)).toEqual(Array(N).fill(200));
    const rows = await auditRows(t, 'CLOUD_ACCOUNT_UPDATED', acc.identity);
    // A request that happens to set the current value changes nothing and writes no row; the chain shows none lost.
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(N);
    const [after] = await t.db.query(`SELECT display_name, enabled FROM cloud_accounts WHERE id = $1`, [f.accountId]);
    expectConsistentChain(
      rows,
      { displayName: acc.display_name, enabled: acc.enabled },
      { displayName: after.display_name, enabled: after.enabled },
    );
    await t.db.query(`UPDATE cloud_accounts SET enabled = true WHERE id = $1`, [f.accountId]); // later tests create clusters on it
  });

  it('node pool PUT: concurrent resizes of one pool lose nothing', async () => {
    const created = await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'pooled' }));
    expect({ status: created.status, body: created.status === 200 ? null : created.body }).toEqual({ status: 200, body: null });
    await settle(t);
    const [pool] = await t.db.query(
      `SELECT p.id, p.identity, p.max_size FROM cluster_node_pools p JOIN clusters c ON c.id = p.cluster_id WHERE c.identity = $1`,
      [created.body.identity],
    );
    const res = await fire(10, (i) =>
      t
        .as(f.users.member.token)
        .put(`${clustersPath(f)}/pooled/pools/${pool.identity}`)
        .send({ name: 'workers', nodeSize: 'm5.large', minSize: 2, maxSize: 5 + i }),
    );
    expect(res.map((r) => r.status)).toEqual(Array(10).fill(200));
    const rows = await auditRows(t, 'NODE_POOL_UPDATED', pool.identity);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(10);
    const [after] = await t.db.query(`SELECT max_size FROM cluster_node_pools WHERE id = $1`, [pool.id]);
    expectConsistentChain(rows, { maxSize: Number(pool.max_size) }, { maxSize: Number(after.max_size) });
  });

  it('environment member POST: concurrent kubernetesRole overrides keep a consistent chain', async () => {
    const [m] = await t.db.query(`SELECT identity, kubernetes_role FROM organisation_members WHERE organisation_id = $1 AND user_id = $2`, [
      f.orgId,
      f.users.member.id,
    ]);
    const k8s = ['EDIT', 'CLUSTER_ADMIN', 'NONE', 'VIEW'];
    const res = await fire(12, (i) =>
      t.as(owner).post(`/api/v1/orgs/${f.orgSlug}/environments/${f.envSlug}/members/${m.identity}`).send({ kubernetesRole: k8s[i % 4] }),
    );
    expect(res.map((r) => r.status)).toEqual(Array(12).fill(200));
    const rows = await auditRows(t, 'ENVIRONMENT_MEMBER_UPDATED', m.identity);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(12);
    // exactly one request created the override
    expect(rows.filter((r) => r.details.override)).toHaveLength(1);
    const overrides = await t.db.query(
      `SELECT em.kubernetes_role FROM environment_members em JOIN organisation_members om ON om.id = em.member_id WHERE om.identity = $1`,
      [m.identity],
    );
    expect(overrides).toHaveLength(1);
    expectConsistentChain(rows, { kubernetesRole: m.kubernetes_role }, { kubernetesRole: overrides[0].kubernetes_role });
  });

  it('scheduled upgrade cancel: of 8 concurrent cancels exactly one succeeds, the others get 409', async () => {
    const [cluster] = await t.db.query(`SELECT id FROM clusters WHERE organisation_id = $1 AND deleted_at IS NULL ORDER BY id LIMIT 1`, [f.orgId]);
    const [u] = await t.db.query(
      `INSERT INTO scheduled_cluster_upgrades (organisation_id, cluster_id, from_cluster_version, to_cluster_version, window_start, window_end,
                                               status, reason, created_at, modified_at)
       VALUES ($1, $2, '1.31.5', '1.31.6', now() + interval '2 days', now() + interval '3 days', 'SCHEDULED', 'test', now(), now())
       RETURNING identity`,
      [f.orgId, cluster.id],
    );
    const res = await fire(8, () => t.as(f.users.member.token).delete(`/api/v1/orgs/${f.orgSlug}/scheduled-cluster-upgrades/${u.identity}`));
    const statuses = res.map((r) => r.status).sort();
    expect(statuses).toEqual([200, ...Array(7).fill(409)]);
    const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE type = 'SCHEDULED_CLUSTER_UPGRADE_CANCELLED'`);
    expect(n).toBe(1);
  });
});
