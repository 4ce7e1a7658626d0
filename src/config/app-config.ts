import { plainToInstance, Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  validateSync,
  ValidateBy,
} from 'class-validator';
import { parseAddressList } from './address-list';
import { EXECUTOR_THREAD_PRIORITIES, type ExecutorThreadPriority } from './executor-thread-priority';
import { Setting } from './setting';
import { weakKeyReason, weakTokenReason } from './weak-secrets';

const toBool = ({ value }: { value: unknown }) => {
  if (value === undefined || value === '') return undefined;
  if (typeof value === 'boolean') return value;
  const v = String(value).toLowerCase();
  if (['true', '1', 'yes'].includes(v)) return true;
  if (['false', '0', 'no'].includes(v)) return false;
  return value; // left as a string so @IsBoolean reports it
};
const toInt = ({ value }: { value: unknown }) => {
  if (value === undefined || value === '') return undefined;
  return /^-?\d+$/.test(String(value)) ? Number(value) : value;
};
const toNumber = ({ value }: { value: unknown }) => {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : value;
};
const emptyToUndefined = ({ value }: { value: unknown }) => (value === '' ? undefined : value);

/**
 * Every setting of the service, read from environment variables only, each with its meaning (@Setting) and its
 * bounds (class-validator); docs/configuration.md is generated from them (npm run docs:config).
 */
export class AppConfig {
  @Setting({ meaning: 'HTTP port' })
  @Transform(toInt) @IsInt() @Min(0) @Max(65535)
  PORT = 8080;

  @Setting({ meaning: 'Listen address' })
  @IsString()
  HOST = '0.0.0.0';

  @Setting({ meaning: 'Embedded PostgreSQL data, `admin-token`, generated `credentials.key`' })
  @IsString()
  DATA_DIR = './.data';

  @Setting({ meaning: 'External PostgreSQL (`postgres://user:pass@host:5432/db`); unset = embedded' })
  @Transform(emptyToUndefined) @IsOptional()
  @Matches(/^postgres(ql)?:\/\/.+/, { message: 'DATABASE_URL must be a postgres:// or postgresql:// URL' })
  DATABASE_URL?: string;

  @Setting({
    meaning:
      'Apply pending migrations when the process starts (under the migration lock, before serving). Otherwise a ' +
      'process whose database schema lacks migrations of its release waits for them (applied by the migration Job: ' +
      '`node dist/scripts/migrate.js`), answering `/health` 200 and `/health/ready` 503 with the reason, and migrates nothing',
    defaultText: '`true` embedded, `false` with `DATABASE_URL`',
  })
  @Transform(toBool) @IsOptional() @IsBoolean()
  MIGRATE_AT_START?: boolean;

  get migrateAtStart(): boolean {
    return this.MIGRATE_AT_START ?? this.embeddedDatabase;
  }

  @Setting({ meaning: 'Connections of the request pool per instance (requests only)' })
  @Transform(toInt) @IsInt() @Min(1) @Max(200)
  DATABASE_POOL_SIZE = 10;

  @Setting({
    meaning:
      'Connections of the background pool per instance: the background loops run on it, so requests never ' +
      'wait for a connection behind them; opened on use only (an instance with ' +
      '`BACKGROUND_JOBS_ENABLED=false` holds none). A worker process running the reconciler at ' +
      '`RECONCILE_CONCURRENCY=16` against a slow driver wants about 8',
  })
  @Transform(toInt) @IsInt() @Min(1) @Max(200)
  BACKGROUND_DATABASE_POOL_SIZE = 4;

  @Setting({
    meaning:
      'Bound on the whole time one request waits on the database: waiting for a connection and all its ' +
      'statements together (a budget per request). A hung or unreachable database answers 503 within this ' +
      'time. Background passes bound each connection wait and each statement by it',
  })
  @Transform(toInt) @IsInt() @Min(100) @Max(600000)
  DATABASE_TIMEOUT_MS = 5000;

