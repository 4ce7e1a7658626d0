import { Executor, executorKey, MAX_ADMISSION_RETRY_AFTER_SECONDS } from '../../src/executor/executor';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture } from '../clusters/cluster-fixtures';
import { expectErrorBody, startTestApp, TestApp } from '../support/test-app';
import { AUDIT, GROWTH as ALL_GROWTH, HUNDRED, REFUSED } from './growth-expressions';

/** The growth family, less the kinds only the unit test needs. */
const GROWTH = Object.fromEntries(
  ['map doubling', 'map doubling with size() calls', 'string repetition through join', 'list concatenation in comprehensions', 'nested exists over a product', 'deep ternaries'].map(
    (k) => [k, ALL_GROWTH[k]],
  ),
);

const policiesPath = (f: OrgFixture) => `/api/v1/orgs/${f.orgSlug}/cluster-policies`;
const outcome = (app: TestApp, key: string) => app.get(Executor).outcomes.get(key) ?? 0;

/**
 * Cluster policy expressions cannot hurt the service (end to end, real app and database): growth is refused when
 * written (a VIEWER's dry-run, an ADMIN's policy), a policy saved before the limits is cut at run time on every
 * write path and follows its failurePolicy, evaluation runs on the executor's worker threads (a worker that runs
 * out of heap is replaced, the next evaluation succeeds), and dry-runs go through the organisation's admission.
 */
