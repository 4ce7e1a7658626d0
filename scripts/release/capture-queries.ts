/**
 * `npm run release:capture-queries [-- --release YYYY-MM-DD]`: captures the SQL of this build into
 * test/operations/fixtures/release-queries/<release>.json, the corpus the next release's schema must still run
 * (docs/operations.md#expand-and-contract; test/operations/previous-release-queries.e2e-spec.ts replays it).
 *
 * It migrates a fresh database (an embedded PostgreSQL in a temporary directory, or a new database on the server that
 * DATABASE_URL names, dropped at the end), starts the service in this process on it with the demo data, and records
 * every statement any pg client sends (QueryRecorder) while it drives the service: the start-up (schema check,
 * bootstrap administrator, catalog, demo data), every GET operation of the OpenAPI document with the demo's
 * identities, every POST, PUT and PATCH with a body sampled from its schema, the DELETEs last, a few flows the
 * document's samples do not reach (an idempotent retry, the alert webhook with its token, the metrics scrape with
 * the fleet gauges), and one pass of each background loop. The statements are de-duplicated by their text; each
 * keeps the parameters it was first sent with and what issued it. Before writing, the corpus is replayed against the
 * database it was captured on: a statement that fails there means the replay is not faithful, and nothing is written.
 *
 * release: the newest dated release of CHANGELOG.md unless `--release` names one. Run it when a release is cut,
 * after its CHANGELOG heading is written, and commit the file.
 */
import 'reflect-metadata';
import { execSync } from 'child_process';
import { randomUUID } from 'crypto';
import * as fs from 'fs';
import type { OutgoingHttpHeaders } from 'http';
import * as os from 'os';
import * as path from 'path';
import { sample } from 'openapi-sampler';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { createApp, RunningApp } from '../../src/app.factory';
import { shiftTimeExamplesNow } from '../../src/common/openapi-examples';
import { loadConfig } from '../../src/config/app-config';
import { migrateDatabase, migrationDataSourceOptions } from '../../src/database/data-source-options';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres';
import { DEMO_SLUGS } from '../../src/demo/demo-identities';
import { BudgetsService } from '../../src/metering/budgets.service';
import { StatementCloser } from '../../src/metering/statement-closer.service';
import { DashboardHealthChecker } from '../../src/observability/dashboard-health-checker';
import { ReconcilerService } from '../../src/provisioning/reconciler.service';
import { OpenApiParameter, prefilledUrl } from '../../test/support/openapi-prefill';
import { RetentionService } from '../../src/retention/retention.service';
import { UpgradeSchedulerService } from '../../src/scheduler/upgrade-scheduler.service';
import { WebhookDeliveryWorker } from '../../src/webhooks/webhook-delivery.worker';
import { CORPUS_DIR, latestRelease, QueryCorpus, QueryRecorder, replayCorpus } from './query-corpus';

const ROOT = path.resolve(__dirname, '../..');
// Throwaway values for a database that is dropped at the end (they appear in the corpus's parameters).
const ADMIN_TOKEN = 'cms_capture_admin_token_5f0c1e7a9b2d4f60';
const METRICS_TOKEN = 'cms_capture_metrics_token_8d3a6b1c';
const ENCRYPTION_KEY = '3b9f0a7c5e1d2468ace0f13579bdf02468ace13579bdf0246acf13579bdf0a2e';

type Parameter = OpenApiParameter;
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: object; example?: unknown; examples?: Record<string, { value?: unknown }> }> };
}
type Document = { paths: Record<string, Record<string, Operation>> };