  @Setting({
    meaning:
      'How long in all a read (a GET, or a read before the handler) waits, in growing steps (100 ms, 250 ms, 500 ms, ' +
      '1 s, ...), for a database that refuses connections before it gives up with 503 and `Retry-After`: the ' +
      'seconds of a failover in which the HA proxy still routes new connections to the old primary. Never beyond ' +
      'the request\'s `DATABASE_TIMEOUT_MS`. `0`: the read is retried once at once. Writes are never retried',
  })
  @Transform(toInt) @IsInt() @Min(0) @Max(600000)
  READ_RETRY_WAIT_MS = 2500;

  @Setting({
    meaning:
      'OIDC issuer; enables `Authorization: Bearer <jwt>` (JWKS from its discovery document). Also the ' +
      '`issuerUrl` of clusters\' OIDC configuration and kubeconfigs (`https://login.example.com` when ' +
      'unset)',
  })
  @Transform(emptyToUndefined) @IsOptional() @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  OIDC_ISSUER_URL?: string;

  @Setting({
    meaning:
      'Required `aud` of OIDC tokens. Required when `OIDC_ISSUER_URL` is set: an issuer without an audience ' +
      'stops start-up (exit code 2), since any token the issuer made for another application would pass',
  })
  @Transform(emptyToUndefined) @IsOptional() @IsString()
  OIDC_AUDIENCE?: string;

  @Setting({ meaning: 'Overrides the JWKS address from discovery' })
  @Transform(emptyToUndefined) @IsOptional() @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  OIDC_JWKS_URL?: string;

  @Setting({
    meaning:
      'Longest lifetime of an OIDC token accepted: `exp - iat` (or `exp - now` without `iat`); a token valid for longer ' +
      'is refused (401), so a leaked long-lived token is not a credential for years',
  })
  @Transform(toInt) @IsInt() @Min(60) @Max(31_536_000)
  OIDC_MAX_TOKEN_LIFETIME_SECONDS = 86400;

