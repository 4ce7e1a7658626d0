import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Invalidation of the principal cache (src/auth/principal-cache.ts) on every replica: any committed change to
 * what authentication and the organisation access guard decide from sends a NOTIFY on `cms_principal_cache`
 * naming what changed. Triggers, not application code, so that every write is caught (repositories, query
 * builders, raw SQL, cascades, manual fixes in psql); pg_notify inside the writing transaction is delivered
 * when, and only if, it commits.
 *
 * Payloads: `token:<id>`, `user:<id>` (the user, or one of their memberships), `organisation:<id>` and
 * `slug:<slug>` (an organisation that appeared under this slug: cached "no such organisation" answers),
 * `all` (TRUNCATE). `last_used_at`, written at most once a minute per token by authentication itself, is
 * the one change that notifies nothing.
 */
export class PrincipalCacheNotify1795400064000 implements MigrationInterface {
  name = 'PrincipalCacheNotify1795400064000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION cms_notify_principal_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_TABLE_NAME = 'personal_access_tokens' THEN
          PERFORM pg_notify('cms_principal_cache', 'token:' || OLD.id);
        ELSIF TG_TABLE_NAME = 'users' THEN
          PERFORM pg_notify('cms_principal_cache', 'user:' || OLD.id);
        ELSIF TG_TABLE_NAME = 'organisation_members' THEN
          IF TG_OP <> 'INSERT' THEN PERFORM pg_notify('cms_principal_cache', 'user:' || OLD.user_id); END IF;
          IF TG_OP <> 'DELETE' THEN PERFORM pg_notify('cms_principal_cache', 'user:' || NEW.user_id); END IF;
        ELSIF TG_TABLE_NAME = 'organisations' THEN
          IF TG_OP <> 'INSERT' THEN PERFORM pg_notify('cms_principal_cache', 'organisation:' || OLD.id); END IF;
          IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.slug IS DISTINCT FROM OLD.slug) THEN
            PERFORM pg_notify('cms_principal_cache', 'slug:' || NEW.slug);
          END IF;
        END IF;
        RETURN NULL;
      END $$;
      CREATE FUNCTION cms_notify_principal_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('cms_principal_cache', 'all');
        RETURN NULL;
      END $$;

      CREATE TRIGGER personal_access_tokens_principal_update AFTER UPDATE ON personal_access_tokens FOR EACH ROW
        WHEN ((to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at'))
        EXECUTE FUNCTION cms_notify_principal_change();
      CREATE TRIGGER personal_access_tokens_principal_delete AFTER DELETE ON personal_access_tokens FOR EACH ROW
        EXECUTE FUNCTION cms_notify_principal_change();
      CREATE TRIGGER users_principal_change AFTER UPDATE OR DELETE ON users FOR EACH ROW
        EXECUTE FUNCTION cms_notify_principal_change();
      CREATE TRIGGER organisation_members_principal_change AFTER INSERT OR UPDATE OR DELETE ON organisation_members FOR EACH ROW
        EXECUTE FUNCTION cms_notify_principal_change();
      CREATE TRIGGER organisations_principal_change AFTER INSERT OR UPDATE OR DELETE ON organisations FOR EACH ROW
        EXECUTE FUNCTION cms_notify_principal_change();

      CREATE TRIGGER personal_access_tokens_principal_truncate AFTER TRUNCATE ON personal_access_tokens
        FOR EACH STATEMENT EXECUTE FUNCTION cms_notify_principal_truncate();
      CREATE TRIGGER users_principal_truncate AFTER TRUNCATE ON users
        FOR EACH STATEMENT EXECUTE FUNCTION cms_notify_principal_truncate();
      CREATE TRIGGER organisation_members_principal_truncate AFTER TRUNCATE ON organisation_members
        FOR EACH STATEMENT EXECUTE FUNCTION cms_notify_principal_truncate();
      CREATE TRIGGER organisations_principal_truncate AFTER TRUNCATE ON organisations
        FOR EACH STATEMENT EXECUTE FUNCTION cms_notify_principal_truncate();
    `);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      DROP TRIGGER organisations_principal_truncate ON organisations;
      DROP TRIGGER organisation_members_principal_truncate ON organisation_members;
      DROP TRIGGER users_principal_truncate ON users;
      DROP TRIGGER personal_access_tokens_principal_truncate ON personal_access_tokens;
      DROP TRIGGER organisations_principal_change ON organisations;
      DROP TRIGGER organisation_members_principal_change ON organisation_members;
      DROP TRIGGER users_principal_change ON users;
      DROP TRIGGER personal_access_tokens_principal_delete ON personal_access_tokens;
      DROP TRIGGER personal_access_tokens_principal_update ON personal_access_tokens;
      DROP FUNCTION cms_notify_principal_truncate();
      DROP FUNCTION cms_notify_principal_change();
    `);
  }
}