const VERBOSE = process.argv.includes('--verbose');

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function commitOf(): string {
  try {
    const head = execSync('git rev-parse HEAD', { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execSync('git status --porcelain -- src', { cwd: ROOT, encoding: 'utf8' }).trim();
    return dirty ? `${head}+changes` : head;
  } catch {
    return 'unknown';
  }
}

/** The request body Swagger UI would offer: the first named example, else the example, else one sampled from the schema. */
function sampleBody(op: Operation, doc: Document): unknown {
  const media = op.requestBody?.content?.['application/json'];
  if (!media) return undefined;
  const named = media.examples && Object.values(media.examples)[0]?.value;
  if (named !== undefined) return named;
  if (media.example !== undefined) return media.example;
  return media.schema ? sample(media.schema as never, { skipReadOnly: true, quiet: true }, doc) : undefined;
}

interface Server {
  /** Creates a database and migrates it (on connections the capture does not see: it is not on yet). */
  migratedDatabase(name: string): Promise<string>;
  /** Drops the databases made and stops the embedded server. */
  stop(): Promise<void>;
}

/** The server DATABASE_URL names, or an embedded PostgreSQL in a temporary directory. */
async function databaseServer(): Promise<Server> {
  let serverUrl = process.env.DATABASE_URL;
  let stopEmbedded = async () => undefined as void;
  if (!serverUrl) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cms-capture-'));
    const pg = await startEmbeddedPostgres(dir, undefined, { fsync: false });
    serverUrl = pg.url;
    stopEmbedded = async () => {
      await pg.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    };
  }
  const made: string[] = [];
  const admin = async (sql: string) => {
    const c = new Client({ connectionString: serverUrl });
    await c.connect();
    await c.query(sql).finally(() => c.end());
  };
  return {
    migratedDatabase: async (name) => {
      const db = `cms_capture_${process.pid}_${name}`;
      await admin(`CREATE DATABASE ${db}`);
      made.push(db);
      const url = new URL(serverUrl);
      url.pathname = `/${db}`;
      await migrateDatabase(url.toString());
      return url.toString();
    },
    stop: async () => {
      for (const db of made) await admin(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
      await stopEmbedded();
    },
  };
}

function serviceConfig(databaseUrl: string) {
  return loadConfig({
    DATABASE_URL: databaseUrl,
    MIGRATE_AT_START: 'false',
    DEMO_DATA: 'true',
    BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
    METRICS_TOKEN,
    FLEET_METRICS_ENABLED: 'true',
    CREDENTIALS_ENCRYPTION_KEY: ENCRYPTION_KEY,
    // The loops are driven one pass at a time (drive()), so every statement is attributed to what issued it.
    BACKGROUND_JOBS_ENABLED: 'false',
    PROVISIONING_STEP_SECONDS: '0',
    RATE_LIMIT_PER_MINUTE: '0',
    AUTH_FAILURE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: 'silent',
    DATABASE_POOL_SIZE: '4',
  });
}

class Driver {
  requests = 0;
  passes = 0;
  private readonly statuses = new Map<string, number>();

  constructor(
    private readonly running: RunningApp,
    private readonly recorder: QueryRecorder,
  ) {}

  /** One request through Fastify's router (no socket), attributed to `label` (the operation's path template). */
  async send(method: string, url: string, label: string, options: { body?: unknown; headers?: OutgoingHttpHeaders; token?: string | null } = {}) {
    this.recorder.source = `${method.toUpperCase()} ${label}`;
    const token = options.token === undefined ? ADMIN_TOKEN : options.token;
    const res = await this.running.app
      .getHttpAdapter()
      .getInstance()
      .inject({
        method: method.toUpperCase() as 'GET',
        url,
        headers: {
          ...(token ? { authorization: `Token ${token}` } : {}),
          ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...options.headers,
        },
        payload: options.body === undefined ? undefined : JSON.stringify(options.body),
      });
    this.requests++;
    const klass = `${Math.floor(res.statusCode / 100)}xx`;
    this.statuses.set(klass, (this.statuses.get(klass) ?? 0) + 1);
    // --verbose: the answers that were not 2xx (a write whose sampled body was refused captured less of its SQL).
    if (VERBOSE && res.statusCode >= 300) console.log(`${res.statusCode} ${method.toUpperCase()} ${url}: ${res.body.slice(0, 160)}`);
    return { status: res.statusCode, json: () => JSON.parse(res.body) as Record<string, unknown> };
  }

  async pass(name: string, run: () => Promise<unknown>): Promise<void> {
    this.recorder.source = `pass ${name}`;
    try {
      await run();
    } catch (e) {
      // A pass that fails still issued its reads; say so and go on.
      console.warn(`pass ${name}: ${(e as Error).message}`);
    }
    this.passes++;
  }

  summary(): string {
    return [...this.statuses].map(([k, v]) => `${v} ${k}`).join(', ');
  }
}

async function drive(running: RunningApp, recorder: QueryRecorder): Promise<Driver> {
  const d = new Driver(running, recorder);
  // The document's times made relative to now, as Swagger UI shows them (a silence that ends in the future).
  const doc = shiftTimeExamplesNow((await d.send('GET', '/v3/api-docs', '/v3/api-docs', { token: null })).json() as unknown as Document);
  const app = running.app;
  const settle = async () => {
    for (let i = 0; i < 20 && (await app.get(ReconcilerService).runOnce()) > 0; i++);
  };
  // The demo cluster provisioned first, so the reads of a running cluster (kubeconfig, OIDC) reach their SQL.
  await d.pass('reconciler', settle);
  const operations = Object.entries(doc.paths).flatMap(([template, ops]) => Object.entries(ops).map(([method, op]) => ({ template, method, op })));

  // Every read with the demo's identities, then every write with a sampled body, then the deletes (newest first, so a
  // resource goes before what it lives in), then the reads again on what the writes left.
  const reads = operations.filter((o) => o.method === 'get');
  for (const { template, op } of reads) await d.send('GET', prefilledUrl(template, op.parameters ?? []), template);
  // The same reads through the original clients' paths and plain representation (src/compat).
  await d.send('GET', `/compat/api/v1/orgs/${DEMO_SLUGS.organisation}/clusters/${DEMO_SLUGS.environment}/${DEMO_SLUGS.cluster}`, '/compat/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}');
  for (const { template, method, op } of operations.filter((o) => ['post', 'put', 'patch'].includes(o.method))) {
    await d.send(method, prefilledUrl(template, op.parameters ?? []), template, { body: sampleBody(op, doc) });
  }

  // What the samples do not reach: an idempotent write and its replay, the alert webhook with its token, a scrape.
  const environments = `/api/v1/orgs/${DEMO_SLUGS.organisation}/environments`;
  const key = randomUUID();
  for (let i = 0; i < 2; i++) {
    await d.send('POST', environments, '/api/v1/orgs/{organisationSlug}/environments (Idempotency-Key)', {
      body: { name: 'Staging', type: 'staging' },
      headers: { 'idempotency-key': key },
    });
  }
  const issued = await d.send('POST', `/api/v1/orgs/${DEMO_SLUGS.organisation}/monitoring/${DEMO_SLUGS.tenant}/alert-webhook-token`, '/api/v1/orgs/{organisationSlug}/monitoring/{tenantSlug}/alert-webhook-token');
  if (issued.status === 200) {
    const alert = { status: 'firing', labels: { alertname: 'NodeDown', severity: 'critical' }, annotations: { summary: 'a node is down' }, startsAt: new Date().toISOString() };
    for (const status of ['firing', 'resolved']) {
      await d.send('POST', `/api/v1/observability/${DEMO_SLUGS.tenant}/alerts/webhook`, '/api/v1/observability/{tenantSlug}/alerts/webhook', {
        token: null,
        headers: { authorization: `Bearer ${String(issued.json().token)}` },
        body: { version: '4', status, receiver: 'cms', alerts: [{ ...alert, status }] },
      });
    }
  }
  await d.send('GET', '/metrics', '/metrics', { token: null, headers: { authorization: `Bearer ${METRICS_TOKEN}` } });

  // One pass of each background loop (they are off in this process, so nothing else runs them meanwhile).
  await d.pass('reconciler', settle);
  await d.pass('scheduler', () => app.get(UpgradeSchedulerService).runOnce());
  await d.pass('webhooks', () => app.get(WebhookDeliveryWorker).drain());
  await d.pass('statements', () => app.get(StatementCloser).runOnce());
  await d.pass('budgets', () => app.get(BudgetsService).evaluateNow());
  await d.pass('dashboard-health', () => app.get(DashboardHealthChecker).runOnce());
  await d.pass('retention', () => app.get(RetentionService).runOnce());

  for (const { template, method, op } of operations.filter((o) => o.method === 'delete').reverse()) {
    await d.send(method, prefilledUrl(template, op.parameters ?? []), template);
  }
  for (const { template, op } of reads) await d.send('GET', prefilledUrl(template, op.parameters ?? []), template);
  await d.pass('reconciler', settle);
  return d;
}

async function newestMigration(url: string): Promise<string> {
  const ds = await new DataSource(migrationDataSourceOptions(url)).initialize();
  try {
    // TypeORM orders them by the timestamp their name ends with.
    return ds.migrations.map((m) => m.name ?? m.constructor.name).at(-1) ?? 'none';
  } finally {
    await ds.destroy();
  }
}

async function main(): Promise<void> {
  const release = arg('release') ?? latestRelease();
  if (!/^\d{4}-\d{2}-\d{2}$/.test(release)) throw new Error(`--release must be a day (YYYY-MM-DD), not '${release}'`);
  const outDir = path.resolve(arg('out') ?? CORPUS_DIR);
  const server = await databaseServer();
  const recorder = new QueryRecorder();
  let running: RunningApp | undefined;
  try {
    // The migrations are not the release's SQL: applied before the capture starts.
    const url = await server.migratedDatabase('capture');
    const schema = await newestMigration(url);
    recorder.start();
    running = await createApp(serviceConfig(url), { quiet: true });
    const driven = await drive(running, recorder);
    recorder.source = 'shutdown';
    await running.close();
    running = undefined;
    recorder.stop();

    const corpus: QueryCorpus = {
      release,
      capturedAt: new Date().toISOString(),
      commit: commitOf(),
      schema,
      drove: { requests: driven.requests, passes: driven.passes },
      queries: recorder.queries,
    };
    // The replay must be faithful: where the test will replay it (a migrated database with the demo data, written by
    // this same build here), every statement runs.
    const checkUrl = await server.migratedDatabase('check');
    await (await createApp(serviceConfig(checkUrl), { quiet: true })).close();
    const client = new Client({ connectionString: checkUrl });
    await client.connect();
    const check = await replayCorpus(client, corpus.queries).finally(() => client.end());
    console.log(
      `${driven.requests} requests (${driven.summary()}), ${driven.passes} background passes: ${corpus.queries.length} distinct statements; ` +
        `replayed on a fresh database with the demo data: ${check.ran - check.failures.length} of ${check.ran} ran, tolerated ${JSON.stringify(check.tolerated)}`,
    );
    if (check.failures.length) {
      for (const f of check.failures) console.error(`${f.code} ${f.message}\n  ${f.sql.slice(0, 400)}\n  from ${f.sources.join('; ')}`);
      throw new Error(`${check.failures.length} captured statement(s) fail on the schema they were captured on: the corpus was not written`);
    }
    fs.mkdirSync(outDir, { recursive: true });
    const file = path.join(outDir, `${release}.json`);
    fs.writeFileSync(file, JSON.stringify(corpus, null, 1) + '\n');
    console.log(`Wrote ${path.relative(process.cwd(), file)} (schema ${schema}).`);
  } finally {
    recorder.stop();
    if (running) await running.close().catch(() => undefined);
    await server.stop();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  },
);
