import { ADMIN_TOKEN, expectErrorBody, startTestApp, TestApp, TestUser } from '../support/test-app';
import { createOrg, TestOrg } from './org-helper';

const VERSION_KEYS = ['available', 'createdAt', 'kubernetesVersion', 'modifiedAt', 'note', 'version'];
const keys = (o: object) => Object.keys(o).sort();

describe('/admin/v1 cluster versions and update channels', () => {
  let t: TestApp;
  let owner: TestUser;
  let operator: TestUser;
  let org: TestOrg;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await t.createUser('owner');
    operator = await t.createUser('operator', { platformAdmin: true });
    org = await createOrg(t, 'acme', [[owner, 'OWNER']]);
  });
  afterAll(() => t.close());

  const admin = () => t.as(ADMIN_TOKEN);
  const audits = (type: string, ref: string) =>
    t.db.query(`SELECT type, actor_username, details, organisation_id FROM audit_events WHERE type = $1 AND referenced_entity_identity = $2 ORDER BY id`, [type, ref]);

  /** A cluster row by SQL (the clusters module is built in parallel). */
  async function insertCluster(slug: string, version: string, opts: { observedVersion?: string; deleted?: boolean } = {}): Promise<number> {
    const [env] = await t.db.query(
      `INSERT INTO environments (organisation_id, slug, name, type) VALUES ($1, $2, $2, 'production') RETURNING id`,
      [org.id, `env-${slug}`],
    );
    const [profile] = await t.db.query(`SELECT id FROM cloud_profiles WHERE slug = 'platform-1-default'`);
    const [account] = await t.db.query(
      `INSERT INTO cloud_accounts (organisation_id, cloud_profile_id, cloud_provider_type, display_name) VALUES ($1, $2, 'platform_1', $3) RETURNING id`,
      [org.id, profile.id, `acct-${slug}`],
    );
    const [cluster] = await t.db.query(
      `INSERT INTO clusters (organisation_id, environment_id, cloud_account_id, slug, name, region, cloud_provider, version, observed_version, status, deleted_at)
       VALUES ($1, $2, $3, $4, $4, 'eu-central-1', 'platform_1', $5, $6, $7, $8) RETURNING id`,
      [org.id, env.id, account.id, slug, version, opts.observedVersion ?? null, opts.deleted ? 'deleted' : 'started', opts.deleted ? new Date() : null],
    );
    return cluster.id;
  }

  describe('access', () => {
    it.each([
      ['GET', '/admin/v1/cluster-versions'],
      ['POST', '/admin/v1/cluster-versions'],
      ['GET', '/admin/v1/cluster-versions/1.31.6'],
      ['PATCH', '/admin/v1/cluster-versions/1.31.6'],
      ['DELETE', '/admin/v1/cluster-versions/1.29.10'],
      ['GET', '/admin/v1/update-channels'],
      ['POST', '/admin/v1/update-channels'],
      ['PATCH', '/admin/v1/update-channels/stable'],
    ])('%s %s is 401 unauthenticated and 403 to an organisation owner who is not a platform admin', async (method, path) => {
      const m = method.toLowerCase() as 'get' | 'post' | 'patch' | 'delete';
      const anon = await t.http()[m](path).send(method === 'GET' || method === 'DELETE' ? undefined : {});
      expect(anon.status).toBe(401);
      expectErrorBody(anon.body, 401);
      const res = await t.as(owner.token)[m](path).send(method === 'GET' || method === 'DELETE' ? undefined : {});
      expect(res.status).toBe(403);
      expectErrorBody(res.body, 403);
      expect(res.body.message).toMatch(/platform administrators/);
    });

    it('platform administrators (bootstrap and added) may list', async () => {
      const a = await admin().get('/admin/v1/cluster-versions');
      expect(a.status).toBe(200);
      const b = await t.as(operator.token).get('/admin/v1/update-channels');
      expect(b.status).toBe(200);
    });
  });

  describe('cluster versions', () => {
    it('pages all versions (form A, as the original admin client decodes) in semver order, with available and history lists', async () => {
      const res = await admin().get('/admin/v1/cluster-versions');
      expect(res.status).toBe(200);
      expect(res.body.totalElements).toBe(15);
      expect(res.body.sort).toEqual({ empty: true, sorted: false, unsorted: true });
      const list = res.body.content;
      expect(list[0].version).toBe('1.29.10');
      expect(list[14].version).toBe('1.32.2');
      for (const v of list) expect(keys(v)).toEqual([...VERSION_KEYS, 'clusterCount'].sort());
      const available = (await admin().get('/admin/v1/cluster-versions/available')).body.content;
      const history = (await admin().get('/admin/v1/cluster-versions/history')).body.content;
      expect(available.every((v: { available: boolean }) => v.available)).toBe(true);
      expect(history.every((v: { available: boolean }) => !v.available)).toBe(true);
      expect(available.length + history.length).toBe(15);
      // PUT {available} as the admin client sends it (same as PATCH, audited).
      const put = await admin().put('/admin/v1/cluster-versions/1.29.10').send({ available: false });
      expect(put.status).toBe(200);
      expect(put.body.available).toBe(false);
      expect((await admin().put('/admin/v1/cluster-versions/1.29.10').send({ available: true })).status).toBe(200);
    });

    it('gets one; unknown is 404', async () => {
      const res = await admin().get('/admin/v1/cluster-versions/1.31.6');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ version: '1.31.6', kubernetesVersion: 'v1.31.6', available: true, note: 'Stable channel' });
      const missing = await admin().get('/admin/v1/cluster-versions/9.9.9');
      expect(missing.status).toBe(404);
      expectErrorBody(missing.body, 404);
    });

    it('creates a version (200), audited with its values, and it becomes an upgrade target', async () => {
      const res = await t.as(operator.token).post('/admin/v1/cluster-versions').send({ version: '1.32.3', note: 'Security fix' });
      expect(res.status).toBe(200);
      expect(keys(res.body)).toEqual(VERSION_KEYS);
      expect(res.body).toMatchObject({ version: '1.32.3', kubernetesVersion: 'v1.32.3', available: true, note: 'Security fix' });
      const [a] = await audits('CLUSTER_VERSION_CREATED', '1.32.3');
      expect(a.actor_username).toBe('operator');
      expect(a.organisation_id).toBeNull();
      expect(a.details).toEqual({
        version: { old: null, new: '1.32.3' },
        kubernetesVersion: { old: null, new: 'v1.32.3' },
        available: { old: null, new: true },
        note: { old: null, new: 'Security fix' },
      });
      const up = await t.as(owner.token).get('/api/v1/cluster-versions/1.31.6/available-upgrades');
      expect(up.body.map((v: { version: string }) => v.version)).toEqual(['1.32.0', '1.32.1', '1.32.3']);
    });

    it('refuses a version that exists (409) and invalid bodies (400 naming the field)', async () => {
      const dup = await admin().post('/admin/v1/cluster-versions').send({ version: '1.31.6' });
      expect(dup.status).toBe(409);
      expectErrorBody(dup.body, 409);
      expect(dup.body.message).toMatch(/already exists/);
      for (const [body, field] of [
        [{}, 'version'],
        [{ version: '1.33' }, 'version'],
        [{ version: 'v1.33.0' }, 'version'],
        [{ version: '01.33.0' }, 'version'],
        [{ version: '1.33.0', available: 'yes' }, 'available'],
        [{ version: '1.33.0', note: 'x'.repeat(501) }, 'note'],
        [{ version: '1.33.0', kubernetesVersion: 'x'.repeat(65) }, 'kubernetesVersion'],
        [{ version: '1.33.0', colour: 'blue' }, 'colour'],
      ] as const) {
        const res = await admin().post('/admin/v1/cluster-versions?fieldValidation=Strict').send(body);
        expect(res.status).toBe(400);
        expectErrorBody(res.body, 400);
        expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      }
      const atBound = await admin().post('/admin/v1/cluster-versions').send({ version: '1.33.0', note: 'x'.repeat(500), available: false, kubernetesVersion: 'v1.33.0-custom' });
      expect(atBound.status).toBe(200);
      expect(atBound.body).toMatchObject({ available: false, kubernetesVersion: 'v1.33.0-custom' });
    });

    it('PATCH withdraws a version: audited, listed unavailable, no longer a target', async () => {
      const res = await admin().patch('/admin/v1/cluster-versions/1.31.5').send({ available: false, note: 'Withdrawn' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ version: '1.31.5', available: false, note: 'Withdrawn' });
      const [a] = await audits('CLUSTER_VERSION_UPDATED', '1.31.5');
      expect(a.details).toEqual({ available: { old: true, new: false }, note: { old: '', new: 'Withdrawn' } });
      const list = await t.as(owner.token).get('/api/v1/cluster-versions');
      expect(list.body.find((v: { version: string }) => v.version === '1.31.5').available).toBe(false);
      const up = await t.as(owner.token).get('/api/v1/cluster-versions/1.30.9/available-upgrades');
      expect(up.body.map((v: { version: string }) => v.version)).toEqual(['1.31.3', '1.31.4', '1.31.6']);
      const back = await admin().patch('/admin/v1/cluster-versions/1.31.5').send({ available: true });
      expect(back.body.available).toBe(true);
    });

    it('PATCH refuses to withdraw a channel version (409), validates fields, 404 for unknown', async () => {
      const res = await admin().patch('/admin/v1/cluster-versions/1.31.6').send({ available: false });
      expect(res.status).toBe(409);
      expect(res.body.message).toMatch(/'stable'/);
      const bad = await admin().patch('/admin/v1/cluster-versions/1.31.6').send({ note: 'x'.repeat(501) });
      expect(bad.status).toBe(400);
      expect(bad.body.errors[0].field).toBe('note');
      const unknown = await admin().patch('/admin/v1/cluster-versions/1.2.3').send({ note: 'x' });
      expect(unknown.status).toBe(404);
    });

    it('DELETE removes an unused version (204, audited)', async () => {
      const res = await admin().delete('/admin/v1/cluster-versions/1.29.10');
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      const [a] = await audits('CLUSTER_VERSION_DELETED', '1.29.10');
      expect(a.details).toMatchObject({ version: { old: '1.29.10', new: null } });
      expect((await admin().get('/admin/v1/cluster-versions/1.29.10')).status).toBe(404);
      expect((await t.as(owner.token).get('/api/v1/cluster-versions/1.29.10/available-upgrades')).status).toBe(404);
      expect((await admin().delete('/admin/v1/cluster-versions/1.29.10')).status).toBe(404);
    });

    it('DELETE is 409 while a non-deleted cluster runs or wants it, or a channel points to it', async () => {
      await insertCluster('web', '1.29.12');
      const wanted = await admin().delete('/admin/v1/cluster-versions/1.29.12');
      expect(wanted.status).toBe(409);
      expectErrorBody(wanted.body, 409);
      expect(wanted.body.message).toMatch(/cluster/);

      await insertCluster('api', '1.30.6', { observedVersion: '1.29.13' });
      const running = await admin().delete('/admin/v1/cluster-versions/1.29.13');
      expect(running.status).toBe(409);

      await insertCluster('old', '1.30.8', { deleted: true });
      expect((await admin().delete('/admin/v1/cluster-versions/1.30.8')).status).toBe(204);

      const target = await insertCluster('batch', '1.31.3');
      await t.db.query(
        `INSERT INTO scheduled_cluster_upgrades (organisation_id, cluster_id, from_cluster_version, to_cluster_version, window_start, window_end)
         VALUES ($1, $2, '1.31.3', '1.31.5', now() + interval '1 day', now() + interval '1 day 2 hours')`,
        [org.id, target],
      );
      const upgrade = await admin().delete('/admin/v1/cluster-versions/1.31.5');
      expect(upgrade.status).toBe(409);
      expect(upgrade.body.message).toMatch(/scheduled upgrade/);
      await t.db.query(`UPDATE scheduled_cluster_upgrades SET status = 'CANCELLED' WHERE cluster_id = $1`, [target]);
      expect((await admin().delete('/admin/v1/cluster-versions/1.31.5')).status).toBe(204);

      const channel = await admin().delete('/admin/v1/cluster-versions/1.32.1');
      expect(channel.status).toBe(409);
      expect(channel.body.message).toMatch(/'rapid'/);
      const rows = await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE type = 'CLUSTER_VERSION_DELETED' AND referenced_entity_identity IN ('1.29.12','1.29.13','1.32.1')`);
      expect(rows[0].n).toBe(0);
    });
  });

  describe('update channels', () => {
    it('pages channels by name (form A)', async () => {
      const res = await admin().get('/admin/v1/update-channels');
      expect(res.status).toBe(200);
      expect(res.body.content.map((c: { name: string }) => c.name)).toEqual(['extended', 'rapid', 'stable']);
      for (const c of res.body.content) expect(keys(c)).toEqual(['available', 'kubernetesClusterVersion', 'name']);
    });

    it('creates a channel (200, audited); 409 when it exists', async () => {
      const res = await admin().post('/admin/v1/update-channels').send({ name: 'lts', kubernetesClusterVersion: '1.30.9' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ name: 'lts', kubernetesClusterVersion: '1.30.9', available: true });
      const [a] = await audits('UPDATE_CHANNEL_CREATED', 'lts');
      expect(a.details).toEqual({ name: { old: null, new: 'lts' }, kubernetesClusterVersion: { old: null, new: '1.30.9' }, available: { old: null, new: true } });
      const dup = await admin().post('/admin/v1/update-channels').send({ name: 'lts', kubernetesClusterVersion: '1.30.9' });
      expect(dup.status).toBe(409);
      const listed = await t.as(owner.token).get(`/api/v1/orgs/${org.slug}/update-channels`);
      expect(listed.body.content.map((c: { name: string }) => c.name)).toContain('lts');
    });

    it('refuses unknown or unavailable versions and bad names (400 naming the field)', async () => {
      for (const [body, field] of [
        [{ name: 'x1', kubernetesClusterVersion: '9.9.9' }, 'kubernetesClusterVersion'],
        [{ name: 'x1', kubernetesClusterVersion: '1.32.2' }, 'kubernetesClusterVersion'],
        [{ name: 'Bad Name', kubernetesClusterVersion: '1.31.6' }, 'name'],
        [{ name: 'a'.repeat(64), kubernetesClusterVersion: '1.31.6' }, 'name'],
        [{ name: '', kubernetesClusterVersion: '1.31.6' }, 'name'],
        [{ name: 'x1' }, 'kubernetesClusterVersion'],
      ] as const) {
        const res = await admin().post('/admin/v1/update-channels').send(body);
        expect(res.status).toBe(400);
        expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      }
      const atBound = await admin().post('/admin/v1/update-channels').send({ name: 'a'.repeat(63), kubernetesClusterVersion: '1.31.6', available: false });
      expect(atBound.status).toBe(200);
    });

    it('PATCH moves a channel to another available version and sets availability (audited)', async () => {
      const res = await admin().patch('/admin/v1/update-channels/stable').send({ kubernetesClusterVersion: '1.31.4' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ name: 'stable', kubernetesClusterVersion: '1.31.4', available: true });
      const [a] = await audits('UPDATE_CHANNEL_UPDATED', 'stable');
      expect(a.details).toEqual({ kubernetesClusterVersion: { old: '1.31.6', new: '1.31.4' } });
      const off = await admin().patch('/admin/v1/update-channels/stable').send({ available: false });
      expect(off.body.available).toBe(false);
      const on = await admin().patch('/admin/v1/update-channels/stable').send({ available: true, kubernetesClusterVersion: '1.31.6' });
      expect(on.body).toEqual({ name: 'stable', kubernetesClusterVersion: '1.31.6', available: true });
      expect(await audits('UPDATE_CHANNEL_UPDATED', 'stable')).toHaveLength(3);
    });

    it('PATCH is 400 for an unknown or unavailable version and 404 for an unknown channel', async () => {
      const unavailable = await admin().patch('/admin/v1/update-channels/stable').send({ kubernetesClusterVersion: '1.32.2' });
      expect(unavailable.status).toBe(400);
      expect(unavailable.body.errors[0]).toMatchObject({ field: 'kubernetesClusterVersion' });
      expect(unavailable.body.message).toMatch(/not available/);
      const unknown = await admin().patch('/admin/v1/update-channels/stable').send({ kubernetesClusterVersion: '1.99.0' });
      expect(unknown.status).toBe(400);
      const wrongType = await admin().patch('/admin/v1/update-channels/stable').send({ available: 'no' });
      expect(wrongType.status).toBe(400);
      expect(wrongType.body.errors[0].field).toBe('available');
      const missing = await admin().patch('/admin/v1/update-channels/nightly').send({ available: false });
      expect(missing.status).toBe(404);
      expectErrorBody(missing.body, 404);
      const [row] = await t.db.query(`SELECT kubernetes_cluster_version FROM update_channels WHERE name = 'stable'`);
      expect(row.kubernetes_cluster_version).toBe('1.31.6');
    });

    it('a version becomes deletable once its channel moved away', async () => {
      expect((await admin().delete('/admin/v1/cluster-versions/1.30.9')).status).toBe(409); // extended and lts
      await admin().patch('/admin/v1/update-channels/extended').send({ kubernetesClusterVersion: '1.30.6' }).expect(200);
      await admin().patch('/admin/v1/update-channels/lts').send({ kubernetesClusterVersion: '1.30.6' }).expect(200);
      expect((await admin().delete('/admin/v1/cluster-versions/1.30.9')).status).toBe(204);
    });
  });
});
