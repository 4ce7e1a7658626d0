import { SchedulerRunResult, UpgradeSchedulerService } from '../../src/scheduler/upgrade-scheduler.service';
import { startTestApp, TestApp } from '../support/test-app';
import { createChannel, createCluster, createOrg, createSchedule, moveChannel } from '../upgrades/fixtures';

/** A pass works in batches (here of 2 rows): every row is reached, and with two replicas each transition happens once. */
describe('upgrade scheduler in batches', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    a = await startTestApp({ SCHEDULER_BATCH_SIZE: '2' });
    b = await startTestApp({ SCHEDULER_BATCH_SIZE: '2' }, a.databaseUrl);
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

  it('takes 7 clusters (and 3 that plan nothing, between them) through every stage once', async () => {
    const owner = await a.createUser('batch-owner');
    const org = await createOrg(a, 'batch', [{ user: owner, role: 'OWNER' }]);
    const schedule = await createSchedule(a, org, [{ day: 'TUESDAY', startTime: '02:00', duration: 120 }]);
    await createChannel(a, 'ch-batch', '1.31.5');
    const ids: number[] = [];
    for (let i = 0; i < 10; i++) {
      const c = await createCluster(a, org, { slug: `b${i}`, updateChannel: 'ch-batch', autoUpgrade: true, maintenanceScheduleId: schedule.id });
      ids.push(c.id);
    }
    // candidates that plan nothing, spread over the batches: PATCH_ONLY on a minor step
    await a.db.query(`UPDATE clusters SET auto_upgrade_policy = 'PATCH_ONLY' WHERE id = ANY($1::bigint[])`, [[ids[0], ids[4], ids[9]]]);
    await moveChannel(a, 'ch-batch', '1.32.0');

    const stages: [Date, keyof SchedulerRunResult['transitions']][] = [
      [new Date('2026-11-22T10:00:00Z'), 'SCHEDULED'],
      [new Date('2026-11-23T03:00:00Z'), 'SCHEDULED_NOTIFIED'],
      [new Date('2026-11-24T02:01:00Z'), 'UPDATED'],
    ];
    for (const [when, status] of stages) {
      for (let round = 0; round < 3; round++) {
        expect(sum(await together(when), status)).toBe(round === 0 ? 7 : 0);
      }
    }
    await a.db.query(`UPDATE clusters SET observed_version = version WHERE slug LIKE 'b%'`);
    for (let round = 0; round < 3; round++) {
      expect(sum(await together(new Date('2026-11-24T02:10:00Z')), 'SUCCEEDED')).toBe(round === 0 ? 7 : 0);
    }
    const audit = await a.db.query(
      `SELECT type, count(*)::int AS n FROM audit_events WHERE type LIKE 'SCHEDULED_CLUSTER_UPGRADE_%' GROUP BY type ORDER BY type`,
    );
    expect(audit).toEqual(['SCHEDULED', 'SCHEDULED_NOTIFIED', 'SUCCEEDED', 'UPDATED'].map((s) => ({ type: `SCHEDULED_CLUSTER_UPGRADE_${s}`, n: 7 })));
    const [{ n }] = await a.db.query(`SELECT count(*)::int AS n FROM activity_events WHERE type LIKE 'SCHEDULED_CLUSTER_UPGRADE_%'`);
    expect(n).toBe(28);
  });
});
