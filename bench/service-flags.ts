import * as fs from 'fs';
import * as path from 'path';

/**
 * The Node.js flags `npm start` runs the service with (package.json `config.nodeFlags`), so benchmarks measure the
 * same process; BENCH_SERVICE_NODE_FLAGS overrides them to compare settings.
 */
export const SERVICE_NODE_FLAGS: string[] = (
  process.env.BENCH_SERVICE_NODE_FLAGS ??
  (JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', 'package.json'), 'utf8')) as { config?: { nodeFlags?: string } }).config?.nodeFlags ?? ''
)
  .split(/\s+/)
  .filter(Boolean);

/** The administrator token the request benchmarks' service is started with (BOOTSTRAP_ADMIN_TOKEN). */
export const BENCH_TOKEN = 'cms_bench_admin_token_0123456789abcdef';

/**
 * The environment of the service process the request benchmarks measure (`npm run bench`, `npm run bench:allocation`):
 * background jobs and rate limiting off, warnings only, a pool of 10, production mode.
 */
export function requestBenchServiceEnv(databaseUrl: string, port: number): NodeJS.ProcessEnv {
  return {
    DATABASE_URL: databaseUrl,
    // A fresh database each run: the service applies the migrations (no migration Job here).
    MIGRATE_AT_START: 'true',
    PORT: String(port),
    HOST: '127.0.0.1',
    BOOTSTRAP_ADMIN_TOKEN: BENCH_TOKEN,
    CREDENTIALS_ENCRYPTION_KEY: '63560448b7e7b6fde55bc18b9b34f35ab9d7d9f23000ab0fc075a0bc558159d3',
    BACKGROUND_JOBS_ENABLED: 'false',
    RATE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: 'warn',
    DATABASE_POOL_SIZE: '10',
    NODE_ENV: 'production',
    OUTBOUND_ALLOWLIST: '127.0.0.1',
  };
}