  @Setting({
    meaning:
      '32 bytes (64 hex or base64) for AES-256-GCM of cloud credentials and integration tokens. Required ' +
      'with `DATABASE_URL`; with the embedded database `DATA_DIR/credentials.key` is generated',
    defaultText: 'generated',
  })
  @Transform(emptyToUndefined) @IsOptional()
  @Matches(/^([0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=?)$/, {
    message: 'CREDENTIALS_ENCRYPTION_KEY must be 32 bytes written as 64 hex characters or base64',
  })
  CREDENTIALS_ENCRYPTION_KEY?: string;

  @Setting({
    meaning:
      'Keys sealed values may still be sealed with (comma-separated, same format as `CREDENTIALS_ENCRYPTION_KEY`), read ' +
      'but never written: set the old key here and the new one in `CREDENTIALS_ENCRYPTION_KEY` while rotating ' +
      '([operations](operations.md#rotating-the-credentials-encryption-key))',
  })
  @Transform(emptyToUndefined) @IsOptional()
  @Matches(/^([0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=?)(,([0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=?))*$/, {
    message: 'CREDENTIALS_ENCRYPTION_KEY_PREVIOUS must be keys of 32 bytes (64 hex characters or base64), separated by commas',
  })
  CREDENTIALS_ENCRYPTION_KEY_PREVIOUS?: string;

  get previousEncryptionKeys(): string[] {
    return (this.CREDENTIALS_ENCRYPTION_KEY_PREVIOUS ?? '').split(',').filter(Boolean);
  }

  @Setting({
    meaning:
      'The first administrator\'s PAT. With the embedded database a generated one is printed once and ' +
      'written to `DATA_DIR/admin-token`; with `DATABASE_URL` the first start needs this (e.g. from a ' +
      'Secret) or `BOOTSTRAP_ADMIN_TOKEN_FILE`, and the token is never printed',
    defaultText: 'random',
  })
  @Transform(emptyToUndefined) @IsOptional() @IsString() @Matches(/^\S{20,200}$/, {
    message: 'BOOTSTRAP_ADMIN_TOKEN must be 20 to 200 characters without spaces',
  })
  BOOTSTRAP_ADMIN_TOKEN?: string;

  @Setting({
    meaning:
      'With `DATABASE_URL`: where the generated first token is written (mode 0600) instead of ' +
      '`BOOTSTRAP_ADMIN_TOKEN`',
  })
  @Transform(emptyToUndefined) @IsOptional() @IsString()
  BOOTSTRAP_ADMIN_TOKEN_FILE?: string;

  @Setting({ meaning: 'The first administrator\'s username' })
  @IsString()
  BOOTSTRAP_ADMIN_USERNAME = 'admin';

  @Setting({ meaning: 'The first administrator\'s email' })
  @IsString()
  BOOTSTRAP_ADMIN_EMAIL = 'admin@localhost';

  @Setting({ meaning: 'Lifetime of a PAT without `expireAt` (a request may ask for up to one year)' })
  @Transform(toInt) @IsInt() @Min(1) @Max(365)
  PAT_DEFAULT_TTL_DAYS = 90;

  @Setting({
    meaning:
      'Which proxies may name the client address in `X-Forwarded-For` (IP restrictions, rate limits): ' +
      '`false`, a hop count (`1` = the one proxy in front) or a comma-separated list of the proxies\' ' +
      'IPs/CIDRs. `true` is refused: it would let any caller choose its address',
  })
  @Transform(({ value }) => (value === undefined || value === '' ? 'false' : String(value).trim()))
  @ValidateBy({
    name: 'trustProxy',
    validator: {
      validate: (value: unknown) => trustProxySetting(String(value)) !== undefined,
      defaultMessage: () =>
        'TRUST_PROXY must be false, a hop count (1-10) or a comma-separated list of trusted proxy IPs/CIDRs; ' +
        '"true" is refused because it trusts every X-Forwarded-For hop',
    },
  })
  TRUST_PROXY = 'false';

  /** The TRUST_PROXY setting in Fastify's terms. */
  get trustProxy(): false | number | string[] {
    return trustProxySetting(this.TRUST_PROXY) ?? false;
  }

  @Setting({ meaning: 'Time the simulated driver takes per provisioning step' })
  @Transform(toNumber) @Min(0) @Max(3600)
  PROVISIONING_STEP_SECONDS = 5;

  @Setting({
    meaning:
      'Cluster reconciler loop period (a pass also runs at least every `OBSERVE_EVERY_SECONDS` / 4, for ' +
      'observations)',
  })
  @Transform(toNumber) @Min(0) @Max(3600)
  RECONCILE_INTERVAL_SECONDS = 2;

  @Setting({
    meaning:
      'Clusters one replica\'s reconciler works on at once: steps per second = this / driver ' +
      'latency. Still one step per cluster at a time across replicas',
  })
  @Transform(toInt) @IsInt() @Min(1) @Max(256)
  RECONCILE_CONCURRENCY = 16;

  @Setting({
    meaning:
      'How long a claimed cluster stays reserved for the replica working on it; a crashed replica\'s ' +
      'clusters are taken over after this. A driver call is given up after half of it',
  })
  @Transform(toInt) @IsInt() @Min(2) @Max(3600)
  RECONCILE_LEASE_SECONDS = 60;

  @Setting({
    meaning:
      'A started or stopped cluster is observed through the driver (in batches of 500) when its last ' +
      'observation is this old',
  })
  @Transform(toInt) @IsInt() @Min(1) @Max(86400)
  OBSERVE_EVERY_SECONDS = 60;

  @Setting({
    meaning:
      'Time every call of the simulated driver takes (a batch observation is one call), to try concurrency',
  })
  @Transform(toInt) @IsInt() @Min(0) @Max(60000)
  SIMULATED_DRIVER_LATENCY_MS = 0;

  @Setting({ meaning: 'Upgrade scheduler loop period' })
  @Transform(toNumber) @Min(0) @Max(86400)
  SCHEDULER_INTERVAL_SECONDS = 30;

  @Setting({
    meaning:
      'Rows a scheduler rule handles per batch; each batch is one short transaction under the scheduler\'s ' +
      'advisory lock',
  })
  @Transform(toInt) @IsInt() @Min(1) @Max(10000)
  SCHEDULER_BATCH_SIZE = 200;

  @Setting({
    meaning:
      'A started (`UPDATED`) upgrade whose cluster has not reached the new version by its window\'s end ' +
      'plus this grace becomes `FAILED` ("timed out") and the cluster goes back to the version it runs',
  })
  @Transform(toInt) @IsInt() @Min(0) @Max(7 * 24 * 60)
  UPGRADE_TIMEOUT_GRACE_MINUTES = 120;

  @Setting({ meaning: 'Lifetime of the bootstrap token in a bring-your-own-node pool\'s join config' })
  @Transform(toInt) @IsInt() @Min(1) @Max(7 * 24 * 60)
  NODE_JOIN_TOKEN_TTL_MINUTES = 60;

  @Setting({
    meaning:
      'Node registrations per minute per join token (failed tokens count against the address like failed ' +
      'logins); `0` disables',
  })
  @Transform(toInt) @IsInt() @Min(0)
  NODE_REGISTRATION_LIMIT_PER_MINUTE = 60;

  @Setting({ meaning: 'Address customer machines reach this service at; the join command registers nodes there' })
  @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  PUBLIC_API_URL = 'http://localhost:8080';

  @Setting({
    meaning:
      'Provisioning driver behind the reconciler\'s port (`simulated` completes each step after ' +
      '`PROVISIONING_STEP_SECONDS`)',
  })
  @IsIn(['simulated'])
  CLUSTER_DRIVER = 'simulated';

  @Setting({
    meaning:
      'Runs the reconciler, scheduler, webhook delivery, integration checks and retention job in this ' +
      'instance; `false` for API processes when a separate worker process runs them ' +
      '([operations](operations.md#one-process-or-api-and-worker))',
  })
  @Transform(toBool) @IsBoolean()
  BACKGROUND_JOBS_ENABLED = true;

  @Setting({
    meaning:
      'Competes to export the fleet-wide gauges (`cms_clusters`, `cms_scheduled_upgrades`, outbox lag, oldest observation ' +
      'age): the one process holding a PostgreSQL advisory lock (on a connection of its own, taken at a scrape) exports ' +
      'them, the others omit them, so each figure is exported once per fleet ' +
      '([operations](operations.md#fleet-wide-gauges))',
    defaultText: '`BACKGROUND_JOBS_ENABLED`',
  })
  @Transform(toBool) @IsOptional() @IsBoolean()
  FLEET_METRICS_ENABLED?: boolean;

  get fleetMetricsEnabled(): boolean {
    return this.FLEET_METRICS_ENABLED ?? this.BACKGROUND_JOBS_ENABLED;
  }

  @Setting({ meaning: 'Base of tenants\' `monitoringPushUrl` / `loggingPushUrl`' })
  @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  OBSERVABILITY_PUSH_BASE_URL = 'https://observability.example.com';

  @Setting({ meaning: 'Lifts the outbound address rule (development and tests only)' })
  @Transform(toBool) @IsBoolean()
  OUTBOUND_ALLOW_PRIVATE_NETWORKS = false;

  @Setting({ meaning: 'Timeout of calls to user-supplied URLs' })
  @Transform(toInt) @IsInt() @Min(100) @Max(60000)
  OUTBOUND_TIMEOUT_MS = 5000;

  @Setting({
    meaning:
      'Comma-separated hosts, `host:port`, IP addresses or CIDRs exempt from the outbound private-address ' +
      'rule (e.g. an internal webhook receiver); the cloud metadata address stays refused unless listed ' +
      'exactly',
  })
  @Matches(/^[^\s]*$/, { message: 'OUTBOUND_ALLOWLIST must be a comma-separated list without spaces' })
  OUTBOUND_ALLOWLIST = '';

  @Setting({ meaning: 'Webhook deliveries one instance attempts at once (at most one per subscription)' })
  @Transform(toInt) @IsInt() @Min(1) @Max(256)
  WEBHOOK_DELIVERY_CONCURRENCY = 16;

  @Setting({
    meaning:
      'Webhook delivery attempts one organisation may have in flight at once, over all instances; ' +
      'organisations are served round-robin, so one organisation\'s slow receivers cannot hold up ' +
      'another\'s deliveries',
  })
  @Transform(toInt) @IsInt() @Min(1) @Max(256)
  WEBHOOK_DELIVERY_PER_ORGANISATION = 4;

  @Setting({ meaning: 'Longest wait for a webhook receiver\'s answer (longer is a failed attempt)' })
  @Transform(toInt) @IsInt() @Min(100) @Max(60000)
  WEBHOOK_TIMEOUT_MS = 10000;

  @Setting({ meaning: 'How often the delivery worker looks for due deliveries' })
  @Transform(toInt) @IsInt() @Min(50) @Max(60000)
  WEBHOOK_POLL_INTERVAL_MS = 1000;

  @Setting({
    meaning:
      'Audit events older than this are deleted (hourly, in batches, by instances with background jobs); ' +
      '`0` keeps them forever',
  })
  @Transform(toInt) @IsInt() @Min(0) @Max(36500)
  AUDIT_RETENTION_DAYS = 400;

  @Setting({ meaning: 'Activity feed events older than this are deleted; `0` keeps them forever' })
  @Transform(toInt) @IsInt() @Min(0) @Max(36500)
  ACTIVITY_RETENTION_DAYS = 90;

  @Setting({
    meaning:
      'Resolved monitoring alerts are deleted this many days after they ended; `0` keeps them forever',
  })
  @Transform(toInt) @IsInt() @Min(0) @Max(36500)
  RESOLVED_ALERT_RETENTION_DAYS = 30;

  @Setting({
    meaning:
      'Webhook events older than this are deleted with their deliveries once none of them is pending (a ' +
      'pending delivery is never removed); `0` keeps them forever',
  })
  @Transform(toInt) @IsInt() @Min(0) @Max(36500)
  WEBHOOK_EVENT_RETENTION_DAYS = 30;

  @Setting({ meaning: 'Rows the retention job deletes per statement, each batch in its own short transaction' })
  @Transform(toInt) @IsInt() @Min(1) @Max(100000)
  RETENTION_BATCH_SIZE = 5000;

  @Setting({
    meaning:
      'Worker threads of the executor that parses, checks and matches user input (alerting YAML, ' +
      'silence patterns) off the event loop; they start with the first such task and then stay (about 17 MB ' +
      'each). One organisation runs on at most half of them at once (at least one)',
  })
  @Transform(toInt) @IsInt() @Min(1) @Max(64)
  EXECUTOR_THREADS = 2;

  @Setting({
    meaning:
      'How long one such task may run, counted from when it starts (not while it waits); then that task ' +
      'alone is stopped and its request answers 422',
  })
  @Transform(toInt) @IsInt() @Min(100) @Max(600000)
  EXECUTOR_TASK_TIMEOUT_MS = 10000;

  @Setting({
    meaning:
      'Such tasks one organisation may have waiting; more are answered 429 with `Retry-After`. Changes ' +
      '(writes) waiting for such a task hold a database connection, so at most a quarter of ' +
      '`DATABASE_POOL_SIZE` of them per organisation wait at once (429 beyond)',
  })
  @Transform(toInt) @IsInt() @Min(1) @Max(10000)
  EXECUTOR_QUEUE_PER_ORGANISATION = 16;

  @Setting({
    meaning:
      'Heap of each executor worker thread, in MB; a task that needs more is stopped (its thread replaced) and answered 422',
  })
  @Transform(toInt) @IsInt() @Min(32) @Max(4096)
  EXECUTOR_WORKER_HEAP_MB = 128;

  @Setting({
    meaning:
      'How the executor\'s worker threads yield the CPU to the event loop, so that one organisation\'s expensive ' +
      'input does not slow other requests: `idle` (Linux SCHED_IDLE through `chrt`: they run only when the event ' +
      'loop does not want the CPU; the lowest niceness where that is unavailable; best on a dedicated pod, as it can ' +
      'starve on a host busy with other work), `low` (niceness 10) or `normal` (ADR 0106)',
  })
  @IsIn(EXECUTOR_THREAD_PRIORITIES)
  EXECUTOR_THREAD_PRIORITY: ExecutorThreadPriority = 'low';

  @Setting({
    meaning:
      'The run-time budget of one cluster policy evaluation (one expression on one cluster), in the cost units of the ' +
      'write-time estimate ([policies](policies.md)); past it the evaluation stops and the policy\'s `failurePolicy` applies',
  })
  @Transform(toInt) @IsInt() @Min(1000) @Max(1_000_000_000)
  POLICY_RUNTIME_COST_LIMIT = 1_000_000;

  @Setting({ meaning: 'The least severe level of log lines written (`silent` writes none)' })
  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  @Setting({ meaning: 'Agreements an organisation must accept' })
  @Matches(/^[a-z0-9-]+(,[a-z0-9-]+)*$/, { message: 'REQUIRED_AGREEMENTS must be comma-separated slugs' })
  REQUIRED_AGREEMENTS = 'terms-of-service,data-processing-agreement';

  @Setting({ meaning: 'Default cluster quota by organisation type' })
  @Matches(/^(TRIAL|INDIVIDUAL|BUSINESS|ENTERPRISE)=\d+(,(TRIAL|INDIVIDUAL|BUSINESS|ENTERPRISE)=\d+)*$/, {
    message: 'QUOTA_CLUSTERS_PER_CUSTOMER must look like TRIAL=1,INDIVIDUAL=3,BUSINESS=25,ENTERPRISE=100',
  })
  QUOTA_CLUSTERS_PER_CUSTOMER = 'TRIAL=1,INDIVIDUAL=3,BUSINESS=25,ENTERPRISE=100';

  @Setting({
    meaning:
      'Types a creator who is not a platform administrator may give a new organisation (others: 403)',
  })
  @Matches(/^((TRIAL|INDIVIDUAL|BUSINESS|ENTERPRISE)(,(TRIAL|INDIVIDUAL|BUSINESS|ENTERPRISE))*)?$/, {
    message: 'SELF_SERVICE_ORGANISATION_TYPES must be a comma-separated list of TRIAL, INDIVIDUAL, BUSINESS, ENTERPRISE',
  })
  SELF_SERVICE_ORGANISATION_TYPES = 'TRIAL,INDIVIDUAL,BUSINESS';

  @Setting({ meaning: 'Largest accepted request body (413 beyond)' })
  @Transform(toInt) @IsInt() @Min(1024) @Max(100 * 1024 * 1024)
  BODY_LIMIT_BYTES = 1024 * 1024;

  @Setting({
    meaning:
      'Requests per minute per user (all of the user\'s tokens and OIDC tokens together, so creating tokens ' +
      'does not add budget) on authenticated routes, and per client address for every other request ' +
      '(anonymous calls, unmatched routes, the API document, public routes), whatever `Authorization` ' +
      'header it carries; `0` disables',
  })
  @Transform(toInt) @IsInt() @Min(0)
  RATE_LIMIT_PER_MINUTE = 1200;

  @Setting({
    meaning:
      'Failed authentications per minute per client address; past it the address gets 429 before its ' +
      'credentials are looked up; `0` disables',
  })
  @Transform(toInt) @IsInt() @Min(0)
  AUTH_FAILURE_LIMIT_PER_MINUTE = 30;

  @Setting({
    meaning:
      'How long a replica answers a personal access token\'s authentication (user, token, organisation ' +
      'memberships) from memory without asking the database; changes reach every replica at once by NOTIFY, ' +
      'this bounds staleness only if a notification is lost. `0` disables the cache',
  })
  @Transform(toInt) @IsInt() @Min(0) @Max(600000)
  PRINCIPAL_CACHE_TTL_MS = 5000;

  @Setting({ meaning: 'Most tokens the principal cache of one replica holds (least recently used leave first)' })
  @Transform(toInt) @IsInt() @Min(1) @Max(10_000_000)
  PRINCIPAL_CACHE_MAX_ENTRIES = 10000;

  @Setting({ meaning: 'Bound on the principal cache\'s memory per replica (estimated from each entry\'s size)' })
  @Transform(toInt) @IsInt() @Min(65536) @Max(4 * 1024 * 1024 * 1024)
  PRINCIPAL_CACHE_MAX_BYTES = 32 * 1024 * 1024;

  @Setting({ meaning: 'With `production` the embedded database is refused (set `DATABASE_URL`)' })
  @IsString()
  NODE_ENV = 'development';

  @Setting({ meaning: 'Allows the embedded database with `NODE_ENV=production` (a throwaway demo container)' })
  @Transform(toBool) @IsBoolean()
  ALLOW_EMBEDDED_DATABASE = false;

  @Setting({
    meaning:
      'Bearer token for Prometheus to scrape `/metrics` (at least 16 characters); without it only platform ' +
      'administrators may read `/metrics`',
  })
  @Transform(emptyToUndefined) @IsOptional() @IsString() @Matches(/^\S{16,}$/, { message: 'METRICS_TOKEN must be at least 16 characters without spaces' })
  METRICS_TOKEN?: string;

  @Setting({
    meaning:
      'Bound on waiting for in-flight requests after SIGTERM/SIGINT (requests still running then are cut ' +
      'off); the process exits 1 if the whole shutdown takes more than `SHUTDOWN_DELAY_MS` + ' +
      '`SHUTDOWN_GRACE_MS` + 5 s',
  })
  @Transform(toInt) @IsInt() @Min(0) @Max(600000)
  SHUTDOWN_GRACE_MS = 10000;

  @Setting({
    meaning:
      'After SIGTERM, keep serving this long while readiness answers 503 (set it to the time your load ' +
      'balancer needs to stop sending, e.g. 5000 on Kubernetes)',
  })
  @Transform(toInt) @IsInt() @Min(0) @Max(600000)
  SHUTDOWN_DELAY_MS = 0;

  @Setting({
    meaning:
      'Create the demo organisation `acme` ([0086](adr/0086-demo-organisation.md)) on the first start of a ' +
      'database without organisations',
    defaultText: '`true` embedded, `false` with `DATABASE_URL`',
  })
  @Transform(toBool) @IsOptional() @IsBoolean()
  DEMO_DATA?: boolean;

  get demoData(): boolean {
    return this.DEMO_DATA ?? this.embeddedDatabase;
  }

  get requiredAgreements(): string[] {
    return this.REQUIRED_AGREEMENTS.split(',');
  }

  get selfServiceOrganisationTypes(): string[] {
    return this.SELF_SERVICE_ORGANISATION_TYPES.split(',').filter(Boolean);
  }

  get clusterQuotaDefaults(): Record<string, number> {
    const defaults: Record<string, number> = { TRIAL: 1, INDIVIDUAL: 3, BUSINESS: 25, ENTERPRISE: 100 };
    for (const pair of this.QUOTA_CLUSTERS_PER_CUSTOMER.split(',')) {
      const [k, v] = pair.split('=');
      defaults[k] = Number(v);
    }
    return defaults;
  }

  get embeddedDatabase(): boolean {
    return !this.DATABASE_URL;
  }
}

export class ConfigValidationError extends Error {}

/** Parses TRUST_PROXY; undefined when the value is not one of the accepted forms. */
export function trustProxySetting(value: string): false | number | string[] | undefined {
  const v = value.trim().toLowerCase();
  if (v === 'false' || v === 'no' || v === '0' || v === '') return false;
  if (/^\d+$/.test(v)) return Number(v) >= 1 && Number(v) <= 10 ? Number(v) : undefined;
  if (v === 'true' || v === 'yes') return undefined;
  const { ranges, invalid } = parseAddressList(value);
  return invalid || !ranges.length ? undefined : value.split(',').map((s) => s.trim()).filter(Boolean);
}

/** Variables whose values never appear in a message or a log line. */
const SECRET_VARIABLES = new Set([
  'DATABASE_URL',
  'CREDENTIALS_ENCRYPTION_KEY',
  'CREDENTIALS_ENCRYPTION_KEY_PREVIOUS',
  'BOOTSTRAP_ADMIN_TOKEN',
  'METRICS_TOKEN',
  'OIDC_CLIENT_SECRET',
]);

/**
 * Keys and tokens that pass their format but are trivially weak (src/config/weak-secrets.ts): all one byte, a repeated
 * block, counting, text instead of random bytes. Refused at start-up, naming the variable, never the value.
 */
function weakSecrets(config: AppConfig): string[] {
  const found: string[] = [];
  // The previous keys are not checked: a weak key is rotated away by moving it there (docs/operations.md).
  const key = config.CREDENTIALS_ENCRYPTION_KEY;
  const reason = key ? weakKeyReason(decodeKey(key)) : null;
  if (reason) found.push(`CREDENTIALS_ENCRYPTION_KEY (value not shown): trivially weak, ${reason}; generate one with: openssl rand -hex 32`);
  for (const name of ['BOOTSTRAP_ADMIN_TOKEN', 'METRICS_TOKEN'] as const) {
    const value = config[name];
    const reason = value ? weakTokenReason(value) : null;
    if (reason) found.push(`${name} (value not shown): trivially weak, ${reason}; generate one with: openssl rand -hex 24`);
  }
  return found;
}

/** A 32-byte key as configured: 64 hex characters, else base64. */
export function decodeKey(value: string): Buffer {
  return /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
}

/** Reads and checks the environment; a wrong value stops start-up with a message naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const known = Object.keys(new AppConfig());
  const raw: Record<string, unknown> = {};
  for (const key of known) if (env[key] !== undefined) raw[key] = env[key];
  const config = plainToInstance(AppConfig, raw, { exposeDefaultValues: true });
  const errors = validateSync(config, { whitelist: true });
  if (errors.length > 0) {
    const lines = errors.map(
      (e) =>
        `${e.property}${SECRET_VARIABLES.has(e.property) ? ' (value not shown)' : `=${JSON.stringify(env[e.property])}`}: ` +
        Object.values(e.constraints ?? {}).join('; '),
    );
    throw new ConfigValidationError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const weak = weakSecrets(config);
  if (weak.length) throw new ConfigValidationError(`Invalid configuration:\n  ${weak.join('\n  ')}`);
  // Settings that only make sense together.
  if (config.OIDC_ISSUER_URL && !config.OIDC_AUDIENCE) {
    throw new ConfigValidationError(
      'Invalid configuration:\n  OIDC_AUDIENCE is required when OIDC_ISSUER_URL is set: without an audience, a token the issuer made ' +
        'for any other application would be accepted. Set OIDC_AUDIENCE to the audience (client id) of this service, or unset OIDC_ISSUER_URL.',
    );
  }
  return config;
}
