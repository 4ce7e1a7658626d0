import { spawn, spawnSync } from 'child_process';
import { randomBytes } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { createInterface } from 'readline';
import { freePort } from '../../src/common/free-port';
import { SERVICE_NODE_FLAGS } from '../../bench/service-flags';
import { waitFor } from './ha-stack';
import { Scratch, TrackedProcess } from './processes';

/**
 * The service under test, as deployed next to a highly available PostgreSQL: an API process
 * (BACKGROUND_JOBS_ENABLED=false) and a worker (the loops on), the same build, both with DATABASE_URL pointing at
 * HAProxy. Their stdout (JSON lines) is kept line by line with the time each line arrived, for the log counts.
 */

export const ROOT = path.resolve(__dirname, '../..');

export interface LogLine {
  /** When the test received it (ms since the epoch). */
  at: number;
  /** pino's numeric level; null for a line that is not JSON (or stderr). */
  level: number | null;
  msg: string;
  /** The logged error's class (pino's `err.type`) and code, when the line carries one. */
  errType?: string;
  stream: 'stdout' | 'stderr';
}

export interface ServiceProcess {
  role: 'api' | 'worker';
  port: number;
  base: string;
  pid: number;
  proc: TrackedProcess;
  lines: LogLine[];
  exited: () => boolean;
}

export interface ServiceSettings {
  databaseUrl: string;
  adminToken: string;
  encryptionKey: string;
  logLevel: string;
}

export function newServiceSettings(databaseUrl: string, logLevel: string): ServiceSettings {
  let key = randomBytes(32);
  // A key of one repeated byte is refused as weak: draw again in the (impossible in practice) case.
  while (key.every((b) => b === key[0])) key = randomBytes(32);
  return { databaseUrl, adminToken: `cms_failover_${randomBytes(16).toString('hex')}`, encryptionKey: key.toString('hex'), logLevel };
}

/** `npm run build` (incremental: fast when dist/ is current). */
export function build(): void {
  const r = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`npm run build failed (${r.status ?? r.signal})`);
}

function serviceEnv(settings: ServiceSettings): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: settings.databaseUrl,
    CREDENTIALS_ENCRYPTION_KEY: settings.encryptionKey,
    BOOTSTRAP_ADMIN_TOKEN: settings.adminToken,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    LOG_LEVEL: settings.logLevel,
    // The load is one user at about 125 requests/s: the per-user budget would answer 429s.
    RATE_LIMIT_PER_MINUTE: '0',
    // A cluster created after a fault reaches `started` within seconds.
    PROVISIONING_STEP_SECONDS: '0.5',
    RECONCILE_INTERVAL_SECONDS: '1',
    DEMO_DATA: 'false',
  };
  for (const name of ['DATA_DIR', 'BOOTSTRAP_ADMIN_TOKEN_FILE', 'PGHOST', 'PGPORT', 'PGUSER', 'PGPASSWORD', 'PGDATABASE']) delete env[name];
  return env;
}

