import { UpgradeSchedulerService } from '../../src/scheduler/upgrade-scheduler.service';
import { startTestApp, TestApp, TestUser } from '../support/test-app';
import { ClusterFixture, createChannel, createCluster, createOrg, createSchedule, moveChannel, OrgFixture } from '../upgrades/fixtures';

/** Every day 02:00-04:00 UTC. */
const DAILY = ['MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY', 'SUNDAY'].map((day) => ({ day, startTime: '02:00', duration: 120 }));
const SUNDAY = new Date('2026-11-22T10:00:00Z');
const at = (iso: string) => new Date(iso);

interface Upgrade {
  identity: string;
  status: string;
  toClusterVersion: string;
  windowStart: string;
  blockedReason: string | null;
}

/** The scheduler's own changes (planning and starting upgrades) are evaluated against cluster policies. */
describe('cluster policies on the scheduler', () => {
  let t: TestApp;
  let scheduler: UpgradeSchedulerService;
  let owner: TestUser;
  let org: OrgFixture;
  let scheduleId: number;
  let channel = 0;

  beforeAll(async () => {
    t = await startTestApp({ OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false', OUTBOUND_ALLOWLIST: '127.0.0.1' });
    scheduler = t.get(UpgradeSchedulerService);
    owner = await t.createUser('polsched-owner');
    org = await createOrg(t, 'polsched', [{ user: owner, role: 'OWNER' }]);
    scheduleId = (await createSchedule(t, org, DAILY, 'daily')).id;
  });
  afterAll(async () => {
    t.clock.set(null);
    await t.close();
  });
  afterEach(async () => {
    // Policies apply organisation-wide: each test starts without any.
    await t.db.query(`DELETE FROM cluster_policies WHERE organisation_id = $1`, [org.id]);
  });

  const base = '/api/v1/orgs/polsched';
  const run = async (when: Date) => {
    t.clock.set(when);
    return scheduler.runOnce();
  };
  /** A cluster on its own channel at 1.31.5, auto-upgrading in the daily window; the channel then moves to 1.31.6. */
  const behindChannel = async (slug: string): Promise<ClusterFixture> => {
    const ch = `ch-pol-${++channel}`;
    await createChannel(t, ch, '1.31.5');
    const c = await createCluster(t, org, { slug, updateChannel: ch, autoUpgrade: true, maintenanceScheduleId: scheduleId });
    await moveChannel(t, ch, '1.31.6');
    return c;
  };
  const createPolicy = async (body: Record<string, unknown>) => {
    const res = await t.as(owner.token).post(`${base}/cluster-policies`).send(body);
    expect(res.status).toBe(200);
    return res.body as { identity: string; name: string };
  };
  const freeze = (over: Record<string, unknown> = {}) => ({
    name: 'freeze-1-31-6',
    expression: "object.version != '1.31.6'",
    message: '1.31.6 is not approved',
    messageExpression: "request.user.username + ' may not move ' + object.name + ' to ' + object.version",
    action: 'Deny',
    ...over,
  });
  const upgradesOf = async (c: ClusterFixture): Promise<Upgrade[]> => {
    const res = await t.as(owner.token).get(`${base}/scheduled-cluster-upgrades?clusterIdentities=${c.identity}&sort=createdAt,asc&size=100`);
    expect(res.status).toBe(200);
    return res.body.content;
  };
  const auditOf = async (type: string, clusterId: number) =>
    t.db.query(`SELECT actor_username, referenced_entity_identity, details FROM audit_events WHERE type = $1 AND cluster_id = $2 ORDER BY id`, [type, clusterId]);
  /** The activity sentences of a type that name a cluster. */
  const sentences = async (type: string, c: ClusterFixture) =>
    (
      await t.db.query(`SELECT message FROM activity_events WHERE organisation_id = $1 AND type = $2 AND message LIKE $3 ORDER BY id`, [
        org.id,
        type,
        `%production/${c.slug}%`,
      ])
    ).map((r: { message: string }) => r.message);
  const upgradeAudit = async (identity: string) =>
    (await t.db.query(`SELECT type FROM audit_events WHERE referenced_entity_identity = $1 ORDER BY id`, [identity])).map((a: { type: string }) => a.type);
  const versionOf = async (c: ClusterFixture) => (await t.db.query(`SELECT version FROM clusters WHERE id = $1`, [c.id]))[0].version;

  it('does not plan an upgrade a Deny policy refuses, records CLUSTER_POLICY_DENIED once, and plans it once the policy is off', async () => {
    const hook = await t.as(owner.token).post(`${base}/webhooks`).send({ url: 'http://127.0.0.1:9/policies', eventTypes: ['CLUSTER_POLICY_DENIED'] });
    expect(hook.status).toBe(200);
    const c = await behindChannel('plan-denied');
    const p = await createPolicy(freeze());

    await run(SUNDAY);
    await run(at('2026-11-22T11:00:00Z'));
    await run(at('2026-11-22T12:00:00Z'));
    expect(await upgradesOf(c)).toEqual([]);
    const denied = await auditOf('CLUSTER_POLICY_DENIED', c.id);
    expect(denied).toHaveLength(1);
    expect(denied[0]).toMatchObject({
      actor_username: 'system',
      referenced_entity_identity: p.identity,
      details: {
        policy: { new: 'freeze-1-31-6' },
        action: { new: 'Deny' },
        message: { new: 'system may not move plan-denied to 1.31.6' },
        resource: { new: 'scheduledClusterUpgrades' },
        toClusterVersion: { new: '1.31.6' },
      },
    });
    const [sentence] = await sentences('CLUSTER_POLICY_DENIED', c);
    expect(sentence).toBe(
      "policy freeze-1-31-6 denied the system's change (UPDATE scheduledClusterUpgrades) of cluster production/plan-denied: " +
        'system may not move plan-denied to 1.31.6; the upgrade from 1.31.5 to 1.31.6 (update channel ch-pol-1) was not planned',
    );
    const events = await t.db.query(`SELECT type, subject FROM webhook_events WHERE organisation_id = $1 AND type = 'CLUSTER_POLICY_DENIED'`, [org.id]);
    expect(events).toEqual([{ type: 'CLUSTER_POLICY_DENIED', subject: 'clusters/production/plan-denied' }]);

    // Off: the next pass plans it, and the denial record is cleared.
    expect((await t.as(owner.token).patch(`${base}/cluster-policies/${p.identity}`).send({ enabled: false })).status).toBe(200);
    await run(at('2026-11-22T13:00:00Z'));
    expect((await upgradesOf(c)).map((u) => [u.status, u.toClusterVersion])).toEqual([['SCHEDULED_NOTIFIED', '1.31.6']]);
    expect(await t.db.query(`SELECT * FROM cluster_policy_denials WHERE cluster_id = $1`, [c.id])).toEqual([]);
    expect(await auditOf('CLUSTER_POLICY_DENIED', c.id)).toHaveLength(1);
  });

  it('holds an upgrade a Deny policy refuses when its window opens (blockedReason), audited once, and starts it once released', async () => {
    const c = await behindChannel('start-held');
    await run(SUNDAY);
    const [planned] = await upgradesOf(c);
    expect(planned).toMatchObject({ status: 'SCHEDULED_NOTIFIED', windowStart: '2026-11-23T02:00:00.000Z', blockedReason: null });
    const p = await createPolicy(freeze());

    await run(at('2026-11-23T02:00:00Z'));
    await run(at('2026-11-23T02:10:00Z'));
    let [u] = await upgradesOf(c);
    expect(u).toMatchObject({ status: 'SCHEDULED_NOTIFIED', blockedReason: 'policy freeze-1-31-6: system may not move start-held to 1.31.6' });
    expect(await versionOf(c)).toBe('1.31.5');
    expect(await upgradeAudit(u.identity)).toEqual(['SCHEDULED_CLUSTER_UPGRADE_SCHEDULED', 'SCHEDULED_CLUSTER_UPGRADE_SCHEDULED_NOTIFIED', 'SCHEDULED_CLUSTER_UPGRADE_BLOCKED']);
    const denied = await auditOf('CLUSTER_POLICY_DENIED', c.id);
    expect(denied).toHaveLength(1);
    expect(denied[0]).toMatchObject({ actor_username: 'system', referenced_entity_identity: p.identity });
    expect((await sentences('CLUSTER_POLICY_DENIED', c))[0]).toContain(`the upgrade to 1.31.6 (upgrade ${u.identity}) is held`);

    // The policy is turned into Audit: released on the next pass, started on the one after, the finding recorded.
    expect((await t.as(owner.token).patch(`${base}/cluster-policies/${p.identity}`).send({ action: 'Audit' })).status).toBe(200);
    await run(at('2026-11-23T02:20:00Z'));
    [u] = await upgradesOf(c);
    expect(u).toMatchObject({ status: 'SCHEDULED_NOTIFIED', blockedReason: null });
    await run(at('2026-11-23T02:30:00Z'));
    [u] = await upgradesOf(c);
    expect(u.status).toBe('UPDATED');
    expect(await versionOf(c)).toBe('1.31.6');
    expect((await upgradeAudit(u.identity)).slice(3)).toEqual(['SCHEDULED_CLUSTER_UPGRADE_UNBLOCKED', 'SCHEDULED_CLUSTER_UPGRADE_UPDATED']);
    const violated = await auditOf('CLUSTER_POLICY_VIOLATED', c.id);
    expect(violated).toHaveLength(1);
    expect(violated[0]).toMatchObject({ actor_username: 'system', referenced_entity_identity: p.identity, details: { action: { new: 'Audit' } } });
  });

  it('misses the window of an upgrade still held by a policy when the window ends', async () => {
    const c = await behindChannel('held-missed');
    await run(SUNDAY);
    await createPolicy(freeze({ action: 'Deny', messageExpression: undefined }));
    await run(at('2026-11-23T02:00:00Z'));
    await run(at('2026-11-23T04:00:00Z'));
    const [u] = await upgradesOf(c);
    expect(u).toMatchObject({ status: 'MISSED', blockedReason: 'policy freeze-1-31-6: 1.31.6 is not approved' });
    const [missed] = await sentences('SCHEDULED_CLUSTER_UPGRADE_MISSED', c);
    expect(missed).toContain('(held by policy freeze-1-31-6: 1.31.6 is not approved)');
    expect(await versionOf(c)).toBe('1.31.5');
  });

  it('lets Warn and Audit policies through, recording the Audit findings of planning and starting as CLUSTER_POLICY_VIOLATED', async () => {
    const c = await behindChannel('audited');
    await createPolicy(freeze({ name: 'warn-only', action: 'Warn' }));
    const audit = await createPolicy(freeze({ name: 'audit-only', action: 'Audit' }));
    await run(SUNDAY);
    await run(at('2026-11-23T02:00:00Z'));
    const [u] = await upgradesOf(c);
    expect(u.status).toBe('UPDATED');
    expect(await versionOf(c)).toBe('1.31.6');
    const violated = await auditOf('CLUSTER_POLICY_VIOLATED', c.id);
    const byPolicy = (id: string) => violated.filter((v: { referenced_entity_identity: string }) => v.referenced_entity_identity === id);
    // Planned (UPDATE of the upgrade's target) and started: one record each.
    expect(byPolicy(audit.identity)).toHaveLength(2);
    expect(byPolicy(audit.identity).every((v: { actor_username: string }) => v.actor_username === 'system')).toBe(true);
    expect(await auditOf('CLUSTER_POLICY_DENIED', c.id)).toEqual([]);
  });

  it('cuts a policy saved before the size-aware limits (its expression grows) on the scheduler: Fail denies the plan naming the error, Ignore plans and records it', async () => {
    const grows = `[object.name]${'.map(a, a + a)'.repeat(27)}[0].size() > 0`;
    // The API refuses it now; a policy saved before the limits is in the table as it was.
    expect((await t.as(owner.token).post(`${base}/cluster-policies`).send({ name: 'grows', expression: grows, message: 'grows', action: 'Deny' })).status).toBe(400);
    const [p] = await t.db.query(
      `INSERT INTO cluster_policies (organisation_id, name, expression, message, action, created_by, created_at, modified_at)
       VALUES ($1, 'grows', $2, 'the doubling policy', 'Deny', 'before-the-limits', now(), now()) RETURNING identity`,
      [org.id, grows],
    );
    const c = await behindChannel('grows');
    await run(SUNDAY);
    expect(await upgradesOf(c)).toEqual([]);
    const [denied] = await auditOf('CLUSTER_POLICY_DENIED', c.id);
    expect(denied).toMatchObject({
      actor_username: 'system',
      referenced_entity_identity: p.identity,
      details: { message: { new: expect.stringMatching(/^the doubling policy \(the expression could not be evaluated: evaluation stopped: `a \+ a` .* would build a value of \d+ characters or elements; at most 1048576\)$/) } },
    });

    await t.db.query(`UPDATE cluster_policies SET failure_policy = 'Ignore' WHERE identity = $1`, [p.identity]);
    await run(at('2026-11-22T11:00:00Z'));
    expect((await upgradesOf(c)).map((u) => u.status)).toEqual(['SCHEDULED_NOTIFIED']);
    const [ignored] = await auditOf('CLUSTER_POLICY_EVALUATION_FAILED', c.id);
    expect(ignored).toMatchObject({
      actor_username: 'system',
      referenced_entity_identity: p.identity,
      details: { failurePolicy: { new: 'Ignore' }, error: { new: expect.stringMatching(/^evaluation stopped/) }, resource: { new: 'scheduledClusterUpgrades' } },
    });
    await t.http().get('/health').expect(200);
  });

  it('never keeps the scheduler from closing the upgrade of a cluster that is deleted, whatever the policies say', async () => {
    const c = await behindChannel('deleted');
    await run(SUNDAY);
    await createPolicy({ name: 'deny-everything', expression: 'false', message: 'nothing may change', action: 'Deny' });
    await run(at('2026-11-23T02:00:00Z'));
    expect((await upgradesOf(c))[0].blockedReason).toBe('policy deny-everything: nothing may change');
    await t.db.query(`UPDATE clusters SET status = 'deleted', deleted_at = now() WHERE id = $1`, [c.id]);
    await run(at('2026-11-23T02:10:00Z'));
    const [u] = await t.db.query(`SELECT status FROM scheduled_cluster_upgrades WHERE cluster_id = $1`, [c.id]);
    expect(u.status).toBe('CANCELLED');
  });
});
