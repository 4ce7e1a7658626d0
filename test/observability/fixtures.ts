import type { TestApp, TestUser } from '../support/test-app';

export const ROLES = ['OWNER', 'ADMIN', 'MEMBER', 'VIEWER'] as const;
export type Role = (typeof ROLES)[number];

export interface SeededOrg {
  id: number;
  slug: string;
  users: Record<Role | 'OUTSIDER', TestUser>;
}

/** An organisation with one user per role and a non-member, inserted by SQL (independent of the organisations API). */
export async function seedOrg(t: TestApp, slug: string): Promise<SeededOrg> {
  const users = {} as Record<Role | 'OUTSIDER', TestUser>;
  for (const role of [...ROLES, 'OUTSIDER'] as const) users[role] = await t.createUser(`${slug}-${role.toLowerCase()}`);
  const org = await t.insertOrganisation(slug, ROLES.map((role) => ({ user: users[role], role })));
  return { id: Number(org.id), slug, users };
}

export async function seedEnvironment(t: TestApp, orgId: number, slug: string, name = slug): Promise<number> {
  const [env] = await t.db.query(
    `INSERT INTO environments (organisation_id, slug, name, created_at, modified_at) VALUES ($1, $2, $3, now(), now()) RETURNING id`,
    [orgId, slug, name],
  );
  return Number(env.id);
}

/** A cluster row (with a cloud account on the first catalog profile) and its tenant `{env}-{cluster}`. */
export async function seedCluster(
  t: TestApp,
  orgId: number,
  envId: number,
  slug: string,
  options: { addons?: Record<string, { enabled: boolean; customValues: Record<string, string> }>; deleted?: boolean; tenant?: boolean } = {},
): Promise<{ clusterId: number; clusterIdentity: string; tenantId: number | null; tenantSlug: string }> {
  let [account] = await t.db.query(`SELECT id FROM cloud_accounts WHERE organisation_id = $1 LIMIT 1`, [orgId]);
  if (!account) {
    const [profile] = await t.db.query(`SELECT id, type FROM cloud_profiles ORDER BY id LIMIT 1`);
    [account] = await t.db.query(
      `INSERT INTO cloud_accounts (organisation_id, cloud_profile_id, cloud_provider_type, display_name, created_at, modified_at)
       VALUES ($1, $2, $3, 'account', now(), now()) RETURNING id`,
      [orgId, profile.id, profile.type],
    );
  }
  const [cluster] = await t.db.query(
    `INSERT INTO clusters (organisation_id, environment_id, cloud_account_id, slug, name, region, cloud_provider, version, addons,
                           status, created_at, modified_at, deleted_at)
     VALUES ($1, $2, $3, $4, $4, 'region-1', 'platform_1', '1.30.2', $5::jsonb, 'started', now(), now(), $6) RETURNING id, identity`,
    [orgId, envId, account.id, slug, JSON.stringify(options.addons ?? {}), options.deleted ? new Date() : null],
  );
  const [env] = await t.db.query(`SELECT slug FROM environments WHERE id = $1`, [envId]);
  const tenantSlug = `${env.slug}-${slug}`;
  let tenantId: number | null = null;
  if (options.tenant !== false) {
    const [tenant] = await t.db.query(
      `INSERT INTO observability_tenants (organisation_id, cluster_id, environment_id, slug, name, created_at, modified_at, deleted_at)
       VALUES ($1, $2, $3, $4, $4, now(), now(), $5) RETURNING id`,
      [orgId, cluster.id, envId, tenantSlug, options.deleted ? new Date() : null],
    );
    tenantId = Number(tenant.id);
  }
  return { clusterId: Number(cluster.id), clusterIdentity: cluster.identity, tenantId, tenantSlug };
}

export async function auditRows(t: TestApp, type: string): Promise<{ type: string; details: unknown; actor_username: string }[]> {
  return t.db.query(`SELECT type, details, actor_username, organisation_slug, environment_slug, cluster_slug FROM audit_events WHERE type = $1 ORDER BY id`, [type]);
}

export async function auditCount(t: TestApp): Promise<number> {
  return (await t.db.query(`SELECT count(*)::int AS n FROM audit_events`))[0].n;
}