describe('cluster policies in a sandbox', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  /** A policy stored as one saved before the size-aware limits (the API refuses it now). */
  const savedBeforeTheLimits = async (app: TestApp, f: OrgFixture, name: string, expression: string, over: { failurePolicy?: string; messageExpression?: string; action?: string } = {}) => {
    const [row] = await app.db.query(
      `INSERT INTO cluster_policies (organisation_id, name, expression, message, message_expression, action, failure_policy, created_by, created_at, modified_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'before-the-limits', now(), now()) RETURNING identity`,
      [f.orgId, name, expression, `${name} fails`, over.messageExpression ?? null, over.action ?? 'Deny', over.failurePolicy ?? 'Fail'],
    );
    return row.identity as string;
  };
  const audit = async (app: TestApp, type: string, policy: string) =>
    app.db.query(`SELECT actor_username, details FROM audit_events WHERE type = $1 AND referenced_entity_identity = $2 ORDER BY id`, [type, policy]);

  it('makes no executor round trip for changes in an organisation without enabled policies (the PATCH stays lean)', async () => {
    const f = await createOrgFixture(t);
    const executor = t.get(Executor);
    const tasks = () => [...executor.outcomes.values()].reduce((a, b) => a + b, 0);
    const before = tasks();
    const member = t.as(f.users.member.token);
    expect((await member.post(clustersPath(f)).send(clusterBody(f, { name: 'lean' }))).status).toBe(200);
    expect((await member.patch(`${clustersPath(f)}/lean`).send({ description: 'changed' })).status).toBe(200);
    expect((await member.post(`${clustersPath(f)}/lean/pools`).send({ name: 'extra', nodeSize: 'm5.large', minSize: 1, maxSize: 2 })).status).toBe(200);
    // A disabled policy is not evaluated either.
    await t.db.query(
      `INSERT INTO cluster_policies (organisation_id, name, expression, message, action, enabled, created_by, created_at, modified_at)
       VALUES ($1, 'off', 'false', 'm', 'Deny', false, 'x', now(), now())`,
      [f.orgId],
    );
    expect((await member.patch(`${clustersPath(f)}/lean`).send({ description: 'again' })).status).toBe(200);
    expect(tasks()).toBe(before);
  });

  it("refuses the audit's expression and the growth family in a VIEWER's dry-run and an ADMIN's policy, naming the sub-expression and its cost", async () => {
    const f = await createOrgFixture(t);
    expect((await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f))).status).toBe(200);
    const checked = outcome(t, 'policies.check ok');
    for (const [kind, expression] of Object.entries(GROWTH)) {
      const body = { name: 'growth', expression, message: 'grows', action: 'Deny' };
      const dryRun = await t.as(f.users.viewer.token).post(`${policiesPath(f)}/evaluate`).send(body);
      expectErrorBody(dryRun.body, 400);
      expect({ kind, status: dryRun.status, errors: dryRun.body.errors }).toEqual({
        kind,
        status: 400,
        errors: [{ field: 'expression', message: expect.stringMatching(new RegExp(`^expression: line 1, column \\d+: .*${REFUSED.source}`)) }],
      });
      const saved = await t.as(f.users.admin.token).post(policiesPath(f)).send(body);
      expect({ kind, status: saved.status }).toEqual({ kind, status: 400 });
    }
    expect((await t.db.query(`SELECT count(*)::int AS n FROM cluster_policies WHERE organisation_id = $1`, [f.orgId]))[0].n).toBe(0);
    // The checks ran on the executor's worker threads (twelve of them), and the service is up.
    expect(outcome(t, 'policies.check ok') - checked).toBe(2 * Object.keys(GROWTH).length);
    await t.http().get('/health').expect(200);

    const [error] = (await t.as(f.users.viewer.token).post(`${policiesPath(f)}/evaluate`).send({ name: 'a', expression: AUDIT, message: 'm', action: 'Deny' })).body.errors;
    expect(error.message).toMatch(/^expression: line 1, column \d+: `a \+ a` may build a value of 2097152 characters or elements \(estimated cost \d+\); at most 1048576$/);
  });

  it('cuts a policy saved before the limits on cluster and node-pool writes: Fail refuses the change naming the policy, Ignore lets it through and records it', async () => {
    const f = await createOrgFixture(t);
    const member = t.as(f.users.member.token);
    expect((await member.post(clustersPath(f)).send(clusterBody(f))).status).toBe(200);
    const policy = await savedBeforeTheLimits(t, f, 'grows', AUDIT);

    const created = await member.post(clustersPath(f)).send(clusterBody(f, { name: 'other' }));
    expectErrorBody(created.body, 400);
    expect(created.body.errors).toEqual([
      {
        field: 'policies.grows',
        message: expect.stringMatching(/^policy grows: grows fails \(the expression could not be evaluated: evaluation stopped: `a \+ a` \(line 1, column \d+\) would build a value of \d+ characters or elements; at most 1048576\)$/),
      },
    ]);
    const patched = await member.patch(`${clustersPath(f)}/web`).send({ description: 'changed' });
    expect(patched.status).toBe(400);
    expect(patched.body.errors[0].field).toBe('policies.grows');
    const pool = await member.post(`${clustersPath(f)}/web/pools`).send({ name: 'extra', nodeSize: 'm5.large', minSize: 1, maxSize: 2 });
    expect(pool.status).toBe(400);
    expect(pool.body.errors[0].message).toMatch(/could not be evaluated: evaluation stopped/);
    const [{ description }] = await t.db.query(`SELECT description FROM clusters WHERE organisation_id = $1 AND slug = 'web'`, [f.orgId]);
    expect(description).not.toBe('changed');
    expect(await audit(t, 'CLUSTER_POLICY_EVALUATION_FAILED', policy)).toEqual([]);

    // An administrator can still switch it to Ignore (its expression is not checked again when unchanged).
    const ignore = await t.as(f.users.admin.token).patch(`${policiesPath(f)}/${policy}`).send({ failurePolicy: 'Ignore' });
    expect(ignore.status).toBe(200);
    expect(ignore.body).toMatchObject({ failurePolicy: 'Ignore', expression: AUDIT });
    expect((await member.patch(`${clustersPath(f)}/web`).send({ description: 'changed' })).status).toBe(200);
    expect((await member.post(`${clustersPath(f)}/web/pools`).send({ name: 'extra', nodeSize: 'm5.large', minSize: 1, maxSize: 2 })).status).toBe(200);
    const recorded = await audit(t, 'CLUSTER_POLICY_EVALUATION_FAILED', policy);
    expect(recorded).toHaveLength(2);
    expect(recorded[0]).toMatchObject({
      actor_username: f.users.member.username,
      details: { policy: { new: 'grows' }, failurePolicy: { new: 'Ignore' }, error: { new: expect.stringMatching(/^evaluation stopped: `a \+ a`/) }, resource: { new: 'clusters' } },
    });
    expect(recorded[1].details.resource.new).toBe('nodePools');
    const [activity] = await t.db.query(`SELECT message FROM activity_events WHERE organisation_id = $1 AND type = 'CLUSTER_POLICY_EVALUATION_FAILED' ORDER BY id LIMIT 1`, [f.orgId]);
    expect(activity.message).toMatch(
      new RegExp(`^${f.users.member.username}'s change \\(UPDATE clusters\\) of cluster production/web went through without policy grows, which could not be evaluated \\(failurePolicy Ignore\\): evaluation stopped`),
    );
    const updated = await t.db.query(`SELECT details FROM audit_events WHERE type = 'CLUSTER_POLICY_UPDATED' AND referenced_entity_identity = $1`, [policy]);
    expect(updated[0].details).toEqual({ failurePolicy: { old: 'Fail', new: 'Ignore' } });
  });

  it('falls back to the message when a message expression grows, and answers the evaluation error in dry-runs and scans', async () => {
    const f = await createOrgFixture(t);
    expect((await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f))).status).toBe(200);
    await savedBeforeTheLimits(t, f, 'message-grows', 'object.highlyAvailable', { messageExpression: `[object.name]${'.map(a, a + a)'.repeat(27)}[0]` });
    const denied = await t.as(f.users.member.token).patch(`${clustersPath(f)}/web`).send({ description: 'x' });
    expect(denied.body.errors).toEqual([{ field: 'policies.message-grows', message: 'policy message-grows: message-grows fails' }]);

    const scanned = await savedBeforeTheLimits(t, f, 'scanned', AUDIT, { action: 'Audit' });
    const violations = await t.as(f.users.viewer.token).get(`${policiesPath(f)}/${scanned}/violations`);
    expect(violations.status).toBe(200);
    expect(violations.body.content).toEqual([expect.objectContaining({ clusterSlug: 'web', message: expect.stringMatching(/could not be evaluated: evaluation stopped/) })]);
    const tried = await t.as(f.users.viewer.token).post(`${policiesPath(f)}/evaluate`).send({ name: 'x', expression: "object.nodePools[5].name == 'x'", message: 'm', action: 'Deny' });
    expect(tried.status).toBe(200);
    expect(tried.body.content).toEqual([
      expect.objectContaining({ clusterSlug: 'web', passed: false, evaluationError: expect.stringMatching(/index/i), message: expect.stringMatching(/^m \(the expression could not be evaluated: /) }),
    ]);
  });

  it('takes failurePolicy on create (default Fail), refuses other values, and keeps policies saved before the limits editable', async () => {
    const f = await createOrgFixture(t);
    const admin = t.as(f.users.admin.token);
    const created = await admin.post(policiesPath(f)).send({ name: 'ha', expression: 'object.highlyAvailable', message: 'm', action: 'Deny' });
    expect(created.body.failurePolicy).toBe('Fail');
    const ignore = await admin.post(policiesPath(f)).send({ name: 'ha-ignore', expression: 'object.highlyAvailable', message: 'm', action: 'Deny', failurePolicy: 'Ignore' });
    expect(ignore.body.failurePolicy).toBe('Ignore');
    const bad = await admin.post(policiesPath(f)).send({ name: 'bad', expression: 'true', message: 'm', action: 'Deny', failurePolicy: 'Sometimes' });
    expectErrorBody(bad.body, 400);
    expect(bad.body.errors).toEqual([{ field: 'failurePolicy', message: 'failurePolicy must be one of: Fail, Ignore' }]);
    const old = await savedBeforeTheLimits(t, f, 'old', AUDIT);
    expect((await admin.patch(`${policiesPath(f)}/${old}`).send({ enabled: false, name: 'old-off' })).status).toBe(200);
    // A changed expression is checked again.
    const changed = await admin.patch(`${policiesPath(f)}/${old}`).send({ expression: AUDIT.replace('> 0', '> 1') });
    expect(changed.status).toBe(400);
    expect(changed.body.errors[0].message).toMatch(/may build a value of 2097152/);
  });

  it('keeps /health answering while worst-case evaluations run, all of them on the worker threads', async () => {
    const f = await createOrgFixture(t);
    for (const name of ['a', 'b', 'c']) expect((await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name }))).status).toBe(200);
    // The most a policy within the limits does here: nested comprehensions near the estimate's bound on every cluster.
    const heavy = { name: 'heavy', expression: `cel.bind(h, ${HUNDRED}, h.all(i, h.all(j, i + j >= 0)))`, message: 'm', action: 'Deny' };
    const before = outcome(t, 'policies.evaluate ok');
    const load = Promise.all(Array.from({ length: 8 }, () => t.as(f.users.viewer.token).post(`${policiesPath(f)}/evaluate`).send(heavy)));
    const health: number[] = [];
    let done = false;
    void load.finally(() => (done = true));
    while (!done) health.push((await t.http().get('/health')).status);
    const results = await load;
    expect(results.map((r) => r.status).every((s) => s === 200 || s === 429)).toBe(true);
    expect(results.some((r) => r.status === 200)).toBe(true);
    expect(results.find((r) => r.status === 200)!.body.content.map((c: { passed: boolean }) => c.passed)).toEqual([true, true, true]);
    expect(health.length).toBeGreaterThan(0);
    expect(health.every((s) => s === 200)).toBe(true);
    expect(outcome(t, 'policies.evaluate ok') - before).toBe(results.filter((r) => r.status === 200).length);
  });
});