/** `node dist/scripts/migrate.js` against DATABASE_URL (through HAProxy). */
export function migrate(settings: ServiceSettings): void {
  const r = spawnSync(process.execPath, ['dist/scripts/migrate.js'], { cwd: ROOT, env: serviceEnv(settings), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`migrations failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
}

export async function startService(scratch: Scratch, role: 'api' | 'worker', settings: ServiceSettings): Promise<ServiceProcess> {
  const port = await freePort();
  const env = { ...serviceEnv(settings), PORT: String(port), BACKGROUND_JOBS_ENABLED: role === 'worker' ? 'true' : 'false' };
  // --title names the scratch directory in the process's command line, so only this process is ever signalled.
  const title = `--title=${scratch.dir}/${role}`;
  const child = spawn(process.execPath, [title, ...SERVICE_NODE_FLAGS, 'dist/src/main.js'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const proc = scratch.track(role, child, `${scratch.dir}/${role}`);
  const lines: LogLine[] = [];
  const raw = fs.createWriteStream(scratch.path(`${role}.log`));
  for (const stream of ['stdout', 'stderr'] as const) {
    createInterface({ input: child[stream]! }).on('line', (text) => {
      raw.write(`${text}\n`);
      lines.push(parseLine(text, stream));
    });
  }
  const service: ServiceProcess = {
    role,
    port,
    base: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    proc,
    lines,
    exited: () => child.exitCode !== null || child.signalCode !== null,
  };
  try {
    await waitFor(`the ${role} process to be ready`, 120_000, async () => {
      if (service.exited()) throw new Error('exited');
      return (await fetch(`${service.base}/health/ready`, { signal: AbortSignal.timeout(2000) })).ok;
    });
  } catch (e) {
    throw new Error(`${(e as Error).message}; its output:\n${lines.slice(-40).map((l) => l.msg).join('\n')}`);
  }
  if (service.exited()) throw new Error(`the ${role} process exited during start-up:\n${lines.slice(-40).map((l) => l.msg).join('\n')}`);
  return service;
}

export function parseLine(text: string, stream: 'stdout' | 'stderr', at = Date.now()): LogLine {
  if (stream === 'stdout' && text.startsWith('{')) {
    try {
      const j = JSON.parse(text) as { level?: unknown; msg?: unknown; err?: { type?: unknown; code?: unknown } };
      if (typeof j.level === 'number') {
        // The class and, for a database error, its SQLSTATE or errno code (57P01, ECONNRESET, ...).
        const errType = typeof j.err?.type === 'string' ? `${j.err.type}${typeof j.err.code === 'string' ? ` ${j.err.code}` : ''}` : undefined;
        return { at, level: j.level, msg: typeof j.msg === 'string' ? j.msg : '', ...(errType ? { errType } : {}), stream };
      }
    } catch {
      /* not JSON after all */
    }
  }
  return { at, level: null, msg: text, stream };
}

/** A small client of the service's API for the set-up and the post-fault checks (not the measured load). */
export class Api {
  constructor(
    readonly base: string,
    private readonly token: string,
  ) {}

  async call<T = Record<string, unknown>>(method: string, pathname: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.base}${pathname}`, {
      method,
      headers: { authorization: `Token ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${pathname}: ${res.status} ${text.slice(0, 500)}`);
    return (text ? JSON.parse(text) : {}) as T;
  }
}

export interface Fixture {
  org: string;
  env: string;
  /** The clusters the PATCH writers change (one each), by slug. */
  writerClusters: string[];
  createCluster: (name: string) => Promise<string>;
}

/** Through the API, as a first session would: an organisation, an environment, a cloud account and clusters. */
export async function createFixture(api: Api, writerClusterCount: number): Promise<Fixture> {
  const org = (
    await api.call<{ slug: { slugValue: string } }>('POST', '/api/v1/organisations', {
      organisationName: `Failover ${Date.now().toString(36)}`,
      organisationType: 'BUSINESS',
      contactEmail: { email: 'ops@failover.example' },
      acceptedAgreements: [{ agreementSlug: 'terms-of-service' }, { agreementSlug: 'data-processing-agreement' }],
    })
  ).slug.slugValue;
  const env = (await api.call<{ slug: { slugValue: string } }>('POST', `/api/v1/orgs/${org}/environments`, { name: 'failover', type: 'production' })).slug.slugValue;
  const profiles = await api.call<{ content: { identity: string; type: string }[] }>('GET', `/api/v1/orgs/${org}/cloud-profiles`);
  const profile = profiles.content.find((p) => p.type === 'platform_1')!.identity;
  const account = (await api.call<{ identity: string }>('POST', `/api/v1/orgs/${org}/cloud-accounts`, { cloudProfile: profile, displayName: 'Failover account' })).identity;
  await api.call('POST', `/api/v1/orgs/${org}/cloud-accounts/${account}/credentials/platform_1`, {
    displayName: 'deployer',
    credentials: { accessKeyId: 'AKIAFAILOVER', accessKeySecret: 'failover-secret' },
  });
  const regions = await api.call<{ content: { slug: string; available: boolean; restricted: boolean }[] }>('GET', `/api/v1/orgs/${org}/cloud-providers/platform_1/regions`);
  const region = regions.content.find((r) => r.available && !r.restricted)!.slug;
  const nodeTypes = await api.call<{ content: { type: string }[] }>('GET', '/api/v1/cloud-providers/platform_1/nodetypes?sort=cpu,asc');
  const nodeType = nodeTypes.content[0].type;
  const versions = await api.call<{ version: string; available: boolean }[]>('GET', '/api/v1/cluster-versions');
  const version = versions.filter((v) => v.available).pop()!.version;
  const createCluster = async (name: string) =>
    (
      await api.call<{ slug: { slugValue: string } }>('POST', `/api/v1/orgs/${org}/clusters/${env}`, {
        name,
        cloudAccountIdentity: account,
        region,
        version,
        nodePools: [{ name: 'default', nodeSize: nodeType, minSize: 1, maxSize: 2 }],
      })
    ).slug.slugValue;
  const writerClusters: string[] = [];
  for (let i = 1; i <= writerClusterCount; i++) writerClusters.push(await createCluster(`writer-${i}`));
  return { org, env, writerClusters, createCluster };
}
