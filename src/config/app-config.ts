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
import { parseAddressList } from '../common/network';
import { DEFAULT_RUNTIME_COST_LIMIT } from '../policies/policy-limits';

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
 * Every setting of the service, read from environment variables only.
 * Names are fixed by docs/decisions.md; the README lists each one.
 */
export class AppConfig {
  @Transform(toInt) @IsInt() @Min(0) @Max(65535)
  PORT = 8080;

  @IsString()
  HOST = '0.0.0.0';

  @IsString()
  DATA_DIR = './.data';

  @Transform(emptyToUndefined) @IsOptional()
  @Matches(/^postgres(ql)?:\/\/.+/, { message: 'DATABASE_URL must be a postgres:// or postgresql:// URL' })
  DATABASE_URL?: string;

  /** Connections of the request pool per instance (requests only: background loops have their own pool). */
  @Transform(toInt) @IsInt() @Min(1) @Max(200)
  DATABASE_POOL_SIZE = 10;

  /**
   * Connections of the background pool per instance: the loops (reconciler, scheduler, webhook delivery, retention,
   * dashboard health checks) run on it, so requests never queue behind them. Opened on use only.
   */
  @Transform(toInt) @IsInt() @Min(1) @Max(200)
  BACKGROUND_DATABASE_POOL_SIZE = 4;

  /** Bound on how long a request waits for a connection or a statement, so an outage answers 503 instead of hanging. */
  @Transform(toInt) @IsInt() @Min(100) @Max(600000)
  DATABASE_TIMEOUT_MS = 5000;

  @Transform(emptyToUndefined) @IsOptional() @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  OIDC_ISSUER_URL?: string;

  /** Required `aud` of OIDC tokens; required when OIDC_ISSUER_URL is set (checked in loadConfig). */
  @Transform(emptyToUndefined) @IsOptional() @IsString()
  OIDC_AUDIENCE?: string;

  /** Optional override of the JWKS address; by default read from the issuer's discovery document. */
  @Transform(emptyToUndefined) @IsOptional() @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  OIDC_JWKS_URL?: string;

  /**
   * Longest lifetime of an OIDC token accepted: `exp - iat` (or `exp - now` without `iat`); a token valid for longer
   * is refused (401), so a leaked long-lived token is not a credential for years.
   */
  @Transform(toInt) @IsInt() @Min(60) @Max(31_536_000)
  OIDC_MAX_TOKEN_LIFETIME_SECONDS = 86400;