describe('cluster policies in a sandbox: a worker out of heap, and admission', () => {
  it('stops an evaluation that outgrows the worker heap (the worker is replaced, the next evaluation succeeds), with the main heap untouched', async () => {
    // A run-time budget far above the default lets the expression reach the worker's 64 MB heap.
    const t = await startTestApp({ EXECUTOR_WORKER_HEAP_MB: '64', POLICY_RUNTIME_COST_LIMIT: '1000000000' });
    try {
      const f = await createOrgFixture(t);
      expect((await t.as(f.users.member.token).post(clustersPath(f)).send(clusterBody(f, { name: 'web-heap-oom' }))).status).toBe(200);
      // 786,432 characters (within the value cap) copied 100 times: about 79 MB kept in one list.
      const hog = `cel.bind(s, [object.name]${'.map(a, a + a)'.repeat(16)}[0], ${HUNDRED}.map(i, (s + string(i)).lowerAscii())).size() > 0`;
      const [row] = await t.db.query(
        `INSERT INTO cluster_policies (organisation_id, name, expression, message, action, created_by, created_at, modified_at)
         VALUES ($1, 'hog', $2, 'hog fails', 'Deny', 'before-the-limits', now(), now()) RETURNING identity`,
        [f.orgId, hog],
      );
      const executor = t.get(Executor);
      const heapBefore = process.memoryUsage().heapUsed;

      const scan = await t.as(f.users.viewer.token).get(`/api/v1/orgs/${f.orgSlug}/cluster-policies/${row.identity}/violations`);
      expectErrorBody(scan.body, 422);
      expect(scan.body.message).toBe('The input is too expensive to process: evaluating the cluster policies needed more memory than a worker may use; simplify it.');
      expect(executor.outcomes.get('policies.evaluate out_of_memory')).toBe(1);
      // On a change, the stopped evaluation follows the policy's failurePolicy (Fail: refused, naming it).
      const denied = await t.as(f.users.member.token).patch(`${clustersPath(f)}/web-heap-oom`).send({ description: 'x' });
      expect(denied.status).toBe(400);
      expect(denied.body.errors).toEqual([
        { field: 'policies.hog', message: expect.stringMatching(/^policy hog: hog fails \(the evaluation was stopped: The input is too expensive to process: .* needed more memory than a worker may use/) },
      ]);
      expect(executor.outcomes.get('policies.evaluate out_of_memory')).toBe(2);
      // The work was the worker's: the main heap did not take the ~90 MB the expression built.
      expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(48 * 1024 * 1024);
      await t.http().get('/health').expect(200);

      // Replaced workers take the next evaluations.
      await t.db.query(`DELETE FROM cluster_policies WHERE identity = $1`, [row.identity]);
      const next = await t.as(f.users.viewer.token).post(`/api/v1/orgs/${f.orgSlug}/cluster-policies/evaluate`).send({ name: 'ha', expression: 'object.highlyAvailable', message: 'm', action: 'Deny' });
      expect(next.status).toBe(200);
      expect(next.body.content).toEqual([expect.objectContaining({ clusterSlug: 'web-heap-oom', passed: false, message: 'm' })]);
      expect((await t.as(f.users.member.token).patch(`${clustersPath(f)}/web-heap-oom`).send({ description: 'x' })).status).toBe(200);
      expect(executor.startedThreads).toBe(executor.threads);
      const metrics = await t.admin().get('/metrics');
      expect(metrics.text).toContain('cms_executor_tasks_total{task="policies.evaluate",outcome="out_of_memory"} 2');
    } finally {
      await t.close();
    }
  });

  it("answers 429 with Retry-After to an organisation's dry-runs beyond its admission, before reading any cluster, while another organisation's dry-run goes through", async () => {
    // A pool of 8: two callers per organisation in progress at once (a quarter of the pool).
    const t = await startTestApp({ EXECUTOR_QUEUE_PER_ORGANISATION: '2', DATABASE_POOL_SIZE: '8' });
    try {
      const [f, other] = [await createOrgFixture(t), await createOrgFixture(t)];
      for (const org of [f, other]) {
        for (const name of ['a', 'b', 'c', 'd', 'e']) expect((await t.as(org.users.member.token).post(clustersPath(org)).send(clusterBody(org, { name }))).status).toBe(200);
      }
      const heavy = { name: 'heavy', expression: `cel.bind(h, ${HUNDRED}, h.all(i, h.all(j, i + j >= 0)))`, message: 'm', action: 'Deny' };
      const flood = Promise.all(Array.from({ length: 30 }, () => t.as(f.users.viewer.token).post(`/api/v1/orgs/${f.orgSlug}/cluster-policies/evaluate`).send(heavy)));
      const others = await t.as(other.users.viewer.token).post(`/api/v1/orgs/${other.orgSlug}/cluster-policies/evaluate`).send(heavy);
      const results = await flood;
      expect(others.status).toBe(200);
      const refused = results.filter((r) => r.status === 429);
      expect(refused.length).toBeGreaterThan(0);
      expect(results.every((r) => r.status === 200 || r.status === 429)).toBe(true);
      expectErrorBody(refused[0].body, 429);
      // When the organisation's first dry-run in progress is expected to end (the executor's unit test checks the estimate).
      expect(Number(refused[0].headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(refused[0].headers['retry-after'])).toBeLessThanOrEqual(MAX_ADMISSION_RETRY_AFTER_SECONDS);
      expect(refused[0].body.message).toMatch(/^This organisation already has 2 expensive operations in progress \(parsing, validation, pattern matching, policy evaluation\); retry when they finish\.$/);
      // Refused at admission: before the dry-run checked its expression or read a cluster.
      expect(t.get(Executor).outcomes.get('admission refused')).toBe(refused.length);
      // The requests admitted were served, each evaluation on the executor.
      expect(t.get(Executor).outcomes.get('policies.evaluate ok')).toBe(results.filter((r) => r.status === 200).length + 1);
    } finally {
      await t.close();
    }
  });

  it("refuses a dry-run or violations scan beyond the organisation's admission before its body is validated, and admits it again once a caller is done", async () => {
    // A pool of 8: two callers per organisation in progress at once. Two admissions held here fill the organisation's.
    const t = await startTestApp({ DATABASE_POOL_SIZE: '8' });
    try {
      const f = await createOrgFixture(t);
      const viewer = t.as(f.users.viewer.token);
      const saved = await t.as(f.users.admin.token).post(policiesPath(f)).send({ name: 'saved', expression: 'true', message: 'm', action: 'Audit' });
      expect(saved.status).toBe(200);
      const executor = t.get(Executor);
      const held = [executor.admit(executorKey(f.orgId)), executor.admit(executorKey(f.orgId))];
      const refusedBefore = outcome(t, 'admission refused');
      // A body the validation refuses (no expression, an unknown action): refused by the admission first.
      const invalid = { name: 'invalid', message: 'm', action: 'Nope' };
      const busy = await viewer.post(`${policiesPath(f)}/evaluate`).send(invalid);
      expect(busy.status).toBe(429);
      expectErrorBody(busy.body, 429);
      // The organisation's typical time in progress (the policy's creation so far) decides the figure.
      expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(busy.headers['retry-after'])).toBeLessThanOrEqual(MAX_ADMISSION_RETRY_AFTER_SECONDS);
      const scan = await viewer.get(`${policiesPath(f)}/${saved.body.identity}/violations`);
      expect(scan.status).toBe(429);
      expect(outcome(t, 'admission refused')).toBe(refusedBefore + 2);
      // Another organisation is not affected.
      const other = await createOrgFixture(t);
      expect((await t.as(other.users.viewer.token).post(`/api/v1/orgs/${other.orgSlug}/cluster-policies/evaluate`).send({ name: 'ok', expression: 'true', message: 'm', action: 'Deny' })).status).toBe(200);
      // One caller done: the same invalid body now reaches the validation (400, naming the fields), and a valid one is served.
      held[0].release();
      const invalidNow = await viewer.post(`${policiesPath(f)}/evaluate`).send(invalid);
      expect(invalidNow.status).toBe(400);
      expect(JSON.stringify(invalidNow.body)).toMatch(/expression/);
      expect(JSON.stringify(invalidNow.body)).toMatch(/action must be one of/);
      expect((await viewer.get(`${policiesPath(f)}/${saved.body.identity}/violations`)).status).toBe(200);
      // Each request released its admission, whatever its answer: one more caller fits beside the one still held, no more.
      const again = [executor.admit(executorKey(f.orgId))];
      expect(() => executor.admit(executorKey(f.orgId))).toThrow(expect.objectContaining({ status: 429 }));
      for (const a of [...again, held[1]]) a.release();
    } finally {
      await t.close();
    }
  });
});
