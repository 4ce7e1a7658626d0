import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import { createApp, RunningApp } from '../src/app.factory';
import { loadConfig } from '../src/config/app-config';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres';
import { BENCH_TOKEN } from './service-flags';

export interface InProcessService {
  /** The database the service runs on (`bench_<name>` on a fresh embedded PostgreSQL). */
  url: string;
  running: RunningApp;
  /** Closes the service, stops PostgreSQL and removes its data directory. */
  stop(): Promise<void>;
}

/**
 * The service booted inside the benchmark's process (the benchmarks that call its services directly: policies,
 * scheduler, metering) on a fresh embedded PostgreSQL: background jobs and rate limiting off, silent, a pool of 5,
 * migrations applied at start. `env` adds or overrides settings.
 */
export async function startInProcessService(name: string, env: Record<string, string> = {}): Promise<InProcessService> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `cms-bench-${name}-`));
  const pg = await startEmbeddedPostgres(dir);
  const admin = new Client({ connectionString: pg.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE bench_${name}`);
  await admin.end();
  const u = new URL(pg.url);
  u.pathname = `/bench_${name}`;
  const url = u.toString();
  const running = await createApp(
    loadConfig({
      DATABASE_URL: url,
      MIGRATE_AT_START: 'true',
      BOOTSTRAP_ADMIN_TOKEN: BENCH_TOKEN,
      CREDENTIALS_ENCRYPTION_KEY: '63560448b7e7b6fde55bc18b9b34f35ab9d7d9f23000ab0fc075a0bc558159d3',
      BACKGROUND_JOBS_ENABLED: 'false',
      RATE_LIMIT_PER_MINUTE: '0',
      LOG_LEVEL: 'silent',
      DATABASE_POOL_SIZE: '5',
      ...env,
    }),
    { quiet: true },
  );
  return {
    url,
    running,
    stop: async () => {
      await running.close();
      await pg.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
