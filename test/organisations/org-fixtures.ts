import type { TestApp, TestUser } from '../support/test-app';

export const AGREEMENTS = [{ agreementSlug: 'terms-of-service' }, { agreementSlug: 'data-processing-agreement' }];

export function createBody(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    organisationName: name,
    organisationType: 'BUSINESS',
    contactEmail: { email: `contact@${name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) || 'org'}.example` },
    acceptedAgreements: AGREEMENTS,
    ...extra,
  };
}

export interface OrgFixture {
  id: number;
  identity: string;
  slug: string;
  owner: TestUser;
  admin: TestUser;
  member: TestUser;
  viewer: TestUser;
  outsider: TestUser;
  /** Membership identities by role name. */
  memberIdentity: Record<'OWNER' | 'ADMIN' | 'MEMBER' | 'VIEWER', string>;
}

export type RoleName = 'OWNER' | 'ADMIN' | 'MEMBER' | 'VIEWER';

/** Adds a membership directly in the database and returns its identity. */
export async function addMembership(t: TestApp, organisationId: number, userId: number, role: RoleName, kubernetesRole = 'VIEW'): Promise<string> {
  const [row] = await t.db.query(
    `INSERT INTO organisation_members (organisation_id, user_id, role, kubernetes_role, joined_at)
     VALUES ($1, $2, $3, $4, now()) RETURNING identity`,
    [organisationId, userId, role, kubernetesRole],
  );
  return row.identity;
}

/** An organisation created through the API by its owner, plus one user per other role and an outsider. */
export async function orgWithRoles(t: TestApp, name: string): Promise<OrgFixture> {
  const prefix = name.toLowerCase().replace(/[^a-z0-9]+/g, '');
  const owner = await t.createUser(`${prefix}-owner`, { canCreateOrganisations: true });
  const res = await t.as(owner.token).post('/api/v1/organisations').send(createBody(name));
  if (res.status !== 200) throw new Error(`create organisation failed: ${res.status} ${JSON.stringify(res.body)}`);
  const [org] = await t.db.query('SELECT id, identity, slug FROM organisations WHERE identity = $1', [res.body.identity]);
  const admin = await t.createUser(`${prefix}-admin`);
  const member = await t.createUser(`${prefix}-member`);
  const viewer = await t.createUser(`${prefix}-viewer`);
  const outsider = await t.createUser(`${prefix}-outsider`);
  const [ownerRow] = await t.db.query('SELECT identity FROM organisation_members WHERE organisation_id = $1 AND user_id = $2', [
    org.id,
    owner.id,
  ]);
  return {
    id: org.id,
    identity: org.identity,
    slug: org.slug,
    owner,
    admin,
    member,
    viewer,
    outsider,
    memberIdentity: {
      OWNER: ownerRow.identity,
      ADMIN: await addMembership(t, org.id, admin.id, 'ADMIN'),
      MEMBER: await addMembership(t, org.id, member.id, 'MEMBER'),
      VIEWER: await addMembership(t, org.id, viewer.id, 'VIEWER'),
    },
  };
}

export const auditCount = async (t: TestApp, where = 'true', params: unknown[] = []): Promise<number> =>
  (await t.db.query(`SELECT count(*)::int AS n FROM audit_events WHERE ${where}`, params))[0].n;
