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
} from 'class-validator';

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
 * Names are fixed by DESIGN.md section 5; the README lists each one.
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

  @Transform(toInt) @IsInt() @Min(1) @Max(200)
  DATABASE_POOL_SIZE = 10;

  /** Bound on how long a request waits for a connection or a statement, so an outage answers 503 instead of hanging. */
  @Transform(toInt) @IsInt() @Min(100) @Max(600000)
  DATABASE_TIMEOUT_MS = 5000;

  @Transform(emptyToUndefined) @IsOptional() @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  OIDC_ISSUER_URL?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString()
  OIDC_AUDIENCE?: string;

  /** Optional override of the JWKS address; by default read from the issuer's discovery document. */
  @Transform(emptyToUndefined) @IsOptional() @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  OIDC_JWKS_URL?: string;

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

  @IsString()
  BOOTSTRAP_ADMIN_USERNAME = 'admin';

  @IsString()
  BOOTSTRAP_ADMIN_EMAIL = 'admin@localhost';

  @Transform(toInt) @IsInt() @Min(1) @Max(365)
  PAT_DEFAULT_TTL_DAYS = 90;

  @Transform(toBool) @IsBoolean()
  TRUST_PROXY = false;

  @Transform(toNumber) @Min(0) @Max(3600)
  PROVISIONING_STEP_SECONDS = 5;

  @Transform(toNumber) @Min(0) @Max(3600)
  RECONCILE_INTERVAL_SECONDS = 2;

  @Transform(toNumber) @Min(0) @Max(86400)
  SCHEDULER_INTERVAL_SECONDS = 30;

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

  @Transform(toInt) @IsInt() @Min(1024) @Max(100 * 1024 * 1024)
  BODY_LIMIT_BYTES = 1024 * 1024;

  /** Requests per minute per credential (or per client address when unauthenticated); 0 disables. */
  @Transform(toInt) @IsInt() @Min(0)
  RATE_LIMIT_PER_MINUTE = 1200;

  @Transform(toInt) @IsInt() @Min(0) @Max(600000)
  SHUTDOWN_GRACE_MS = 10000;

  get requiredAgreements(): string[] {
    return this.REQUIRED_AGREEMENTS.split(',');
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

/** Reads and checks the environment; a wrong value stops start-up with a message naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const known = Object.keys(new AppConfig());
  const raw: Record<string, unknown> = {};
  for (const key of known) if (env[key] !== undefined) raw[key] = env[key];
  const config = plainToInstance(AppConfig, raw, { exposeDefaultValues: true });
  const errors = validateSync(config, { whitelist: true });
  if (errors.length > 0) {
    const lines = errors.map(
      (e) => `${e.property}=${JSON.stringify(env[e.property])}: ${Object.values(e.constraints ?? {}).join('; ')}`,
    );
    throw new ConfigValidationError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  return config;
}
