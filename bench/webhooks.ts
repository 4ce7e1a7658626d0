import autocannon from 'autocannon';
import { ChildProcess, spawn } from 'child_process';
import * as http from 'http';
import type { AddressInfo } from 'net';
import * as path from 'path';
import { Client } from 'pg';
import type { SeedResult } from './seed';

/**
 * The webhook part of `npm run bench` (issue: events to outside parties):
 * - the added cost of the outbox on PATCH: PATCH of a cluster with an active `*` subscription against the
 *   same PATCH without one, alternated, best of each (target: ratio >= 0.9);
 * - outbox throughput: deliveries per second to a loopback receiver with 1 and with 2 delivery replicas
 *   (real application processes running the same worker), 8 subscriptions, all deliveries due at once.
 */

const ROOT = path.resolve(__dirname, '..');
const EVENTS_PER_SUBSCRIPTION = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 400);
const SUBSCRIPTIONS = 8;

export interface WebhookBenchContext {
  databaseUrl: string;
  serviceBase: string;
  token: string;
  encryptionKey: string;
  seed: SeedResult;
  durationSeconds: number;
  connections: number;
}

async function startReceiver(): Promise<{ server: http.Server; port: number; count: () => number }> {
  let n = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      n++;
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, count: () => n };
}

async function patchRps(ctx: WebhookBenchContext, tag: string): Promise<number> {
  let n = 0;
  const result = await autocannon({
    url: `${ctx.serviceBase}/api/v1/orgs/${ctx.seed.organisationSlug}/clusters/${ctx.seed.environmentSlug}/${ctx.seed.clusterSlugs[11]}`,
    connections: ctx.connections,
    duration: ctx.durationSeconds,
    headers: { 'content-type': 'application/json', authorization: `Token ${ctx.token}` },
    requests: [{ method: 'PATCH', setupRequest: (req) => ({ ...req, method: 'PATCH', body: JSON.stringify({ description: `${tag}-${n++}` }) }) }],
  });
  if (result.non2xx > 0) throw new Error(`PATCH answered ${result.non2xx} non-2xx responses`);
  return Math.round(result.requests.average);
}

