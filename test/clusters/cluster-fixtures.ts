import { ReconcilerService } from '../../src/provisioning/reconciler.service';
import type { TestApp, TestUser } from '../support/test-app';

/** Prerequisites written straight into the tables (the environment and cloud account APIs are not needed). */
export interface OrgFixture {
  orgId: number;
  orgSlug: string;
  envId: number;
  envSlug: string;
  accountId: number;
  accountIdentity: string;
  credentialIdentity: string;
  users: Record<'owner' | 'admin' | 'member' | 'viewer' | 'outsider', TestUser>;
}

let seq = 0;

export async function createOrgFixture(
  t: TestApp,
  opts: { quota?: number; restricted?: boolean; provider?: string; profileSlug?: string } = {},
): Promise<OrgFixture> {
  const n = ++seq;
  const orgSlug = `acme-${n}`;
  const users = {} as OrgFixture['users'];
  for (const key of ['owner', 'admin', 'member', 'viewer', 'outsider'] as const) users[key] = await t.createUser(`${key}${n}`);
  const org = await t.insertOrganisation(
    orgSlug,
    [
      { user: users.owner, role: 'OWNER' },
      { user: users.admin, role: 'ADMIN' },
      { user: users.member, role: 'MEMBER' },
      { user: users.viewer, role: 'VIEWER' },
    ],
    { name: `Acme ${n}`, quota: opts.quota, restricted: opts.restricted },
  );
  const envSlug = 'production';
  const [env] = await t.db.query(
    `INSERT INTO environments (organisation_id, slug, name, type, created_at, modified_at) VALUES ($1, $2, 'Production', 'production', now(), now()) RETURNING id`,
    [org.id, envSlug],
  );
  const [profile] = await t.db.query(`SELECT id, type FROM cloud_profiles WHERE slug = $1`, [opts.profileSlug ?? 'platform-1-default']);
  const [acc] = await t.db.query(
    `INSERT INTO cloud_accounts (organisation_id, cloud_profile_id, cloud_provider_type, display_name, created_at, modified_at)
     VALUES ($1, $2, $3, 'Main account', now(), now()) RETURNING id, identity`,
    [org.id, profile.id, profile.type],
  );
  const [cred] = await t.db.query(
    `INSERT INTO cloud_credentials (cloud_account_id, display_name, cloud_type, secret_ciphertext, created_at, modified_at)
     VALUES ($1, 'deploy key', $2, 'v1.x.y.z', now(), now()) RETURNING id, identity`,
    [acc.id, profile.type],
  );
  await t.db.query(`UPDATE cloud_accounts SET primary_credentials_id = $2 WHERE id = $1`, [acc.id, cred.id]);
  return {
    orgId: Number(org.id),
    orgSlug,
    envId: Number(env.id),
    envSlug,
    accountId: Number(acc.id),
    accountIdentity: acc.identity,
    credentialIdentity: cred.identity,
    users,
  };
}

export function clusterBody(f: OrgFixture, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'web',
    cloudAccountIdentity: f.accountIdentity,
    region: 'eu-central-1',
    version: '1.31.5',
    nodePools: [{ name: 'workers', nodeSize: 'm5.large', minSize: 2, maxSize: 4 }],
    ...overrides,
  };
}

export const clustersPath = (f: OrgFixture) => `/api/v1/orgs/${f.orgSlug}/clusters/${f.envSlug}`;

export function reconciler(t: TestApp): ReconcilerService {
  return t.get(ReconcilerService);
}

/** Runs reconcile passes until nothing moves (bounded). */
export async function settle(t: TestApp, max = 30): Promise<void> {
  for (let i = 0; i < max; i++) {
    if ((await reconciler(t).runOnce()) === 0) return;
  }
}
