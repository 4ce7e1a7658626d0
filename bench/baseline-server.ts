/**
 * The benchmark's baseline: Fastify + pg, no Nest, no auth, no validation framework. It runs the same
 * SQL as the service (the shared, framework-free src/clusters/cluster-read.ts and the same statements for
 * lookups, the update and its audit/activity rows) and answers the same JSON shape (src/common/page-envelope.ts).
 */
import Fastify from 'fastify';
import { Pool, types } from 'pg';
import { clusterInEnvironment, clusterPage, clusterViews, CLUSTER_SELECT, ClusterRow, Sql } from '../src/clusters/cluster-read';
import { toPage } from '../src/common/page-envelope';

types.setTypeParser(20, (v: string) => Number(v));
types.setTypeParser(1700, (v: string) => Number(v));

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const poolSql: Sql = async (text, params) => (await pool.query(text, params as unknown[])).rows;
const app = Fastify({ logger: false });

async function organisation(sql: Sql, slug: string): Promise<{ id: number; slug: string } | undefined> {
  const [org] = await sql(`SELECT id, slug FROM organisations WHERE slug = $1`, [slug]);
  return org as { id: number; slug: string } | undefined;
}

async function lookup(sql: Sql, orgId: number, envSlug: string, clusterSlug: string, lock: boolean) {
  const found = await clusterInEnvironment(sql, orgId, envSlug, clusterSlug, lock);
  return found.environment && found.cluster ? { env: found.environment, cluster: found.cluster } : null;
}

app.get<{ Params: { org: string }; Querystring: { page?: string; size?: string } }>('/api/v1/orgs/:org/clusters', async (req, reply) => {
  const org = await organisation(poolSql, req.params.org);
  if (!org) return reply.code(404).send({ message: 'not found' });
  const page = Number(req.query.page ?? 0);
  const size = Math.min(Number(req.query.size ?? 50), 500);
  const client = await pool.connect();
  try {
    const sql: Sql = async (text, params) => (await client.query(text, params as unknown[])).rows;
    const { rows, total } = await clusterPage(sql, { organisationId: org.id }, [['c.id', 'ASC']], size, page * size);
    const content = await clusterViews(sql, rows, { showCompute: true });
    return toPage(content, total, { page, size, offset: page * size, sort: [] }, 'B');
  } finally {
    client.release();
  }
});

app.get<{ Params: { org: string; env: string; cluster: string } }>('/api/v1/orgs/:org/clusters/:env/:cluster', async (req, reply) => {
  const org = await organisation(poolSql, req.params.org);
  if (!org) return reply.code(404).send({ message: 'not found' });
  const client = await pool.connect();
  try {
    const sql: Sql = async (text, params) => (await client.query(text, params as unknown[])).rows;
    const found = await lookup(sql, org.id, req.params.env, req.params.cluster, false);
    if (!found) return reply.code(404).send({ message: 'not found' });
    return (await clusterViews(sql, [found.cluster], {}))[0];
  } finally {
    client.release();
  }
});

app.patch<{ Params: { org: string; env: string; cluster: string }; Body: { description?: string } }>(
  '/api/v1/orgs/:org/clusters/:env/:cluster',
  async (req, reply) => {
    const org = await organisation(poolSql, req.params.org);
    if (!org) return reply.code(404).send({ message: 'not found' });
    const client = await pool.connect();
    const sql: Sql = async (text, params) => (await client.query(text, params as unknown[])).rows;
    let row: ClusterRow;
    try {
      // The service's transaction: the row lock, one UPDATE that also writes the audit row, the activity event and
      // the webhook event (no subscription here, so none is inserted), COMMIT; the answer's related rows after it.
      await client.query('BEGIN');
      const found = await lookup(sql, org.id, req.params.env, req.params.cluster, true);
      if (!found) {
        await client.query('ROLLBACK');
        return reply.code(404).send({ message: 'not found' });
      }
      const { env, cluster } = found;
      const now = new Date();
      const description = req.body?.description ?? null;
      row = cluster;
      if (description !== cluster.description) {
        const change = { description: { old: cluster.description, new: description } };
        const details = JSON.stringify(change);
        const data = JSON.stringify({ organisation: { slug: org.slug }, environment: { slug: env.slug }, cluster: { slug: cluster.slug }, details: change });
        [row] = (await sql(
          `WITH audit_row AS (
             INSERT INTO audit_events (type, actor_id, actor_username, organisation_id, organisation_slug, environment_id, environment_slug,
                                       cluster_id, cluster_slug, referenced_entity_identity, details, created_at)
             VALUES ('CLUSTER_UPDATED', NULL, 'baseline', $1, $2, $3, $4, $5, $6, $7, $8, $9)
           ), activity_row AS (
             INSERT INTO activity_events (organisation_id, type, message, actor_identity, actor_username, created_at)
             VALUES ($1, 'CLUSTER_UPDATED', $10, NULL, 'baseline', $9)
           ), e0_subs AS (
             SELECT id FROM webhook_subscriptions WHERE organisation_id = $1 AND enabled AND event_types && ARRAY['CLUSTER_UPDATED', '*']::text[]
           ), e0_event AS (
             INSERT INTO webhook_events (organisation_id, type, source, subject, data, created_at)
             SELECT $1, 'CLUSTER_UPDATED', $11, $12, $13::jsonb, $9 WHERE EXISTS (SELECT 1 FROM e0_subs) RETURNING id
           ), e0_deliveries AS (
             INSERT INTO webhook_deliveries (subscription_id, event_id, status, next_attempt_at, created_at)
             SELECT s.id, ev.id, 'PENDING', $9, $9 FROM e0_subs s, e0_event ev RETURNING id
           )
           UPDATE clusters c SET modified_at = $9, row_version = row_version + 1, description = $14 WHERE c.id = $5 RETURNING ${CLUSTER_SELECT}`,
          [
            org.id,
            org.slug,
            env.id,
            env.slug,
            cluster.id,
            cluster.slug,
            cluster.identity,
            details,
            now,
            `baseline updated cluster ${env.slug}/${cluster.slug}`,
            `/api/v1/orgs/${org.slug}`,
            `clusters/${env.slug}/${cluster.slug}`,
            data,
            description,
          ],
        )) as ClusterRow[];
      }
      await client.query('COMMIT');
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
    return (await clusterViews(poolSql, [row], { extended: true, showCompute: true }))[0];
  },
);

app.get('/health', async () => ({ status: 'ok' }));
app.get('/health/ready', async () => ({ status: 'ok' }));

app.listen({ port: Number(process.env.PORT ?? 8090), host: '127.0.0.1' }).catch((e) => {
  process.stderr.write(String(e));
  process.exit(1);
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => void app.close().then(() => pool.end()).then(() => process.exit(0)));