async function api(ctx: WebhookBenchContext, method: string, p: string, body?: unknown): Promise<{ identity: string }> {
  const res = await fetch(`${ctx.serviceBase}${p}`, {
    method,
    headers: { authorization: `Token ${ctx.token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? { identity: '' } : ((await res.json()) as { identity: string });
}

function spawnReplica(ctx: WebhookBenchContext): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-r', '@swc-node/register', 'bench/webhook-replica.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: ctx.databaseUrl,
      MIGRATE_AT_START: 'true',
      CREDENTIALS_ENCRYPTION_KEY: ctx.encryptionKey,
      BOOTSTRAP_ADMIN_TOKEN: ctx.token,
      OUTBOUND_ALLOWLIST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      DATABASE_POOL_SIZE: '10',
      // Throughput of one organisation's subscriptions: its in-flight cap must not be what is measured.
      WEBHOOK_DELIVERY_PER_ORGANISATION: String(SUBSCRIPTIONS),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      if (out.includes('ready')) resolve(child);
    });
    child.stderr!.on('data', (d) => (out += d));
    child.on('exit', () => reject(new Error(`delivery replica exited:\n${out}`)));
  });
}

/** Queues EVENTS_PER_SUBSCRIPTION events for each subscription at once, and times until all are delivered. */
async function throughput(db: Client, orgId: string, subscriptionIds: string[]): Promise<{ deliveries: number; seconds: number; perSecond: number }> {
  await db.query(`DELETE FROM webhook_events WHERE organisation_id = $1`, [orgId]);
  const total = EVENTS_PER_SUBSCRIPTION * subscriptionIds.length;
  const started = Date.now();
  await db.query(
    `WITH ev AS (
       INSERT INTO webhook_events (organisation_id, type, source, subject, data, created_at)
       SELECT $1, 'CLUSTER_UPDATED', '/api/v1/orgs/bench', 'clusters/production/c' || g,
              jsonb_build_object('organisation', jsonb_build_object('slug', 'bench'), 'message', 'bench event ' || g), now()
         FROM generate_series(1, $2) g RETURNING id)
     INSERT INTO webhook_deliveries (subscription_id, event_id, status, next_attempt_at, created_at)
     SELECT s, ev.id, 'PENDING', now(), now() FROM ev, unnest($3::bigint[]) s`,
    [orgId, EVENTS_PER_SUBSCRIPTION, subscriptionIds],
  );
  for (;;) {
    const { rows } = await db.query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'DELIVERED' AND subscription_id = ANY($1::bigint[])`, [subscriptionIds]);
    if (rows[0].n >= total) break;
    if (Date.now() - started > 600_000) throw new Error(`only ${rows[0].n} of ${total} deliveries after 10 minutes`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const seconds = (Date.now() - started) / 1000;
  return { deliveries: total, seconds: +seconds.toFixed(2), perSecond: Math.round(total / seconds) };
}

export async function benchWebhooks(ctx: WebhookBenchContext): Promise<Record<string, unknown>> {
  const receiver = await startReceiver();
  const db = new Client({ connectionString: ctx.databaseUrl });
  await db.connect();
  const replicas: ChildProcess[] = [];
  try {
    const org = ctx.seed.organisationSlug;
    const hooks = `/api/v1/orgs/${org}/webhooks`;
    // PATCH with and without an active subscription, alternated so drift affects both alike.
    const without: number[] = [];
    const withSub: number[] = [];
    let subscription = '';
    for (let round = 0; round < 2; round++) {
      if (subscription) await api(ctx, 'DELETE', `${hooks}/${subscription}`);
      without.push(await patchRps(ctx, `nosub${round}`));
      subscription = (await api(ctx, 'POST', hooks, { url: `http://127.0.0.1:${receiver.port}/patch`, eventTypes: ['*'] })).identity;
      withSub.push(await patchRps(ctx, `sub${round}`));
      process.stdout.write(`  webhooks PATCH round ${round + 1}: ${without[round]} req/s without, ${withSub[round]} with a subscription\n`);
    }
    await api(ctx, 'DELETE', `${hooks}/${subscription}`); // its deliveries go with it
    const patch = { withoutRps: Math.max(...without), withSubscriptionRps: Math.max(...withSub) };
    const patchRatio = +(patch.withSubscriptionRps / patch.withoutRps).toFixed(3);

    const ids: string[] = [];
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      const created = await api(ctx, 'POST', hooks, { url: `http://127.0.0.1:${receiver.port}/s${i}`, eventTypes: ['CLUSTER_UPDATED'] });
      const { rows } = await db.query(`SELECT id, organisation_id FROM webhook_subscriptions WHERE identity = $1`, [created.identity]);
      ids.push(rows[0].id);
    }
    const { rows: orgRows } = await db.query(`SELECT id FROM organisations WHERE slug = $1`, [org]);
    replicas.push(await spawnReplica(ctx));
    const one = await throughput(db, orgRows[0].id, ids);
    process.stdout.write(`  webhooks outbox, 1 replica: ${one.perSecond} deliveries/s (${one.deliveries} in ${one.seconds} s)\n`);
    replicas.push(await spawnReplica(ctx));
    const two = await throughput(db, orgRows[0].id, ids);
    process.stdout.write(`  webhooks outbox, 2 replicas: ${two.perSecond} deliveries/s (${two.deliveries} in ${two.seconds} s)\n`);
    for (const id of ids) await db.query(`DELETE FROM webhook_subscriptions WHERE id = $1`, [id]);
    return {
      patch: { ...patch, ratio: patchRatio, target: '>= 0.9' },
      outbox: { subscriptions: SUBSCRIPTIONS, oneReplica: one, twoReplicas: two, scaling: +(two.perSecond / one.perSecond).toFixed(2) },
      receivedByReceiver: receiver.count(),
    };
  } finally {
    for (const r of replicas) r.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1000));
    await db.end();
    receiver.server.close();
  }
}
