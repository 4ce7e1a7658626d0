import { UpgradeSchedulerService, SchedulerRunResult } from '../../src/scheduler/upgrade-scheduler.service';
import { startTestApp, TestApp, TestUser } from '../support/test-app';
import { createChannel, createCluster, createOrg, createSchedule, moveChannel } from '../upgrades/fixtures';

/** Two app instances (replicas) on one database run the scheduler at the same moment. */
describe('upgrade scheduler with two replicas', () => {
  let a: TestApp;
  let b: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    a = await startTestApp();
    b = await startTestApp({}, a.databaseUrl);
    owner = await a.createUser('replica-owner');
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const together = async (when: Date): Promise<SchedulerRunResult[]> => {
    a.clock.set(when);
    b.clock.set(when);
    return Promise.all([a.get(UpgradeSchedulerService).runOnce(), b.get(UpgradeSchedulerService).runOnce()]);
  };
  const sum = (results: SchedulerRunResult[], status: keyof SchedulerRunResult['transitions']) =>
    results.reduce((n, r) => n + (r.transitions[status] ?? 0), 0);

  it('makes each transition exactly once', async () => {
    const org = await createOrg(a, 'acme', [{ user: owner, role: 'OWNER' }]);
    const schedule = await createSchedule(a, org, [{ day: 'TUESDAY', startTime: '02:00', duration: 120 }]);
    await createChannel(a, 'ch-rep', '1.31.5');
    const clusters = [];
    for (let i = 0; i < 5; i++) {
      clusters.push(await createCluster(a, org, { slug: `rep${i}`, updateChannel: 'ch-rep', autoUpgrade: true, maintenanceScheduleId: schedule.id }));
    }
    await moveChannel(a, 'ch-rep', '1.31.6');

    const stages: [Date, string][] = [
      [new Date('2026-11-22T10:00:00Z'), 'SCHEDULED'],
      [new Date('2026-11-23T03:00:00Z'), 'SCHEDULED_NOTIFIED'],
      [new Date('2026-11-24T02:01:00Z'), 'UPDATED'],
    ];
    for (const [when, status] of stages) {
      // repeat each stage a few times: concurrent and later runs must not repeat a transition
      for (let round = 0; round < 3; round++) {
        const results = await together(when);
        if (round === 0) expect(sum(results, status as never)).toBe(clusters.length);
        else expect(sum(results, status as never)).toBe(0);
      }
    }
    await a.db.query(`UPDATE clusters SET observed_version = version WHERE slug LIKE 'rep%'`);
    for (let round = 0; round < 3; round++) {
      const results = await together(new Date('2026-11-24T02:10:00Z'));
      expect(sum(results, 'SUCCEEDED')).toBe(round === 0 ? clusters.length : 0);
    }

    const rows = await a.db.query(
      `SELECT u.status, count(*)::int AS n FROM scheduled_cluster_upgrades u JOIN clusters c ON c.id = u.cluster_id
        WHERE c.slug LIKE 'rep%' GROUP BY u.status`,
    );
    expect(rows).toEqual([{ status: 'SUCCEEDED', n: clusters.length }]);
    const audit = await a.db.query(
      `SELECT type, count(*)::int AS n FROM audit_events WHERE type LIKE 'SCHEDULED_CLUSTER_UPGRADE_%' GROUP BY type ORDER BY type`,
    );
    expect(audit).toEqual(
      ['SCHEDULED', 'SCHEDULED_NOTIFIED', 'SUCCEEDED', 'UPDATED'].map((s) => ({ type: `SCHEDULED_CLUSTER_UPGRADE_${s}`, n: clusters.length })),
    );
    const activity = await a.db.query(
      `SELECT count(*)::int AS n FROM activity_events WHERE type LIKE 'SCHEDULED_CLUSTER_UPGRADE_%'`,
    );
    expect(activity[0].n).toBe(4 * clusters.length);
    for (const c of clusters) {
      const [row] = await a.db.query(`SELECT version FROM clusters WHERE id = $1`, [c.id]);
      expect(row.version).toBe('1.31.6');
    }
  });

  it('runs by itself every SCHEDULER_INTERVAL_SECONDS when background jobs are enabled', async () => {
    const c = await startTestApp({ BACKGROUND_JOBS_ENABLED: 'true', SCHEDULER_INTERVAL_SECONDS: '0.2' });
    try {
      const user = await c.createUser('loop-owner');
      const org = await createOrg(c, 'loop', [{ user, role: 'OWNER' }]);
      await createChannel(c, 'ch-loop', '1.31.6');
      const cluster = await createCluster(c, org, { slug: 'looped', updateChannel: 'ch-loop', autoUpgrade: true });
      let rows: { status: string }[] = [];
      for (let i = 0; i < 50 && rows.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
        rows = await c.db.query(`SELECT status FROM scheduled_cluster_upgrades WHERE cluster_id = $1`, [cluster.id]);
      }
      expect(rows).toHaveLength(1);
    } finally {
      await c.close();
    }
  });
});
