import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import { freePort } from '../../src/common/free-port';
import { ADMIN_TOKEN, createTestDatabase, TEST_ENCRYPTION_KEY } from '../support/test-app';

const GRACE_MS = 20_000;

interface Service {
  child: ChildProcess;
  port: number;
  output: () => string;
  exited: Promise<{ code: number | null; at: number }>;
}

/** `npm start`'s entry point in its own process group, as a terminal runs a foreground job. */
async function startService(env: Record<string, string>): Promise<Service> {
  const port = await freePort();
  let out = '';
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    SHUTDOWN_GRACE_MS: String(GRACE_MS),
    // The lock wait below counts against the request's database budget; far more than the test needs.
    DATABASE_TIMEOUT_MS: '60000',
    ...env,
  };
  for (const key of Object.keys(childEnv)) if (childEnv[key] === '') delete childEnv[key];
  const child = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts'], {
    cwd: path.resolve(__dirname, '../..'),
    env: childEnv,
    detached: true,
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<{ code: number | null; at: number }>((resolve) => child.on('exit', (code) => resolve({ code, at: Date.now() })));
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (out.includes('Swagger UI:')) {
        clearInterval(timer);
        resolve();
      }
    }, 100);
    void exited.then(() => {
      clearInterval(timer);
      reject(new Error(`service exited early:\n${out}`));
    });
  });
  return { child, port, output: () => out, exited };
}

async function until(check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return check();
}

function get(port: string | number, p: string, headers: Record<string, string>, agent: http.Agent): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, headers, agent }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * One shutdown: a request waits on a row lock held by another session when the signal comes; the lock is
 * released a moment later; the request must answer 200, the process must exit 0 before the grace period ends
 * although a keep-alive client holds an idle connection, and the database must have served until the end.
 */
async function shutdownWithRequestInFlight(
  service: Service,
  opts: { signal: 'SIGINT' | 'SIGTERM'; token: string; databaseUrl: string; postmaster?: number },
): Promise<void> {
  const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const slowAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    // The keep-alive client's connection stays open and idle.
    expect((await get(service.port, '/health', {}, keepAlive)).status).toBe(200);

    const locker = new Client({ connectionString: opts.databaseUrl });
    locker.on('error', () => undefined);
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE personal_access_tokens IN ACCESS EXCLUSIVE MODE');
    // Authenticating reads personal_access_tokens: the request waits for the lock.
    const slow = get(service.port, '/sts/v1/personal-access-tokens', { Authorization: `Token ${opts.token}` }, slowAgent);
    const waiting = await until(async () => {
      const { rows } = await locker.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'cluster-management-service' AND wait_event_type = 'Lock'`,
      );
      return rows[0].n > 0;
    }, 30_000);
    expect(waiting).toBe(true);

    const signalledAt = Date.now();
    // Ctrl-C signals the terminal's whole foreground process group; an orchestrator signals the process.
    if (opts.signal === 'SIGINT') process.kill(-service.child.pid!, 'SIGINT');
    else service.child.kill('SIGTERM');
    expect(await until(() => service.output().includes(`${opts.signal} received`), 30_000)).toBe(true);
    // A moment for anything that would stop the database at once to do so.
    await new Promise((r) => setTimeout(r, 1000));
    if (opts.postmaster) expect(alive(opts.postmaster)).toBe(true);
    // The locking session is still served: the database was not stopped under the in-flight request.
    await expect(locker.query('COMMIT')).resolves.toBeDefined();
    await locker.end();

    const res = await slow;
    expect(res.status).toBe(200);
    const { code, at } = await service.exited;
    expect({ code, output: code === 0 ? '' : service.output() }).toEqual({ code: 0, output: '' });
    expect(at - signalledAt).toBeLessThan(GRACE_MS);
    if (opts.postmaster) expect(alive(opts.postmaster)).toBe(false);
  } finally {
    keepAlive.destroy();
    slowAgent.destroy();
    if (service.child.exitCode === null) service.child.kill('SIGKILL');
  }
}

describe('shutdown finishes in-flight work', () => {
  jest.setTimeout(240_000);

  describe('with the embedded PostgreSQL', () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cms-shutdown-'));
    afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

    const embeddedUrl = () => {
      const [pid, , , port] = fs.readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n');
      const password = fs.readFileSync(path.join(dataDir, 'pg-password'), 'utf8').trim();
      return { pid: Number(pid), url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/cluster_management` };
    };

    it.each(['SIGINT', 'SIGTERM'] as const)('%s: the request answers 200, PostgreSQL stops after it, the process exits 0', async (signal) => {
      const service = await startService({ DATA_DIR: dataDir, DATABASE_URL: '', CREDENTIALS_ENCRYPTION_KEY: '' });
      const token = fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim();
      const { pid, url } = embeddedUrl();
      await shutdownWithRequestInFlight(service, { signal, token, databaseUrl: url, postmaster: pid });
      // Stopped cleanly (a fast shutdown removes its pid file), so the next start needs no recovery.
      expect(fs.existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
    });
  });

  describe('with DATABASE_URL', () => {
    it.each(['SIGINT', 'SIGTERM'] as const)('%s: the request answers 200 and the process exits 0', async (signal) => {
      const url = await createTestDatabase();
      const service = await startService({
        DATABASE_URL: url,
        CREDENTIALS_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
        BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
        DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'cms-shutdown-ext-')),
      });
      await shutdownWithRequestInFlight(service, { signal, token: ADMIN_TOKEN, databaseUrl: url });
    });
  });
});
