import { expectErrorBody, startTestApp, TestApp, TestUser } from '../support/test-app';
import { auditCount, createBody, orgWithRoles, OrgFixture } from './org-fixtures';

const VALID_VAT = 'DE136695976';

describe('organisations', () => {
  let t: TestApp;
  let creator: TestUser;

  beforeAll(async () => {
    t = await startTestApp();
    creator = await t.createUser('creator', { canCreateOrganisations: true });
  });
  afterAll(() => t.close());

  describe('POST /api/v1/organisations', () => {
    it('creates the organisation, makes the caller OWNER/CLUSTER_ADMIN, sets the quota and the alerting integration', async () => {
      const res = await t
        .as(creator.token)
        .post('/api/v1/organisations')
        .send(createBody('Acme Corp', { companyName: 'Acme B.V.', companyAddress: 'Main Street 1', vatNumber: VALID_VAT }));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        acceptedTerms: true,
        acceptedTermsAt: expect.any(String),
        billingEmail: null,
        companyAddress: 'Main Street 1',
        companyName: 'Acme B.V.',
        contactEmail: 'contact@acme-corp.example',
        createdAt: expect.any(String),
        id: res.body.identity,
        identity: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name: 'Acme Corp',
        phoneNumber: null,
        restrictedToAvailableCloudProviders: false,
        slug: { slugValue: 'acme-corp' },
        type: 'BUSINESS',
        upgradeSoakHours: 24,
        vatCode: VALID_VAT,
        vatCodeValidated: true,
        vatCodeValidatedAt: expect.any(String),
      });
      const [org] = await t.db.query('SELECT id, clusters_per_customer, accepted_agreements FROM organisations WHERE identity = $1', [
        res.body.identity,
      ]);
      expect(org.clusters_per_customer).toBe(25);
      expect(org.accepted_agreements.sort()).toEqual(['data-processing-agreement', 'terms-of-service']);
      const members = await t.db.query('SELECT user_id, role, kubernetes_role FROM organisation_members WHERE organisation_id = $1', [org.id]);
      expect(members).toEqual([{ user_id: creator.id, role: 'OWNER', kubernetes_role: 'CLUSTER_ADMIN' }]);
      const integrations = await t.db.query(
        'SELECT type, display_name, enabled FROM organisation_integrations WHERE organisation_id = $1',
        [org.id],
      );
      expect(integrations).toEqual([{ type: 'alerting', display_name: 'Alerting', enabled: false }]);
      const audit = await t.db.query('SELECT type, organisation_slug, details, actor_username FROM audit_events WHERE organisation_id = $1', [
        org.id,
      ]);
      expect(audit).toHaveLength(1);
      expect(audit[0]).toMatchObject({ type: 'ORGANISATION_CREATED', organisation_slug: 'acme-corp', actor_username: 'creator' });
      expect(audit[0].details.name).toEqual({ old: null, new: 'Acme Corp' });
      const activity = await t.db.query('SELECT message FROM activity_events WHERE organisation_id = $1', [org.id]);
      expect(activity).toEqual([{ message: 'creator created organisation acme-corp' }]);

      const me = await t.as(creator.token).get('/api/v1/organisations/acme-corp/me');
      expect(me.status).toBe(200);
      expect(me.body).toEqual({
        email: { email: 'creator@example.com' },
        identity: expect.any(String),
        joinedAt: expect.any(String),
        kubernetesRole: 'CLUSTER_ADMIN',
        role: 'OWNER',
        subject: creator.identity,
        username: 'creator',
      });
    });

    it.each([
      ['TRIAL', 1],
      ['INDIVIDUAL', 3],
      ['BUSINESS', 25],
    ])('%s organisations get a clustersPerCustomer quota of %d', async (type, quota) => {
      const res = await t.as(creator.token).post('/api/v1/organisations').send(createBody(`Quota ${type}`, { organisationType: type }));
      expect(res.status).toBe(200);
      const q = await t.as(creator.token).get(`/api/v1/organisations/${res.body.slug.slugValue}/quotas`);
      expect(q.status).toBe(200);
      expect(q.body).toEqual({ clustersPerCustomer: quota });
    });

    it('ENTERPRISE (the largest quota) is created by a platform administrator only: 403 naming the rule, nothing written', async () => {
      const before = await auditCount(t);
      const res = await t.as(creator.token).post('/api/v1/organisations').send(createBody('Quota Enterprise', { organisationType: 'ENTERPRISE' }));
      expect(res.status).toBe(403);
      expectErrorBody(res.body, 403);
      expect(res.body.message).toMatch(/organisationType ENTERPRISE sets the organisation's cluster quota.*TRIAL, INDIVIDUAL, BUSINESS/);
      expect(await auditCount(t)).toBe(before);
      expect(await t.db.query(`SELECT 1 FROM organisations WHERE slug = 'quota-enterprise'`)).toHaveLength(0);
      const platform = await t.createUser('enterprise-creator', { platformAdmin: true, canCreateOrganisations: true });
      const created = await t.as(platform.token).post('/api/v1/organisations').send(createBody('Quota Enterprise', { organisationType: 'ENTERPRISE' }));
      expect(created.status).toBe(200);
      expect((await t.as(platform.token).get('/api/v1/organisations/quota-enterprise/quotas')).body).toEqual({ clustersPerCustomer: 100 });
    });

    it('refuses a taken slug with 409', async () => {
      await t.as(creator.token).post('/api/v1/organisations').send(createBody('Taken Name')).expect(200);
      const before = await auditCount(t);
      const res = await t.as(creator.token).post('/api/v1/organisations').send(createBody('taken  name!'));
      expect(res.status).toBe(409);
      expectErrorBody(res.body, 409);
      expect(res.body.message).toMatch(/taken-name/);
      expect(await auditCount(t)).toBe(before);
    });

    it('needs canCreateOrganisations (403, no audit row)', async () => {
      const plain = await t.createUser('plain', { canCreateOrganisations: false });
      const before = await auditCount(t);
      const res = await t.as(plain.token).post('/api/v1/organisations').send(createBody('Not Allowed'));
      expect(res.status).toBe(403);
      expectErrorBody(res.body, 403);
      expect(res.body.message).toMatch(/canCreateOrganisations/);
      expect(await auditCount(t)).toBe(before);
      const rows = await t.db.query(`SELECT 1 FROM organisations WHERE slug = 'not-allowed'`);
      expect(rows).toHaveLength(0);
    });

    it('answers 401 without a credential', async () => {
      const res = await t.http().post('/api/v1/organisations').send(createBody('Anon'));
      expect(res.status).toBe(401);
    });

    it.each([
      ['missing agreements', { acceptedAgreements: undefined }, 'acceptedAgreements'],
      ['one required agreement missing', { acceptedAgreements: [{ agreementSlug: 'terms-of-service' }] }, 'acceptedAgreements'],
      ['empty agreements', { acceptedAgreements: [] }, 'acceptedAgreements'],
      ['bad agreement slug', { acceptedAgreements: [{ agreementSlug: 'Terms Of Service' }] }, 'acceptedAgreements.0.agreementSlug'],
      ['unknown type', { organisationType: 'NONPROFIT' }, 'organisationType'],
      ['missing type', { organisationType: undefined }, 'organisationType'],
      ['bad VAT check digits', { vatNumber: 'DE136695977' }, 'vatNumber'],
      ['bad VAT format', { vatNumber: 'XX123' }, 'vatNumber'],
      ['bad email', { contactEmail: { email: 'not-an-email' } }, 'contactEmail.email'],
      ['email neither object nor string', { contactEmail: 42 }, 'contactEmail'],
      ['missing email', { contactEmail: undefined }, 'contactEmail'],
      ['name too short', { organisationName: 'A' }, 'organisationName'],
      ['name too long', { organisationName: 'x'.repeat(101) }, 'organisationName'],
      ['name without letters', { organisationName: '!!!' }, 'organisationName'],
      ['unknown property', { plan: 'gold' }, 'plan'],
      ['too many agreements', { acceptedAgreements: Array.from({ length: 21 }, (_, i) => ({ agreementSlug: `a${i}` })) }, 'acceptedAgreements'],
      ['companyName too long', { companyName: 'c'.repeat(256) }, 'companyName'],
      ['companyAddress too long', { companyAddress: 'c'.repeat(1001) }, 'companyAddress'],
      ['vatNumber too long', { vatNumber: 'D'.repeat(33) }, 'vatNumber'],
    ])('refuses %s with 400 naming the field', async (_, override, field) => {
      const before = await auditCount(t);
      const body = createBody('Invalid Org', override);
      const res = await t.as(creator.token).post('/api/v1/organisations?fieldValidation=Strict').send(body);
      expect(res.status).toBe(400);
      expectErrorBody(res.body, 400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      expect(await auditCount(t)).toBe(before);
      expect(await t.db.query(`SELECT 1 FROM organisations WHERE slug = 'invalid-org'`)).toHaveLength(0);
    });

    it('accepts a name of exactly 2 and 100 characters', async () => {
      await t.as(creator.token).post('/api/v1/organisations').send(createBody('ab')).expect(200);
      const long = await t.as(creator.token).post('/api/v1/organisations').send(createBody('y'.repeat(100)));
      expect(long.status).toBe(200);
      expect(long.body.slug.slugValue).toBe('y'.repeat(63));
    });
  });

  describe('GET and PATCH /api/v1/organisations/{organisationSlug}', () => {
    let f: OrgFixture;
    beforeAll(async () => {
      f = await orgWithRoles(t, 'Patchable');
    });

    it('is readable by every role, not by outsiders', async () => {
      for (const u of [f.owner, f.admin, f.member, f.viewer]) {
        const res = await t.as(u.token).get(`/api/v1/organisations/${f.slug}`);
        expect(res.status).toBe(200);
        expect(res.body.slug).toEqual({ slugValue: f.slug });
        expect(res.body.id).toBe(f.identity);
      }
      const res = await t.as(f.outsider.token).get(`/api/v1/organisations/${f.slug}`);
      expect(res.status).toBe(403);
    });

    it('PATCH writes exactly one audit event with old and new values and one readable activity event', async () => {
      const auditBefore = await auditCount(t, 'organisation_id = $1', [f.id]);
      const [{ n: actBefore }] = await t.db.query('SELECT count(*)::int AS n FROM activity_events WHERE organisation_id = $1', [f.id]);
      const res = await t
        .as(f.admin.token)
        .patch(`/api/v1/organisations/${f.slug}`)
        .send({ organisationName: 'Patched Name', billingEmail: { email: 'billing@patched.example' }, vatNumber: VALID_VAT });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        name: 'Patched Name',
        slug: { slugValue: f.slug },
        billingEmail: 'billing@patched.example',
        vatCode: VALID_VAT,
        vatCodeValidated: true,
      });
      expect(await auditCount(t, 'organisation_id = $1', [f.id])).toBe(auditBefore + 1);
      const [last] = await t.db.query(
        'SELECT type, details, actor_username, referenced_entity_identity FROM audit_events WHERE organisation_id = $1 ORDER BY id DESC LIMIT 1',
        [f.id],
      );
      expect(last.type).toBe('ORGANISATION_UPDATED');
      expect(last.actor_username).toBe(f.admin.username);
      expect(last.referenced_entity_identity).toBe(f.identity);
      expect(last.details).toEqual({
        name: { old: 'Patchable', new: 'Patched Name' },
        billingEmail: { old: null, new: 'billing@patched.example' },
        vatCode: { old: null, new: VALID_VAT },
        vatCodeValidated: { old: false, new: true },
      });
      const activity = await t.db.query(
        'SELECT type, message, actor_username, actor_identity FROM activity_events WHERE organisation_id = $1 ORDER BY id',
        [f.id],
      );
      expect(activity.length).toBe(actBefore + 1);
      expect(activity[activity.length - 1]).toEqual({
        type: 'ORGANISATION_UPDATED',
        message: `${f.admin.username} updated organisation ${f.slug}`,
        actor_username: f.admin.username,
        actor_identity: f.admin.identity,
      });
    });

    it('organisationType (it sets the quota) is changed by platform administrators only: 403 naming the rule for the organisation itself', async () => {
      await t.db.query(`UPDATE organisations SET type = 'TRIAL', clusters_per_customer = 1 WHERE id = $1`, [f.id]);
      const before = await auditCount(t);
      for (const u of [f.owner, f.admin]) {
        const res = await t.as(u.token).patch(`/api/v1/organisations/${f.slug}`).send({ organisationType: 'ENTERPRISE', organisationName: 'Raised' });
        expect(res.status).toBe(403);
        expectErrorBody(res.body, 403);
        expect(res.body.message).toMatch(/organisationType sets the organisation's cluster quota.*platform administrator/);
      }
      expect(await auditCount(t)).toBe(before);
      const [org] = await t.db.query('SELECT type, name, clusters_per_customer FROM organisations WHERE id = $1', [f.id]);
      expect(org).toEqual({ type: 'TRIAL', name: 'Patched Name', clusters_per_customer: 1 });
      // Sending the current type is no change: the rest of the request applies.
      expect((await t.as(f.admin.token).patch(`/api/v1/organisations/${f.slug}`).send({ organisationType: 'TRIAL' })).status).toBe(200);
    });

    it('a platform administrator changes the type (as an ADMIN member, or outside with the admin route); an untailored quota follows it', async () => {
      // A platform administrator who is an ADMIN of the organisation uses the organisation's PATCH.
      const platformMember = await t.createUser('type-platform-member', { platformAdmin: true });
      await t.db.query(`INSERT INTO organisation_members (organisation_id, user_id, role, kubernetes_role, joined_at) VALUES ($1, $2, 'ADMIN', 'VIEW', now())`, [
        f.id,
        platformMember.id,
      ]);
      const res = await t.as(platformMember.token).patch(`/api/v1/organisations/${f.slug}`).send({ organisationType: 'ENTERPRISE' });
      expect(res.status).toBe(200);
      expect(res.body.type).toBe('ENTERPRISE');
      const q = await t.as(f.viewer.token).get(`/api/v1/organisations/${f.slug}/quotas`);
      expect(q.body).toEqual({ clustersPerCustomer: 100 });
      // One outside the organisation uses PATCH /admin/v1/orgs/{identity}; a tailored quota stays.
      await t.db.query('UPDATE organisations SET clusters_per_customer = 7 WHERE id = $1', [f.id]);
      const platform = await t.createUser('type-platform-admin', { platformAdmin: true });
      expect((await t.as(platform.token).patch(`/api/v1/organisations/${f.slug}`).send({ organisationType: 'TRIAL' })).status).toBe(403);
      const admin = await t.as(platform.token).patch(`/admin/v1/orgs/${f.identity}`).send({ organisationType: 'TRIAL' });
      expect(admin.status).toBe(200);
      expect(admin.body).toMatchObject({ identity: f.identity, slug: f.slug, type: 'TRIAL' });
      const q2 = await t.as(f.viewer.token).get(`/api/v1/organisations/${f.slug}/quotas`);
      expect(q2.body).toEqual({ clustersPerCustomer: 7 });
      const [last] = await t.db.query(`SELECT actor_username, details FROM audit_events WHERE organisation_id = $1 ORDER BY id DESC LIMIT 1`, [f.id]);
      expect(last).toEqual({ actor_username: platform.username, details: { type: { old: 'ENTERPRISE', new: 'TRIAL' } } });
      // The admin route is for platform administrators only, and validates the type.
      expect((await t.as(f.owner.token).patch(`/admin/v1/orgs/${f.identity}`).send({ organisationType: 'ENTERPRISE' })).status).toBe(403);
      const bad = await t.as(platform.token).patch(`/admin/v1/orgs/${f.identity}`).send({ organisationType: 'GOLD' });
      expect(bad.status).toBe(400);
      expect(bad.body.errors[0].field).toBe('organisationType');
      expect((await t.as(platform.token).patch('/admin/v1/orgs/00000000-0000-4000-8000-000000000000').send({ organisationType: 'TRIAL' })).status).toBe(404);
      await t.db.query('DELETE FROM organisation_members WHERE organisation_id = $1 AND user_id = $2', [f.id, platformMember.id]);
    });

    it('clears billingEmail and vatNumber with null', async () => {
      const res = await t.as(f.admin.token).patch(`/api/v1/organisations/${f.slug}`).send({ billingEmail: null, vatNumber: null });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ billingEmail: null, vatCode: null, vatCodeValidated: false, vatCodeValidatedAt: null });
    });

    it.each([
      [{ contactEmail: { email: 'nope' } }, 'contactEmail.email'],
      [{ contactEmail: null }, 'contactEmail'],
      [{ billingEmail: { email: '' } }, 'billingEmail.email'],
      [{ organisationType: 'GOLD' }, 'organisationType'],
      [{ organisationName: 'x' }, 'organisationName'],
      [{ organisationName: 'x'.repeat(101) }, 'organisationName'],
      [{ organisationName: null }, 'organisationName'],
      [{ vatNumber: 'NL123' }, 'vatNumber'],
      [{ slug: 'other' }, 'slug'],
    ])('PATCH %j is 400 naming %s and leaves no audit row', async (body, field) => {
      const before = await auditCount(t);
      const [orgBefore] = await t.db.query('SELECT name, version FROM organisations WHERE id = $1', [f.id]);
      const res = await t.as(f.admin.token).patch(`/api/v1/organisations/${f.slug}?fieldValidation=Strict`).send(body);
      expect(res.status).toBe(400);
      expectErrorBody(res.body, 400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      expect(await auditCount(t)).toBe(before);
      const [orgAfter] = await t.db.query('SELECT name, version FROM organisations WHERE id = $1', [f.id]);
      expect(orgAfter).toEqual(orgBefore);
    });

    it('PATCH refused by the role guard leaves no audit row', async () => {
      const before = await auditCount(t);
      for (const u of [f.member, f.viewer, f.outsider]) {
        const res = await t.as(u.token).patch(`/api/v1/organisations/${f.slug}`).send({ organisationName: 'Hijacked' });
        expect(res.status).toBe(403);
        expectErrorBody(res.body, 403);
      }
      expect(await auditCount(t)).toBe(before);
      const [org] = await t.db.query('SELECT name FROM organisations WHERE id = $1', [f.id]);
      expect(org.name).not.toBe('Hijacked');
    });

    it('a failing audit insert answers 5xx and leaves the organisation unchanged', async () => {
      const [before] = await t.db.query('SELECT name, version, modified_at FROM organisations WHERE id = $1', [f.id]);
      const auditBefore = await auditCount(t);
      const [{ n: actBefore }] = await t.db.query('SELECT count(*)::int AS n FROM activity_events');
      await t.db.query(`ALTER TABLE audit_events ADD CONSTRAINT t_fail CHECK (type <> 'ORGANISATION_UPDATED') NOT VALID`);
      try {
        const res = await t.as(f.owner.token).patch(`/api/v1/organisations/${f.slug}`).send({ organisationName: 'Never Stored' });
        expect(res.status).toBeGreaterThanOrEqual(500);
        expectErrorBody(res.body, res.status);
        expect(res.body.message).not.toMatch(/t_fail|audit_events|INSERT/);
      } finally {
        await t.db.query('ALTER TABLE audit_events DROP CONSTRAINT t_fail');
      }
      const [after] = await t.db.query('SELECT name, version, modified_at FROM organisations WHERE id = $1', [f.id]);
      expect(after).toEqual(before);
      expect(await auditCount(t)).toBe(auditBefore);
      const [{ n: actAfter }] = await t.db.query('SELECT count(*)::int AS n FROM activity_events');
      expect(actAfter).toBe(actBefore);
    });
  });

  describe('DELETE /api/v1/organisations/{organisationIdentity}', () => {
    it('is OWNER-only (ADMIN/MEMBER/VIEWER/outsider 403, unauthenticated 401), then 204 and gone', async () => {
      const f = await orgWithRoles(t, 'Doomed');
      for (const u of [f.admin, f.member, f.viewer, f.outsider]) {
        const res = await t.as(u.token).delete(`/api/v1/organisations/${f.identity}`);
        expect(res.status).toBe(403);
      }
      expect((await t.http().delete(`/api/v1/organisations/${f.identity}`)).status).toBe(401);
      const res = await t.as(f.owner.token).delete(`/api/v1/organisations/${f.identity}`);
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expect(await t.db.query('SELECT 1 FROM organisations WHERE id = $1', [f.id])).toHaveLength(0);
      expect(await t.db.query('SELECT 1 FROM organisation_members WHERE organisation_id = $1', [f.id])).toHaveLength(0);
      const audit = await t.db.query(`SELECT details FROM audit_events WHERE organisation_id = $1 AND type = 'ORGANISATION_DELETED'`, [f.id]);
      expect(audit).toHaveLength(1);
      expect(audit[0].details.name).toEqual({ old: 'Doomed', new: null });
      // Gone: the former owner is now a non-member.
      expect((await t.as(f.owner.token).get(`/api/v1/organisations/${f.slug}`)).status).toBe(403);
    });

    it('a platform administrator who is not a member may delete', async () => {
      const f = await orgWithRoles(t, 'Admin Deletes');
      const res = await t.admin().delete(`/api/v1/organisations/${f.identity}`);
      expect(res.status).toBe(204);
    });

    it('an unknown or malformed identity is 403 like any organisation the caller is not in', async () => {
      const a = await t.as(creator.token).delete('/api/v1/organisations/00000000-0000-4000-8000-000000000000');
      expect(a.status).toBe(403);
      const b = await t.as(creator.token).delete('/api/v1/organisations/not-a-uuid');
      expect(b.status).toBe(403);
    });

    it('is refused with 409 naming the blocker while cloud accounts, clusters or monitoring tenants exist', async () => {
      const f = await orgWithRoles(t, 'Guarded');
      const [profile] = await t.db.query('SELECT id, type FROM cloud_profiles ORDER BY id LIMIT 1');
      expect(profile).toBeDefined();
      const [account] = await t.db.query(
        `INSERT INTO cloud_accounts (organisation_id, cloud_profile_id, cloud_provider_type, display_name, created_at, modified_at)
         VALUES ($1, $2, $3, 'acct', now(), now()) RETURNING id`,
        [f.id, profile.id, profile.type],
      );
      const auditBefore = await auditCount(t);
      let res = await t.as(f.owner.token).delete(`/api/v1/organisations/${f.identity}`);
      expect(res.status).toBe(409);
      expectErrorBody(res.body, 409);
      expect(res.body.message).toMatch(/1 cloud account/);
      expect(res.body.message).not.toMatch(/cluster|tenant/);

      const [env] = await t.db.query(
        `INSERT INTO environments (organisation_id, slug, name, created_at, modified_at) VALUES ($1, 'prod', 'prod', now(), now()) RETURNING id`,
        [f.id],
      );
      const [cluster] = await t.db.query(
        `INSERT INTO clusters (organisation_id, environment_id, cloud_account_id, slug, name, region, cloud_provider, version)
         VALUES ($1, $2, $3, 'web', 'web', 'r1', $4, '1.30.0') RETURNING id`,
        [f.id, env.id, account.id, profile.type],
      );
      await t.db.query(
        `INSERT INTO observability_tenants (organisation_id, cluster_id, environment_id, slug, name) VALUES ($1, $2, $3, 'prod-web', 'prod-web')`,
        [f.id, cluster.id, env.id],
      );
      res = await t.as(f.owner.token).delete(`/api/v1/organisations/${f.identity}`);
      expect(res.status).toBe(409);
      expect(res.body.message).toMatch(/cloud account/);
      expect(res.body.message).toMatch(/1 cluster/);
      expect(res.body.message).toMatch(/monitoring tenant/);

      // Deleted clusters and tenants no longer count; cloud accounts always do.
      await t.db.query(`UPDATE clusters SET deleted_at = now(), status = 'deleted' WHERE id = $1`, [cluster.id]);
      await t.db.query(`UPDATE observability_tenants SET deleted_at = now() WHERE organisation_id = $1`, [f.id]);
      res = await t.as(f.owner.token).delete(`/api/v1/organisations/${f.identity}`);
      expect(res.status).toBe(409);
      expect(res.body.message).not.toMatch(/cluster|tenant/);
      expect(await auditCount(t)).toBe(auditBefore);

      await t.db.query('DELETE FROM cloud_accounts WHERE id = $1', [account.id]);
      res = await t.as(f.owner.token).delete(`/api/v1/organisations/${f.identity}`);
      expect(res.status).toBe(204);
    });
  });

  describe('quotas and compute information', () => {
    let f: OrgFixture;
    beforeAll(async () => {
      f = await orgWithRoles(t, 'Computing');
    });

    it('quotas are readable by every role', async () => {
      for (const u of [f.owner, f.admin, f.member, f.viewer]) {
        const res = await t.as(u.token).get(`/api/v1/organisations/${f.slug}/quotas`);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ clustersPerCustomer: 25 });
      }
      expect((await t.as(f.outsider.token).get(`/api/v1/organisations/${f.slug}/quotas`)).status).toBe(403);
      expect((await t.http().get(`/api/v1/organisations/${f.slug}/quotas`)).status).toBe(401);
    });

    it('compute information sums node type cpu and memory over pools of non-deleted clusters', async () => {
      const empty = await t.as(f.viewer.token).get(`/api/v1/compute-information/organisation/${f.slug}`);
      expect(empty.status).toBe(200);
      expect(empty.body).toEqual({ totalClusters: 0, totalCpu: 0, totalMemory: 0 });

      const [nt] = await t.db.query(
        `SELECT cp.type AS provider, nt.type, nt.cpu, nt.memory FROM cloud_provider_node_types nt JOIN cloud_providers cp ON cp.id = nt.provider_id ORDER BY nt.id LIMIT 1`,
      );
      expect(nt).toBeDefined();
      const [profile] = await t.db.query('SELECT id, type FROM cloud_profiles WHERE type = $1 LIMIT 1', [nt.provider]);
      const profileId = profile?.id ?? (await t.db.query('SELECT id FROM cloud_profiles LIMIT 1'))[0].id;
      const [account] = await t.db.query(
        `INSERT INTO cloud_accounts (organisation_id, cloud_profile_id, cloud_provider_type, display_name, created_at, modified_at)
         VALUES ($1, $2, $3, 'acct', now(), now()) RETURNING id`,
        [f.id, profileId, nt.provider],
      );
      const [env] = await t.db.query(
        `INSERT INTO environments (organisation_id, slug, name, created_at, modified_at) VALUES ($1, 'prod', 'prod', now(), now()) RETURNING id`,
        [f.id],
      );
      const addCluster = async (slug: string, deleted: boolean) => {
        const [c] = await t.db.query(
          `INSERT INTO clusters (organisation_id, environment_id, cloud_account_id, slug, name, region, cloud_provider, version, deleted_at)
           VALUES ($1, $2, $3, $4, $4, 'r1', $5, '1.30.0', $6) RETURNING id`,
          [f.id, env.id, account.id, slug, nt.provider, deleted ? new Date() : null],
        );
        await t.db.query(`INSERT INTO cluster_node_pools (cluster_id, name, node_size, min_size, max_size) VALUES ($1, 'p1', $2, 2, 5)`, [
          c.id,
          nt.type,
        ]);
      };
      await addCluster('a', false);
      await addCluster('b', false);
      await addCluster('gone', true);
      const res = await t.as(f.member.token).get(`/api/v1/compute-information/organisation/${f.slug}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ totalClusters: 2, totalCpu: 2 * 2 * nt.cpu, totalMemory: 2 * 2 * nt.memory });
      expect((await t.as(f.outsider.token).get(`/api/v1/compute-information/organisation/${f.slug}`)).status).toBe(403);
    });
  });

  describe('GET /admin/v1/organisations', () => {
    it('pages every organisation (form A, as the admin client decodes) for platform administrators only', async () => {
      const res = await t.admin().get('/admin/v1/organisations?size=2&sort=slug,desc');
      expect(res.status).toBe(200);
      expect(res.body.content).toHaveLength(2);
      expect(res.body.size).toBe(2);
      expect(res.body.totalElements).toBeGreaterThan(2);
      expect(res.body.sort).toEqual({ empty: false, sorted: true, unsorted: false });
      // The platform administration API answers slugs as plain strings (src/compat).
      expect(res.body.content[0].slug > res.body.content[1].slug).toBe(true);
      const bad = await t.admin().get('/admin/v1/organisations?sort=secret,asc');
      expect(bad.status).toBe(400);
      const forbidden = await t.as(creator.token).get('/admin/v1/organisations');
      expect(forbidden.status).toBe(403);
      expect((await t.http().get('/admin/v1/organisations')).status).toBe(401);
      // By identity, in the original admin client's shape (slug and emails as strings).
      const one = await t.admin().get(`/admin/v1/orgs/${res.body.content[0].identity}`);
      expect(one.status).toBe(200);
      expect(one.body).toMatchObject({ id: res.body.content[0].identity, slug: res.body.content[0].slug, name: res.body.content[0].name });
      expect(typeof one.body.contactEmail === 'string' || one.body.contactEmail === null).toBe(true);
      expect((await t.admin().get('/admin/v1/orgs/00000000-0000-4000-8000-000000000000')).status).toBe(404);
      expect((await t.as(creator.token).get(`/admin/v1/orgs/${res.body.content[0].identity}`)).status).toBe(403);
    });
  });
});
