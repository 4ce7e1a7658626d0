import type { TestApp, TestUser } from '../support/test-app';

export type Role = 'OWNER' | 'ADMIN' | 'MEMBER' | 'VIEWER';
export const ROLES: Role[] = ['OWNER', 'ADMIN', 'MEMBER', 'VIEWER'];

export interface OrgFixture {
  id: number;
  slug: string;
  users: Record<Role | 'OUTSIDER', TestUser>;
  memberIdentity: Record<Role, string>;
}

/** An organisation inserted by SQL with one user per role and one outsider (not a member). */
export async function createOrgWithRoles(t: TestApp, slug: string): Promise<OrgFixture> {
  const users = {} as OrgFixture['users'];
  for (const role of ROLES) users[role] = await t.createUser(`${slug}-${role.toLowerCase()}`);
  const org = await t.insertOrganisation(
    slug,
    ROLES.map((role) => ({ user: users[role], role, kubernetesRole: role === 'VIEWER' ? 'VIEW' : 'EDIT' })),
  );
  const memberIdentity = Object.fromEntries(ROLES.map((role, i) => [role, org.memberIdentities[i]])) as OrgFixture['memberIdentity'];
  users.OUTSIDER = await t.createUser(`${slug}-outsider`);
  return { id: org.id, slug, users, memberIdentity };
}

/** A cloud account inserted by SQL on the public profile of `type` (default platform_1). */
export async function insertCloudAccount(t: TestApp, orgId: number, type = 'platform_1'): Promise<{ id: number; identity: string }> {
  const [row] = await t.db.query(
    `INSERT INTO cloud_accounts (organisation_id, cloud_profile_id, cloud_provider_type, display_name, created_at, modified_at)
     SELECT $1, p.id, p.type, 'fixture account', now(), now() FROM cloud_profiles p WHERE p.type = $2 ORDER BY p.id LIMIT 1
     RETURNING id, identity`,
    [orgId, type],
  );
  return { id: Number(row.id), identity: row.identity };
}

/** A cluster row inserted by SQL (the clusters API is another module's). */
export async function insertCluster(
  t: TestApp,
  opts: { orgId: number; environmentId: number; cloudAccountId: number; slug: string; deletedAt?: Date | null; credentialsId?: number | null },
): Promise<number> {
  const [row] = await t.db.query(
    `INSERT INTO clusters (organisation_id, environment_id, cloud_account_id, cloud_credentials_id, slug, name, region, cloud_provider,
                           version, status, deleted_at, created_at, modified_at)
     VALUES ($1, $2, $3, $4, $5, $5, 'eu-central-1', 'platform_1', '1.31.6', $6, $7, now(), now()) RETURNING id`,
    [
      opts.orgId,
      opts.environmentId,
      opts.cloudAccountId,
      opts.credentialsId ?? null,
      opts.slug,
      opts.deletedAt ? 'deleted' : 'started',
      opts.deletedAt ?? null,
    ],
  );
  return Number(row.id);
}

/** Inserts an environment by SQL (for tests of other modules' guards). */
export async function insertEnvironment(t: TestApp, orgId: number, slug: string): Promise<number> {
  const [row] = await t.db.query(
    `INSERT INTO environments (organisation_id, slug, name, created_at, modified_at) VALUES ($1, $2, $2, now(), now()) RETURNING id`,
    [orgId, slug],
  );
  return Number(row.id);
}
