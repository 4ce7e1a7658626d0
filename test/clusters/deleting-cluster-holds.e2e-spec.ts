import { startTestApp, TestApp } from '../support/test-app';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, settle } from './cluster-fixtures';

/**
 * One rule for what a cluster holds (ADR 0171): until its deletion is requested, its environment, maintenance
 * schedule and cluster version; from then on nothing but its cloud account, which stays held until 24 hours after
 * the deletion completes (and the 409 says when, and why).
 */
describe('what a cluster in deleting holds', () => {
  let t: TestApp;
  let f: OrgFixture;

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '1000' });
    f = await createOrgFixture(t);
  });
  afterAll(async () => t.close());

  it('a live cluster holds its environment, schedule and cloud account; once its deletion is requested only the account (and its primary credentials, until the deletion completes) stays held', async () => {
    const owner = t.as(f.users.owner.token);
    const org = `/api/v1/orgs/${f.orgSlug}`;
    const env = await owner.post(`${org}/environments`).send({ name: 'doomed-env', type: 'development' });
    expect(env.status).toBe(200);
    const schedule = await owner.post(`/api/v1/organisations/${f.orgSlug}/maintenance-schedule`).send({ name: 'doomed-window', windows: [{ day: 'MONDAY', startTime: '03:00', duration: 60 }] });
    expect(schedule.status).toBe(200);
    const fx = { ...f, envSlug: 'doomed-env' };
    const created = await owner.post(clustersPath(fx)).send(clusterBody(fx, { name: 'doomed', maintenanceScheduleIdentity: schedule.body.identity }));
    expect(created.status).toBe(200);
    await settle(t);

    // Live: each delete is refused and says what holds it.
    const envLive = await owner.delete(`${org}/environments/doomed-env`);
    expect(envLive.status).toBe(409);
    expect(envLive.body.message).toContain('still holds 1 cluster');
    const scheduleLive = await owner.delete(`/api/v1/organisations/${f.orgSlug}/maintenance-schedule/${schedule.body.identity}`);
    expect(scheduleLive.status).toBe(409);
    expect(scheduleLive.body.message).toContain('used by 1 cluster');
    const accountLive = await owner.delete(`${org}/cloud-accounts/${f.accountIdentity}`);
    expect(accountLive.status).toBe(409);
    expect(accountLive.body.message).toBe(
      "Cloud account 'Main account' is used by 1 cluster ('doomed'), which is not deleted; delete it first, then retry 24 hours after the deletion completes. " +
        "A cloud account can be deleted 24 hours after the last cluster that used it is deleted: deleting a cluster uses the account to remove the cluster's cloud resources, and the 24 hours leave time for the provider's clean-up to finish.",
    );

    // Deletion requested (what `terraform destroy` does, without waiting): the schedule and environment are free at once.
    const deleting = await owner.patch(`${clustersPath(fx)}/doomed`).send({ status: 'deleting' });
    expect(deleting.status).toBe(200);
    const [row] = await t.db.query(`SELECT status, desired_status, deleted_at FROM clusters WHERE slug = 'doomed'`);
    expect(row.deleted_at).toBeNull();
    const accountDeleting = await owner.delete(`${org}/cloud-accounts/${f.accountIdentity}`);
    expect(accountDeleting.status).toBe(409);
    expect(accountDeleting.body.message).toContain("is used by 1 cluster ('doomed'), which is being deleted; retry 24 hours after its deletion completes.");
    // Its account's primary credentials too (the deletion uses them), and the 409 says so and when to retry.
    const credLive = `${org}/cloud-accounts/${f.accountIdentity}/credentials/${f.credentialIdentity}`;
    const credDeleting = await owner.delete(credLive);
    expect(credDeleting.status).toBe(409);
    expect(credDeleting.body.message).toBe(
      "Credentials 'deploy key' are the primary credentials of cloud account 'Main account', which has 1 cluster ('doomed'), which is being deleted: " +
        'the deletion uses these credentials to remove the cloud resources; retry once it has completed.',
    );
    expect((await owner.get(`/api/v1/organisations/${f.orgSlug}/maintenance-schedule/${schedule.body.identity}`)).body.clusterCount).toBe(0);
    expect((await owner.delete(`/api/v1/organisations/${f.orgSlug}/maintenance-schedule/${schedule.body.identity}`)).status).toBe(204);
    expect((await owner.delete(`${org}/environments/doomed-env`)).status).toBe(204);

    // The deletion still completes without them.
    await settle(t);
    const [done] = await t.db.query(`SELECT status, deleted_at, maintenance_schedule_id FROM clusters WHERE slug = 'doomed'`);
    expect(done).toMatchObject({ status: 'deleted', maintenance_schedule_id: null });
    expect(done.deleted_at).not.toBeNull();
    expect((await owner.delete(credLive)).status).toBe(204);
    // Then the account's 409 gives the moment it becomes deletable.
    const accountAfter = await owner.delete(`${org}/cloud-accounts/${f.accountIdentity}`);
    expect(accountAfter.status).toBe(409);
    const possibleAt = new Date(new Date(done.deleted_at).getTime() + 24 * 3_600_000).toISOString();
    expect(accountAfter.body.message).toContain(`it can be deleted from ${possibleAt}.`);
    expect(accountAfter.body.message).toContain('deleting a cluster uses the account');
  });
});
