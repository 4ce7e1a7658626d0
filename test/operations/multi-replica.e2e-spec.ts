import { PROVISIONING_STEPS } from '../../src/clusters/cluster-state-machine';
import { ReconcilerService } from '../../src/provisioning/reconciler.service';
import { SchedulerRunResult, UpgradeSchedulerService } from '../../src/scheduler/upgrade-scheduler.service';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture } from '../clusters/cluster-fixtures';
import { createTestDatabase, startTestApp, TestApp } from '../support/test-app';
import { createChannel, moveChannel } from '../upgrades/fixtures';

/**
 * Two instances of the app (replicas) on one database (issue 8, item 4). Requests go through both;
 * both replicas' reconcilers and schedulers run at the same moment, again and again. Each cluster
 * transition and each upgrade transition must happen exactly once: one audit row and one activity
 * event per step, and the passes' own counters add up to the same number.
 */
describe('two replicas on one database', () => {
  let a: TestApp;
  let b: TestApp;
  let f: OrgFixture;
  const replicas = () => [a, b];
  /** Total of steps the reconcilers say they made (summed over both replicas). */
  let reconcilerSteps = 0;
  /** Steps per replica: both must have done part of the work, or the test shows nothing. */
  const stepsBy = [0, 0];

  beforeAll(async () => {
    const url = await createTestDatabase();
    a = await startTestApp({}, url);
    b = await startTestApp({}, url);
    f = await createOrgFixture(a);
    await createChannel(a, 'ch-replicas', '1.31.5');
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  /** Both reconcilers at once, until two consecutive rounds move nothing. */
  async function reconcileTogether(maxRounds = 40): Promise<void> {
    let idle = 0;
    for (let round = 0; round < maxRounds && idle < 2; round++) {
      const moved = await Promise.all(replicas().map((r) => r.get(ReconcilerService).runOnce()));
      moved.forEach((n, i) => (stepsBy[i] += n));
      const sum = moved.reduce((s, n) => s + n, 0);
      reconcilerSteps += sum;
      idle = sum === 0 ? idle + 1 : 0;
    }
    expect(idle).toBe(2);
  }

  async function statusOf(identity: string) {
    const [row] = await a.db.query(`SELECT status, desired_status, deleted_at, version, observed_version FROM clusters WHERE identity = $1`, [
      identity,
    ]);
    return row;
  }

  /** Each replica's API serves the change; the caller alternates them. */
  const api = (i: number) => replicas()[i % 2].as(f.users.member.token);

  const lifecycle: { identity: string; slug: string }[] = [];
  const upgrading: { identity: string; slug: string }[] = [];

  it('creates clusters through both replicas and provisions them with both reconcilers running at once', async () => {
    const creates = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        api(i)
          .post(clustersPath(f))
          .send(
            clusterBody(
              f,
              i < 5
                ? { name: `life-${i}` }
                : { name: `upgrade-${i}`, updateChannel: 'ch-replicas', enableAutoUpgrade: true },
            ),
          ),
      ),
    );
    expect(creates.map((r) => r.status)).toEqual(Array(8).fill(200));
    for (const r of creates) (r.body.name.startsWith('life') ? lifecycle : upgrading).push({ identity: r.body.identity, slug: r.body.name });

    await reconcileTogether();
    for (const c of [...lifecycle, ...upgrading]) expect((await statusOf(c.identity)).status).toBe('started');
    // both replicas see the same state
    for (const r of replicas()) {
      const list = await r.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/clusters?size=50`);
      expect(list.status).toBe(200);
      expect(list.body.content.map((c: { status: string }) => c.status)).toEqual(Array(8).fill('started'));
    }
  });

  it('stops, starts and deletes clusters through both replicas; every transition happens once', async () => {
    const request = async (body: Record<string, unknown>) => {
      // each request goes through one replica, the next cluster's through the other
      const res = await Promise.all(lifecycle.map((c, i) => api(i + 1).patch(`${clustersPath(f)}/${c.slug}`).send(body)));
      expect(res.map((r) => r.status)).toEqual(Array(lifecycle.length).fill(200));
    };
    await request({ status: 'stopping' });
    await reconcileTogether();
    for (const c of lifecycle) expect(await statusOf(c.identity)).toMatchObject({ status: 'stopped', desired_status: null });

    await request({ status: 'starting' });
    await reconcileTogether();
    for (const c of lifecycle) expect(await statusOf(c.identity)).toMatchObject({ status: 'started', desired_status: null });

    const deletes = await Promise.all(lifecycle.map((c, i) => api(i).delete(`${clustersPath(f)}/${c.slug}`)));
    expect(deletes.map((r) => r.status)).toEqual(Array(lifecycle.length).fill(200));
    await reconcileTogether();
    for (const c of lifecycle) {
      const row = await statusOf(c.identity);
      expect(row.status).toBe('deleted');
      expect(row.deleted_at).not.toBeNull();
      for (const r of replicas()) expect((await r.as(f.users.viewer.token).get(`${clustersPath(f)}/${c.slug}`)).status).toBe(404);
    }

    const expected = [
      'CLUSTER_CREATED',
      'CLUSTER_PROVISIONING_STEP_COMPLETED:provisioning',
      ...PROVISIONING_STEPS.map((s) => `CLUSTER_PROVISIONING_STEP_COMPLETED:${s}`),
      'CLUSTER_PROVISIONED:provisioned',
      'CLUSTER_STARTING:starting',
      'CLUSTER_STARTED:started',
      'CLUSTER_STOP_REQUESTED',
      'CLUSTER_STOPPING:stopping',
      'CLUSTER_STOPPED:stopped',
      'CLUSTER_START_REQUESTED',
      'CLUSTER_STARTING:starting',
      'CLUSTER_STARTED:started',
      'CLUSTER_DELETE_REQUESTED',
      'CLUSTER_DELETING:deleting',
      'CLUSTER_DELETED:deleted',
    ];
    for (const c of lifecycle) {
      const rows: { type: string; step: string | null }[] = await a.db.query(
        `SELECT a.type, a.details->'step'->>'new' AS step FROM audit_events a JOIN clusters c ON c.id = a.cluster_id
          WHERE c.identity = $1 ORDER BY a.id`,
        [c.identity],
      );
      expect(rows.map((r) => (r.step ? `${r.type}:${r.step}` : r.type))).toEqual(expected);
    }
  });

  it('drives scheduled upgrades with both schedulers and both reconcilers running at once; each transition once', async () => {
    await moveChannel(a, 'ch-replicas', '1.31.6');
    const t0 = new Date(Math.ceil((a.clock.now().getTime() + 60_000) / 60_000) * 60_000);
    const scheduler: Record<string, number> = {};
    let skipped = 0;
    const roundsAt = async (when: Date, rounds: number) => {
      for (const r of replicas()) r.clock.set(when);
      for (let round = 0; round < rounds; round++) {
        const [sa, sb, ra, rb] = await Promise.all([
          a.get(UpgradeSchedulerService).runOnce(),
          b.get(UpgradeSchedulerService).runOnce(),
          a.get(ReconcilerService).runOnce(),
          b.get(ReconcilerService).runOnce(),
        ]);
        reconcilerSteps += ra + rb;
        stepsBy[0] += ra;
        stepsBy[1] += rb;
        for (const s of [sa, sb] as SchedulerRunResult[]) {
          if (s.skipped) skipped++;
          for (const [k, n] of Object.entries(s.transitions)) scheduler[k] = (scheduler[k] ?? 0) + (n ?? 0);
        }
      }
    };
    try {
      await roundsAt(t0, 4); // scheduled (and announced: the default window opens within a day)
      await roundsAt(new Date(t0.getTime() + 24 * 3600_000 + 60_000), 8); // window open: started, applied, finished
    } finally {
      for (const r of replicas()) r.clock.set(null);
    }

    const n = upgrading.length;
    expect(scheduler).toEqual({ SCHEDULED: n, SCHEDULED_NOTIFIED: n, UPDATED: n, SUCCEEDED: n });
    // (`skipped` counts runs that met the other replica's advisory lock and did nothing: timing decides how many)
    expect(skipped).toBeLessThan(24);
    for (const c of upgrading) {
      expect(await statusOf(c.identity)).toMatchObject({ status: 'started', version: '1.31.6', observed_version: '1.31.6' });
      const upgrades = await a.db.query(
        `SELECT u.status FROM scheduled_cluster_upgrades u JOIN clusters c ON c.id = u.cluster_id WHERE c.identity = $1`,
        [c.identity],
      );
      expect(upgrades).toEqual([{ status: 'SUCCEEDED' }]);
      const audit: { type: string; n: number }[] = await a.db.query(
        `SELECT a.type, count(*)::int AS n FROM audit_events a JOIN clusters c ON c.id = a.cluster_id
          WHERE c.identity = $1 AND (a.type LIKE 'SCHEDULED_CLUSTER_UPGRADE_%' OR a.type = 'CLUSTER_UPGRADED')
          GROUP BY a.type ORDER BY a.type`,
        [c.identity],
      );
      expect(audit).toEqual(
        ['CLUSTER_UPGRADED', 'SCHEDULED_CLUSTER_UPGRADE_SCHEDULED', 'SCHEDULED_CLUSTER_UPGRADE_SCHEDULED_NOTIFIED', 'SCHEDULED_CLUSTER_UPGRADE_SUCCEEDED', 'SCHEDULED_CLUSTER_UPGRADE_UPDATED'].map(
          (type) => ({ type, n: 1 }),
        ),
      );
    }
  });

  it('the reconcilers counted exactly the steps recorded, and every audit row has its one activity event', async () => {
    const [{ n: systemSteps }] = await a.db.query(
      `SELECT count(*)::int AS n FROM audit_events
        WHERE organisation_id = $1 AND actor_username = 'system' AND type LIKE 'CLUSTER_%'`,
      [f.orgId],
    );
    expect(reconcilerSteps).toBe(systemSteps);
    expect(stepsBy[0]).toBeGreaterThan(0);
    expect(stepsBy[1]).toBeGreaterThan(0);
    const audit = await a.db.query(
      `SELECT type, count(*)::int AS n FROM audit_events WHERE organisation_id = $1 GROUP BY type ORDER BY type`,
      [f.orgId],
    );
    const activity = await a.db.query(
      `SELECT type, count(*)::int AS n FROM activity_events WHERE organisation_id = $1 GROUP BY type ORDER BY type`,
      [f.orgId],
    );
    expect(activity).toEqual(audit);
    expect(audit.find((r: { type: string }) => r.type === 'CLUSTER_FAILED')).toBeUndefined();
  });
});