  /** 32 bytes, base64 or hex. Without it the embedded database mode generates DATA_DIR/credentials.key. */
  @Transform(emptyToUndefined) @IsOptional()
  @Matches(/^([0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=?)$/, {
    message: 'CREDENTIALS_ENCRYPTION_KEY must be 32 bytes written as 64 hex characters or base64',
  })
  CREDENTIALS_ENCRYPTION_KEY?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString() @Matches(/^\S{20,200}$/, {
    message: 'BOOTSTRAP_ADMIN_TOKEN must be 20 to 200 characters without spaces',
  })
  BOOTSTRAP_ADMIN_TOKEN?: string;

  /** With an external database and no BOOTSTRAP_ADMIN_TOKEN, the generated first token is written here (0600). */
  @Transform(emptyToUndefined) @IsOptional() @IsString()
  BOOTSTRAP_ADMIN_TOKEN_FILE?: string;

  @IsString()
  BOOTSTRAP_ADMIN_USERNAME = 'admin';

  @IsString()
  BOOTSTRAP_ADMIN_EMAIL = 'admin@localhost';

  @Transform(toInt) @IsInt() @Min(1) @Max(365)
  PAT_DEFAULT_TTL_DAYS = 90;

  /**
   * Which proxies may set the client address through X-Forwarded-For: `false` (none, the default), a hop
   * count (`1`: the last address added by the one proxy in front), or a comma-separated list of the
   * proxies' own IPs/CIDRs. A blanket `true` is refused: it lets every caller choose its own address.
   */
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

  @Transform(toNumber) @Min(0) @Max(3600)
  PROVISIONING_STEP_SECONDS = 5;

  @Transform(toNumber) @Min(0) @Max(3600)
  RECONCILE_INTERVAL_SECONDS = 2;

  /** Clusters one replica's reconciler works on at the same time (driver calls overlap; one step per cluster at a time). */
  @Transform(toInt) @IsInt() @Min(1) @Max(256)
  RECONCILE_CONCURRENCY = 16;

  /**
   * How long a claimed cluster stays reserved for the replica that claimed it; a crashed replica's clusters are
   * taken over after this. A driver call is abandoned (and retried with backoff) after half of it.
   */
  @Transform(toInt) @IsInt() @Min(2) @Max(3600)
  RECONCILE_LEASE_SECONDS = 60;

  /** A settled (started or stopped) cluster is observed through the driver again when its last observation is this old. */
  @Transform(toInt) @IsInt() @Min(1) @Max(86400)
  OBSERVE_EVERY_SECONDS = 60;

  /** Artificial latency of every simulated driver call (one per batch observation), to study concurrency. */
  @Transform(toInt) @IsInt() @Min(0) @Max(60000)
  SIMULATED_DRIVER_LATENCY_MS = 0;

  @Transform(toNumber) @Min(0) @Max(86400)
  SCHEDULER_INTERVAL_SECONDS = 30;

  /** Rows a scheduler rule handles per batch, each batch one short transaction under the scheduler's lock. */
  @Transform(toInt) @IsInt() @Min(1) @Max(10000)
  SCHEDULER_BATCH_SIZE = 200;

  /** A started upgrade that has not reached its version by its window's end plus this many minutes fails. */
  @Transform(toInt) @IsInt() @Min(0) @Max(7 * 24 * 60)
  UPGRADE_TIMEOUT_GRACE_MINUTES = 120;

  /** Minutes a node join token (in a BYON pool's join config) stays usable. */
  @Transform(toInt) @IsInt() @Min(1) @Max(7 * 24 * 60)
  NODE_JOIN_TOKEN_TTL_MINUTES = 60;

  /** Registrations per minute one node join token may make (in memory per replica); 0 disables. */
  @Transform(toInt) @IsInt() @Min(0)
  NODE_REGISTRATION_LIMIT_PER_MINUTE = 60;

  /** The address customer machines reach this service at (the join command calls its node registration). */
  @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  PUBLIC_API_URL = 'http://localhost:8080';

  /** The provisioning driver port's implementation; `simulated` completes steps after PROVISIONING_STEP_SECONDS. */
  @IsIn(['simulated'])
  CLUSTER_DRIVER = 'simulated';

  /** Turns the reconciler and scheduler loops off (tests drive them by hand). */
  @Transform(toBool) @IsBoolean()
  BACKGROUND_JOBS_ENABLED = true;

  @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  OBSERVABILITY_PUSH_BASE_URL = 'https://observability.example.com';

  @Transform(toBool) @IsBoolean()
  OUTBOUND_ALLOW_PRIVATE_NETWORKS = false;

  @Transform(toInt) @IsInt() @Min(100) @Max(60000)
  OUTBOUND_TIMEOUT_MS = 5000;

  /**
   * Destinations exempt from the private-address rule, comma-separated: host names, `host:port`,
   * IP addresses or CIDRs (e.g. `hooks.internal:8443,10.20.0.0/16`). The cloud metadata address
   * stays refused unless listed as an exact address.
   */
  @Matches(/^[^\s]*$/, { message: 'OUTBOUND_ALLOWLIST must be a comma-separated list without spaces' })
  OUTBOUND_ALLOWLIST = '';

  /** Webhook deliveries one replica attempts at the same time (one per subscription at most). */
  @Transform(toInt) @IsInt() @Min(1) @Max(256)
  WEBHOOK_DELIVERY_CONCURRENCY = 16;

  /**
   * Webhook delivery attempts one organisation may have in flight at once, over all replicas (claims are counted
   * against the leases in the database), so one organisation's slow receivers cannot fill every slot.
   */
  @Transform(toInt) @IsInt() @Min(1) @Max(256)
  WEBHOOK_DELIVERY_PER_ORGANISATION = 4;

  /** Longest wait for a webhook receiver's answer; longer counts as a failed attempt. */
  @Transform(toInt) @IsInt() @Min(100) @Max(60000)
  WEBHOOK_TIMEOUT_MS = 10000;

  /** How often the delivery worker looks for due deliveries when nothing woke it. */
  @Transform(toInt) @IsInt() @Min(50) @Max(60000)
  WEBHOOK_POLL_INTERVAL_MS = 1000;

  /** Audit events older than this many days are deleted by the retention job; 0 keeps them forever. */
  @Transform(toInt) @IsInt() @Min(0) @Max(36500)
  AUDIT_RETENTION_DAYS = 400;

  /** Activity feed events older than this many days are deleted by the retention job; 0 keeps them forever. */
  @Transform(toInt) @IsInt() @Min(0) @Max(36500)
  ACTIVITY_RETENTION_DAYS = 90;

  /** Resolved monitoring alerts are deleted this many days after they ended; 0 keeps them forever. */
  @Transform(toInt) @IsInt() @Min(0) @Max(36500)
  RESOLVED_ALERT_RETENTION_DAYS = 30;

  /**
   * Webhook events (with their deliveries) older than this many days are deleted once none of their
   * deliveries is still pending; 0 keeps them forever.
   */
  @Transform(toInt) @IsInt() @Min(0) @Max(36500)
  WEBHOOK_EVENT_RETENTION_DAYS = 30;

  /** Rows the retention job deletes per statement (each batch is its own short transaction). */
  @Transform(toInt) @IsInt() @Min(1) @Max(100000)
  RETENTION_BATCH_SIZE = 5000;

  /** Worker threads of the executor that parses, validates and matches user input off the event loop (src/executor). */
  @Transform(toInt) @IsInt() @Min(1) @Max(64)
  EXECUTOR_THREADS = 2;

  /** How long one executor task may run, counted from its start; then it alone is stopped and answered 422. */
  @Transform(toInt) @IsInt() @Min(100) @Max(600000)
  EXECUTOR_TASK_TIMEOUT_MS = 10000;

  /** Executor tasks one organisation may have waiting; more are answered 429. */
  @Transform(toInt) @IsInt() @Min(1) @Max(10000)
  EXECUTOR_QUEUE_PER_ORGANISATION = 16;

  /** Heap of each executor worker thread, in MB; a task that needs more is stopped (its thread replaced) and answered 422. */
  @Transform(toInt) @IsInt() @Min(32) @Max(4096)
  EXECUTOR_WORKER_HEAP_MB = 128;

  /**
   * The run-time budget of one cluster policy evaluation (one expression on one cluster), in the cost units of the
   * write-time estimate (docs/policies.md); past it the evaluation stops and the policy's failurePolicy applies.
   */
  @Transform(toInt) @IsInt() @Min(1000) @Max(1_000_000_000)
  POLICY_RUNTIME_COST_LIMIT = DEFAULT_RUNTIME_COST_LIMIT;

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /** Agreements an organisation must accept at creation, comma-separated slugs. */
  @Matches(/^[a-z0-9-]+(,[a-z0-9-]+)*$/, { message: 'REQUIRED_AGREEMENTS must be comma-separated slugs' })
  REQUIRED_AGREEMENTS = 'terms-of-service,data-processing-agreement';

  /** Default clustersPerCustomer per organisation type, e.g. TRIAL=1,INDIVIDUAL=3,BUSINESS=25,ENTERPRISE=100. */
  @Matches(/^(TRIAL|INDIVIDUAL|BUSINESS|ENTERPRISE)=\d+(,(TRIAL|INDIVIDUAL|BUSINESS|ENTERPRISE)=\d+)*$/, {
    message: 'QUOTA_CLUSTERS_PER_CUSTOMER must look like TRIAL=1,INDIVIDUAL=3,BUSINESS=25,ENTERPRISE=100',
  })
  QUOTA_CLUSTERS_PER_CUSTOMER = 'TRIAL=1,INDIVIDUAL=3,BUSINESS=25,ENTERPRISE=100';

  /** Organisation types a creator who is not a platform administrator may choose (the type sets the quota). */
  @Matches(/^((TRIAL|INDIVIDUAL|BUSINESS|ENTERPRISE)(,(TRIAL|INDIVIDUAL|BUSINESS|ENTERPRISE))*)?$/, {
    message: 'SELF_SERVICE_ORGANISATION_TYPES must be a comma-separated list of TRIAL, INDIVIDUAL, BUSINESS, ENTERPRISE',
  })
  SELF_SERVICE_ORGANISATION_TYPES = 'TRIAL,INDIVIDUAL,BUSINESS';

  @Transform(toInt) @IsInt() @Min(1024) @Max(100 * 1024 * 1024)
  BODY_LIMIT_BYTES = 1024 * 1024;

  /** Requests per minute per user on authenticated routes, else per client address; 0 disables. */
  @Transform(toInt) @IsInt() @Min(0)
  RATE_LIMIT_PER_MINUTE = 1200;

  /** Failed authentications per minute per client address before it gets 429; 0 disables. */
  @Transform(toInt) @IsInt() @Min(0)
  AUTH_FAILURE_LIMIT_PER_MINUTE = 30;

  /**
   * How long this replica trusts what it read about a personal access token (user, token, memberships) without
   * asking the database again (src/auth/principal-cache.ts); changes reach every replica at once by NOTIFY, this
   * bounds staleness if a notification is lost. 0 disables the cache.
   */
  @Transform(toInt) @IsInt() @Min(0) @Max(600000)
  PRINCIPAL_CACHE_TTL_MS = 5000;

  /** Most tokens the principal cache holds (least recently used ones leave first). */
  @Transform(toInt) @IsInt() @Min(1) @Max(10_000_000)
  PRINCIPAL_CACHE_MAX_ENTRIES = 10000;

  /** Bound on the principal cache's memory, as estimated from each entry's serialized size. */
  @Transform(toInt) @IsInt() @Min(65536) @Max(4 * 1024 * 1024 * 1024)
  PRINCIPAL_CACHE_MAX_BYTES = 32 * 1024 * 1024;

  @IsString()
  NODE_ENV = 'development';

  /** With NODE_ENV=production the embedded database is refused unless this is true (a demo, not a deployment). */
  @Transform(toBool) @IsBoolean()
  ALLOW_EMBEDDED_DATABASE = false;

  /** Bearer token Prometheus presents to /metrics; without it only platform administrators may scrape. */
  @Transform(emptyToUndefined) @IsOptional() @IsString() @Matches(/^\S{16,}$/, { message: 'METRICS_TOKEN must be at least 16 characters without spaces' })
  METRICS_TOKEN?: string;

  @Transform(toInt) @IsInt() @Min(0) @Max(600000)
  SHUTDOWN_GRACE_MS = 10000;

  /** After SIGTERM, requests are still served this long while readiness answers 503 (endpoint removal). */
  @Transform(toInt) @IsInt() @Min(0) @Max(600000)
  SHUTDOWN_DELAY_MS = 0;

  /**
   * Create the demo organisation (src/demo) on a fresh install. Unset: on with the embedded database (local use),
   * off with DATABASE_URL (a deployment), unless set to true.
   */
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
  'BOOTSTRAP_ADMIN_TOKEN',
  'METRICS_TOKEN',
  'OIDC_CLIENT_SECRET',
]);

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
  // Settings that only make sense together.
  if (config.OIDC_ISSUER_URL && !config.OIDC_AUDIENCE) {
    throw new ConfigValidationError(
      'Invalid configuration:\n  OIDC_AUDIENCE is required when OIDC_ISSUER_URL is set: without an audience, a token the issuer made ' +
        'for any other application would be accepted. Set OIDC_AUDIENCE to the audience (client id) of this service, or unset OIDC_ISSUER_URL.',
    );
  }
  return config;
}
