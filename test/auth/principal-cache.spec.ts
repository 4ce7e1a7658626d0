import { changesPrincipals } from '../../src/auth/principal-cache';
import { TOUCH_LAST_USED_SQL } from '../../src/tokens/tokens.service';

describe('which statements of this replica empty its principal cache on commit', () => {
  it.each([
    // TypeORM's own statements
    'UPDATE "personal_access_tokens" SET "revoked_at" = $1 WHERE "id" IN ($2)',
    'UPDATE "organisation_members" SET "role" = $1, "kubernetes_role" = $2 WHERE "id" = $3',
    'DELETE FROM "organisation_members" WHERE "id" = $1',
    'INSERT INTO "organisation_members"("organisation_id", "user_id", "role") VALUES ($1, $2, $3) RETURNING "id"',
    'INSERT INTO "organisations"("slug", "name") VALUES ($1, $2) RETURNING "id", "identity"',
    'UPDATE "organisations" SET "name" = $1, "version" = "version" + 1 WHERE "id" IN ($2)',
    'DELETE FROM "organisations" WHERE "id" = $1',
    'UPDATE "users" SET "platform_admin" = $1 WHERE "id" IN ($2)',
    // hand-written SQL
    'update users set platform_admin = true where id = $1',
    '  DELETE FROM public.personal_access_tokens WHERE user_id = $1',
    'UPDATE ONLY organisations SET clusters_per_customer = 7',
    'TRUNCATE organisation_members',
    'TRUNCATE TABLE users CASCADE',
  ])('%s', (sql) => expect(changesPrincipals(sql)).toBe(true));

  it.each([
    TOUCH_LAST_USED_SQL,
    // A new user or token cannot make anything cached wrong.
    'INSERT INTO "users"("username", "email") VALUES ($1, $2) RETURNING "id"',
    'INSERT INTO personal_access_tokens (user_id, name, token_hash) VALUES ($1, $2, $3)',
    // Reads, locks and other tables
    'SELECT id FROM organisations WHERE id = $1 FOR UPDATE',
    'SELECT * FROM "users" "u" WHERE "u"."id" = $1',
    'UPDATE "organisation_integrations" SET "enabled" = $1 WHERE "id" = $2',
    'UPDATE users_archive SET x = 1',
    'DELETE FROM "organisations_extra" WHERE "id" = $1',
    'INSERT INTO audit_events (type) VALUES ($1)',
  ])('not: %s', (sql) => expect(changesPrincipals(sql)).toBe(false));
});
