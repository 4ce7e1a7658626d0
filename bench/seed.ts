import { Client } from 'pg';

export interface SeedResult {
  organisationSlug: string;
  environmentSlug: string;
  clusterSlugs: string[];
}

/**
 * Seeds one organisation (`bench`, or `slug`) with `count` started clusters (two node pools each) straight in SQL
 * (generate_series), owned by the bootstrap administrator. Adds to what is there, so the 100,000 run
 * extends the 10,000 one.
 */
export async function seedClusters(url: string, targetCount: number, slug = 'bench'): Promise<SeedResult> {
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    await db.query('BEGIN');
    let [org] = (await db.query(`SELECT id FROM organisations WHERE slug = $1`, [slug])).rows;
    if (!org) {
      [org] = (
        await db.query(
          `INSERT INTO organisations (slug, name, type, clusters_per_customer, accepted_terms, created_at, modified_at)
           VALUES ($1, $1, 'ENTERPRISE', 1000000, true, now(), now()) RETURNING id`,
          [slug],
        )
      ).rows;
      await db.query(
        `INSERT INTO organisation_members (organisation_id, user_id, role, kubernetes_role, joined_at)
         SELECT $1, id, 'OWNER', 'CLUSTER_ADMIN', now() FROM users WHERE platform_admin ORDER BY id LIMIT 1`,
        [org.id],
      );
      await db.query(
        `INSERT INTO environments (organisation_id, slug, name, type, created_at, modified_at) VALUES ($1, 'production', 'production', 'production', now(), now())`,
        [org.id],
      );
      const [profile] = (await db.query(`SELECT id, type FROM cloud_profiles WHERE type = 'platform_1' ORDER BY id LIMIT 1`)).rows;
      const [account] = (
        await db.query(
          `INSERT INTO cloud_accounts (organisation_id, cloud_profile_id, cloud_provider_type, display_name, created_at, modified_at)
           VALUES ($1, $2, $3, 'Bench account', now(), now()) RETURNING id`,
          [org.id, profile.id, profile.type],
        )
      ).rows;
      const [cred] = (
        await db.query(
          `INSERT INTO cloud_credentials (cloud_account_id, display_name, cloud_type, metadata, secret_ciphertext, created_at, modified_at)
           VALUES ($1, 'bench', 'platform_1', '{}', 'v1.x.y.z', now(), now()) RETURNING id`,
          [account.id],
        )
      ).rows;
      await db.query(`UPDATE cloud_accounts SET primary_credentials_id = $1 WHERE id = $2`, [cred.id, account.id]);
    }
    const [env] = (await db.query(`SELECT id FROM environments WHERE organisation_id = $1 AND slug = 'production'`, [org.id])).rows;
    const [acc] = (await db.query(`SELECT id, primary_credentials_id FROM cloud_accounts WHERE organisation_id = $1`, [org.id])).rows;
    const [{ n: existing }] = (await db.query(`SELECT count(*)::int AS n FROM clusters WHERE organisation_id = $1`, [org.id])).rows;
    const [version] = (await db.query(`SELECT version FROM cluster_versions WHERE available ORDER BY id LIMIT 1`)).rows;
    const [nodeType] = (
      await db.query(`SELECT nt.type FROM cloud_provider_node_types nt JOIN cloud_providers p ON p.id = nt.provider_id WHERE p.type = 'platform_1' ORDER BY nt.id LIMIT 1`)
    ).rows;
    const [region] = (
      await db.query(`SELECT r.slug FROM cloud_provider_regions r JOIN cloud_providers p ON p.id = r.provider_id WHERE p.type = 'platform_1' AND r.available AND NOT r.restricted ORDER BY r.id LIMIT 1`)
    ).rows;
    if (targetCount > existing) {
      await db.query(
        `INSERT INTO clusters (organisation_id, environment_id, cloud_account_id, cloud_credentials_id, slug, name, region, cloud_provider,
                               version, status, provision_status, observed_at, observed_status, observed_version, created_at, modified_at)
         SELECT $1, $2, $3, $4, 'cluster-' || g, 'cluster-' || g, $5, 'platform_1', $6, 'started', 'DONE', now(), 'started', $6,
                now() - (g || ' seconds')::interval, now()
           FROM generate_series($7::int + 1, $8::int) AS g`,
        [org.id, env.id, acc.id, acc.primary_credentials_id, region.slug, version.version, existing, targetCount],
      );
      await db.query(
        `INSERT INTO cluster_node_pools (cluster_id, name, node_size, min_size, max_size, provision_status, created_at, modified_at)
         SELECT c.id, p.name, $2, 2, 5, 'DONE', now(), now()
           FROM clusters c CROSS JOIN (VALUES ('system'), ('workers')) AS p(name)
          WHERE c.organisation_id = $1 AND NOT EXISTS (SELECT 1 FROM cluster_node_pools x WHERE x.cluster_id = c.id)`,
        [org.id, nodeType.type],
      );
      await db.query(
        `INSERT INTO observability_tenants (organisation_id, cluster_id, environment_id, slug, name, created_at, modified_at)
         SELECT c.organisation_id, c.id, c.environment_id, 'production-' || c.slug, c.name, now(), now()
           FROM clusters c WHERE c.organisation_id = $1 AND NOT EXISTS (SELECT 1 FROM observability_tenants t WHERE t.cluster_id = c.id)`,
        [org.id],
      );
    }
    await db.query('COMMIT');
    await db.query('ANALYZE');
    const slugs = (await db.query(`SELECT slug FROM clusters WHERE organisation_id = $1 ORDER BY id LIMIT 200`, [org.id])).rows.map((r) => r.slug);
    return { organisationSlug: slug, environmentSlug: 'production', clusterSlugs: slugs };
  } catch (e) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    await db.end();
  }
}
