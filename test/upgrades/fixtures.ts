import type { TestApp, TestUser } from '../support/test-app';

/**
 * Prerequisite rows written straight into the database (organisation, members, environment, cloud
 * account, clusters), so these tests do not depend on the other modules' endpoints.
 */
export interface OrgFixture {
  id: number;
  slug: string;
  environmentId: number;
  environmentSlug: string;
  cloudAccountId: number;
}

let seq = 0;

export async function createOrg(
  t: TestApp,
  slug: string,
  members: { user: TestUser; role: 'OWNER' | 'ADMIN' | 'MEMBER' | 'VIEWER' }[],
): Promise<OrgFixture> {
  const org = await t.insertOrganisation(slug, members.map((m) => ({ ...m, kubernetesRole: 'CLUSTER_ADMIN' })));
  const [env] = await t.db.query(
    `INSERT INTO environments (organisation_id, slug, name, type, created_at, modified_at)
     VALUES ($1, 'production', 'production', 'production', now(), now()) RETURNING id`,
    [org.id],
  );
  let [profile] = await t.db.query(`SELECT id, type FROM cloud_profiles ORDER BY id LIMIT 1`);
  if (!profile) {
    [profile] = await t.db.query(
      `INSERT INTO cloud_profiles (identity, slug, display_name, type) VALUES (gen_random_uuid(), 'test-profile', 'Test', 'byon') RETURNING id, type`,
    );
  }
  const [account] = await t.db.query(
    `INSERT INTO cloud_accounts (organisation_id, cloud_profile_id, cloud_provider_type, display_name, created_at, modified_at)
     VALUES ($1, $2, $3, 'main', now(), now()) RETURNING id`,
    [org.id, profile.id, profile.type],
  );
  return { id: Number(org.id), slug, environmentId: Number(env.id), environmentSlug: 'production', cloudAccountId: Number(account.id) };
}

export interface ClusterFixture {
  id: number;
  identity: string;
  slug: string;
}

export async function createCluster(
  t: TestApp,
  org: OrgFixture,
  opts: {
    slug?: string;
    version?: string;
    updateChannel?: string | null;
    autoUpgrade?: boolean;
    status?: string;
    maintenanceScheduleId?: number | null;
  } = {},
): Promise<ClusterFixture> {
  const slug = opts.slug ?? `c${++seq}`;
  const version = opts.version ?? '1.31.5';
  const [c] = await t.db.query(
    `INSERT INTO clusters (organisation_id, environment_id, cloud_account_id, slug, name, region, cloud_provider, version,
                           update_channel, auto_upgrade, status, provision_status, observed_version, observed_status,
                           maintenance_schedule_id, created_at, modified_at)
     VALUES ($1, $2, $3, $4, $4, 'region-1', 'byon', $5, $6, $7, $8, 'DONE', $5, $8, $9, now(), now()) RETURNING id, identity`,
    [
      org.id,
      org.environmentId,
      org.cloudAccountId,
      slug,
      version,
      opts.updateChannel ?? null,
      opts.autoUpgrade ?? false,
      opts.status ?? 'started',
      opts.maintenanceScheduleId ?? null,
    ],
  );
  return { id: Number(c.id), identity: c.identity, slug };
}

/** A maintenance schedule row for an organisation. */
export async function createSchedule(
  t: TestApp,
  org: OrgFixture,
  windows: { day: string; startTime: string; duration: number }[],
  name = 'weekly',
): Promise<{ id: number; identity: string }> {
  const [s] = await t.db.query(
    `INSERT INTO maintenance_schedules (organisation_id, name, windows, created_at, modified_at) VALUES ($1, $2, $3::jsonb, now(), now())
     RETURNING id, identity`,
    [org.id, name, JSON.stringify(windows)],
  );
  return { id: Number(s.id), identity: s.identity };
}

/** An upgrade row in any status (bypassing the scheduler). */
export async function insertUpgrade(
  t: TestApp,
  org: OrgFixture,
  cluster: ClusterFixture,
  status: string,
  opts: { from?: string; to?: string; windowStart?: Date; windowEnd?: Date } = {},
): Promise<string> {
  const windowStart = opts.windowStart ?? new Date(Date.now() + 2 * 86400_000);
  const windowEnd = opts.windowEnd ?? new Date(windowStart.getTime() + 2 * 3600_000);
  const [u] = await t.db.query(
    `INSERT INTO scheduled_cluster_upgrades (organisation_id, cluster_id, from_cluster_version, to_cluster_version, window_start, window_end,
                                             status, reason, created_at, modified_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'test', now(), now()) RETURNING identity`,
    [org.id, cluster.id, opts.from ?? '1.31.5', opts.to ?? '1.31.6', windowStart, windowEnd, status],
  );
  return u.identity;
}

/** A dedicated update channel, so tests can move it without touching the catalog's channels. */
export async function createChannel(t: TestApp, name: string, version: string): Promise<void> {
  await t.db.query(
    `INSERT INTO update_channels (name, kubernetes_cluster_version, available, created_at, modified_at) VALUES ($1, $2, true, now(), now())`,
    [name, version],
  );
}

export async function moveChannel(t: TestApp, name: string, version: string): Promise<void> {
  await t.db.query(`UPDATE update_channels SET kubernetes_cluster_version = $2 WHERE name = $1`, [name, version]);
}
